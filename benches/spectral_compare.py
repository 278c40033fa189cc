"""Our spectral convolution beside neuraloperator's SpectralConv, same GPU, same run.

Usage (on the GPU machine, neuraloperator importable):
    python3 benches/spectral_compare.py PATH/TO/spectral_bench [--quick] [--turbofno]
Runs the Rust benchmark (one JSON line per case: Fused, Unfused and Reference,
forward and forward+backward, medians over groups of back-to-back calls), then times
neuraloperator 2.0's SpectralConv on the same shapes with CUDA events (median of
30 after warm-up, as ../shared/anchors/spectral_torch.py does) and prints the
table. Speed-up = neuralop time / our time (> 1: we are faster). Our fwd+bwd
seeds the backward with g through a multiply (y * g).backward(), which
neuralop's y.backward(g) does not need. The last columns set our
forward CGEMM alone beside cuBLAS's batched complex GEMM of the same sizes.

floor = the fraction of the memory floor the fused forward reaches: the bytes it
must move (read x and the weight, write y) over the device-to-device copy
bandwidth measured at the start of the same run, divided by its time.
"""
import json
import subprocess
import sys

import torch

from torch_timing import median_ms

dev = "cuda"
torch.backends.cuda.matmul.allow_tf32 = False


def neuralop_times(case, **conv_args):
    """neuraloperator's SpectralConv (with `conv_args`, e.g. a factorization)
    on one case: forward and forward+backward ms."""
    from neuralop.layers.spectral_convolution import SpectralConv
    dim, B, C, N, modes = case["dim"], case["B"], case["C"], case["N"], case["modes"]
    conv = SpectralConv(C, C, n_modes=tuple(modes), **conv_args).to(dev)
    x = torch.randn(B, C, *([N] * dim), device=dev, requires_grad=True)
    g = torch.randn(B, C, *([N] * dim), device=dev)
    with torch.no_grad():
        fwd = median_ms(lambda: conv(x))

    def fb():
        conv(x).backward(g)
    fwd_bwd = median_ms(fb)
    del conv, x, g
    torch.cuda.empty_cache()
    return fwd, fwd_bwd


def cublas_cgemm_ms(case):
    """The forward's per-mode contraction as one cuBLAS batched complex GEMM
    (modes outermost, so no permutes are timed): a floor for our CGEMM."""
    dim, B, C, modes = case["dim"], case["B"], case["C"], case["modes"]
    k = 1
    for d, m in enumerate(modes):
        k *= m // 2 + 1 if d + 1 == dim else m
    a = torch.randn(k, B, C, dtype=torch.complex64, device=dev)
    w = torch.randn(k, C, C, dtype=torch.complex64, device=dev)
    ms = median_ms(lambda: torch.bmm(a, w))
    del a, w
    return ms


def copy_bandwidth():
    """Bytes per ms of a 1 GiB device-to-device copy (read + write counted)."""
    src = torch.empty(1 << 28, device=dev)
    dst = torch.empty_like(src)
    ms = median_ms(lambda: dst.copy_(src))
    del src, dst
    torch.cuda.empty_cache()
    return 2 * (1 << 30) / ms


def forward_floor_bytes(case):
    """Bytes a forward must move: x and y (f32) and the complex weight."""
    dim, B, C, N, modes = case["dim"], case["B"], case["C"], case["N"], case["modes"]
    k = 1
    for d, m in enumerate(modes):
        k *= m // 2 + 1 if d + 1 == dim else m
    return 4 * 2 * B * C * N ** dim + 8 * C * C * k


def fmt(v, width=9, digits=3):
    return f"{v:>{width}.{digits}f}" if v is not None else f"{'n/a':>{width}}"


def ratio(base, ours):
    return base / ours if base and ours else None


def main():
    # Stream: each case is printed as soon as both sides have run it.
    proc = subprocess.Popen([sys.argv[1], "cuda", *sys.argv[2:]], stdout=subprocess.PIPE, text=True)
    rows = (json.loads(l) for l in proc.stdout if l.startswith("{"))
    bandwidth = copy_bandwidth()
    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}"
          f"  copy bandwidth {bandwidth / 1e6:.0f} GB/s")
    print("times in ms; x = neuralop time / ours; f/u = unfused time / fused time")
    head = (f"{'case':<28}{'neuralop':>9}{'fused':>8}{'x':>6}{'unfused':>8}{'x':>6}{'f/u':>6}{'floor':>6}{'refer.':>8}{'x':>6}"
            f" | {'neuralop':>9}{'fused':>8}{'x':>6}{'unfused':>8}{'x':>6}{'f/u':>6}{'refer.':>8}{'x':>6}{'err f':>8}{'err u':>8}"
            f" | {'cuBLAS':>8}{'ours':>8}{'x':>6}")
    print(" " * 28 + f"{'forward':^61} | {'forward + backward':^71} | {'forward CGEMM alone':^22}")
    print(head)
    for r in rows:
        nf, nb = neuralop_times(r)
        r["neuralop_fwd_ms"], r["neuralop_fwd_bwd_ms"] = nf, nb
        cb, cg = cublas_cgemm_ms(r), r["cgemm_fwd_ms"]
        r["cublas_cgemm_ms"] = cb
        name = f"{r['dim']}D B{r['B']} C{r['C']} N{r['N']} m{tuple(r['modes'])}"
        uf, ub, rf, rb = r["unfused_fwd_ms"], r["unfused_fwd_bwd_ms"], r["reference_fwd_ms"], r["reference_fwd_bwd_ms"]
        ff, fb = r["fused_fwd_ms"], r["fused_fwd_bwd_ms"]
        floor_ms = forward_floor_bytes(r) / bandwidth
        r["copy_bandwidth_gbs"], r["forward_floor_ms"] = bandwidth / 1e6, floor_ms
        floor = ratio(floor_ms, ff)
        errs = "".join(f"{e:>8.1e}" if e is not None else "     n/a"
                       for e in (r.get("fused_vs_unfused"), r.get("unfused_vs_reference")))
        print(f"{name:<28}{fmt(nf)}{fmt(ff, 8)}{fmt(ratio(nf, ff), 6, 2)}{fmt(uf, 8)}{fmt(ratio(nf, uf), 6, 2)}"
              f"{fmt(ratio(uf, ff), 6, 2)}{fmt(floor, 6, 2)}{fmt(rf, 8)}{fmt(ratio(nf, rf), 6, 2)}"
              f" | {fmt(nb)}{fmt(fb, 8)}{fmt(ratio(nb, fb), 6, 2)}{fmt(ub, 8)}{fmt(ratio(nb, ub), 6, 2)}"
              f"{fmt(ratio(ub, fb), 6, 2)}{fmt(rb, 8)}{fmt(ratio(nb, rb), 6, 2)}{errs}"
              f" | {fmt(cb, 8)}{fmt(cg, 8)}{fmt(ratio(cb, cg), 6, 2)}", flush=True)
        print("JSON " + json.dumps(r), file=sys.stderr)
    if proc.wait() != 0:
        sys.exit(proc.returncode)


if __name__ == "__main__":
    main()
