"""Our FFT beside cuFFT (through torch.fft), same cases, same run, one table.

Usage (on the GPU machine): python3 benches/fft_compare.py PATH/TO/fft_bench [--quick]
Runs the Rust benchmark (JSON lines), times cuFFT on each case with CUDA events
(median of 30 after warm-up), measures device-to-device copy bandwidth, and
prints: case, n, batch, our GB/s, cuFFT GB/s, ratio (ours/cuFFT, >1 is faster).
GB/s counts the bytes a transform must move (input once, output once); for the
truncated R2C the baseline is rfft followed by the slice copy PyTorch needs.
"""
import json
import subprocess
import sys

import torch

from torch_timing import median_ms

dev = "cuda"


def copy_gbps():
    x = torch.empty(1 << 28, dtype=torch.float32, device=dev)
    y = torch.empty_like(x)
    return 2 * x.numel() * 4 / median_ms(lambda: y.copy_(x), n=20) / 1e6


def baseline(case, half=False):
    """cuFFT's GB/s on `case` (bytes counted in f32), in float16 where `half`."""
    n, batch, m = case["n"], case["batch"], case["modes"]
    cdt, rdt = (torch.complex32, torch.float16) if half else (torch.complex64, torch.float32)
    name = case["case"]
    if name == "fft_c2c_1d":
        x = torch.randn(batch, n, dtype=torch.complex64, device=dev).to(cdt)
        f, byt = (lambda: torch.fft.fft(x)), 2 * x.numel() * 8
    elif name == "rfft_1d":
        x = torch.randn(batch, n, dtype=rdt, device=dev)
        f, byt = (lambda: torch.fft.rfft(x)), x.numel() * 4 + batch * (n // 2 + 1) * 8
    elif name.startswith("fft_c2c_1d_modes"):
        x = torch.randn(batch, n, dtype=torch.complex64, device=dev).to(cdt)
        lo, hi = m - m // 2, m // 2

        def f():
            y = torch.fft.fft(x)
            return torch.cat([y[:, :lo], y[:, n - hi:]], dim=1)
        byt = x.numel() * 8 + batch * m * 8
    elif name == "fft_c2c_col_modes":
        x = torch.randn(batch, n, 32, dtype=torch.complex64, device=dev).to(cdt)
        keep = torch.tensor(list(range(m - m // 2)) + list(range(n - m // 2, n)), device=dev)
        f, byt = (lambda: torch.fft.fft(x, dim=1).index_select(1, keep)), batch * (n + m) * 32 * 8
    elif name.startswith("rfft_1d_modes"):
        x = torch.randn(batch, n, dtype=rdt, device=dev)
        f, byt = (lambda: torch.fft.rfft(x)[:, :m].contiguous()), x.numel() * 4 + batch * m * 8
    elif name == "irfft_1d":
        x = torch.randn(batch, n // 2 + 1, dtype=torch.complex64, device=dev).to(cdt)
        f, byt = (lambda: torch.fft.irfft(x, n=n)), x.numel() * 8 + batch * n * 4
    elif name == "rfft2":
        x = torch.randn(batch, n, n, dtype=rdt, device=dev)
        f, byt = (lambda: torch.fft.rfft2(x)), x.numel() * 4 + batch * n * (n // 2 + 1) * 8
    elif name == "irfft2":
        x = torch.randn(batch, n, n // 2 + 1, dtype=torch.complex64, device=dev).to(cdt)
        f, byt = (lambda: torch.fft.irfft2(x, s=(n, n))), x.numel() * 8 + batch * n * n * 4
    elif name in ("fno_rfft2", "fno_irfft2"):
        # neuraloperator's spectral convolution: rfft2, keep the centred m rows
        # and the first m/2 + 1 bins (a copy); the inverse zero-fills the
        # full spectrum, places the modes and runs irfft2.
        bins = m // 2 + 1
        rows = list(range(m - m // 2)) + list(range(n - m // 2, n))
        keep = torch.tensor(rows, device=dev)
        byt = batch * (n * n * 4 + m * bins * 8)
        if name == "fno_rfft2":
            x = torch.randn(batch, n, n, dtype=rdt, device=dev)
            f = lambda: torch.fft.rfft2(x)[:, :, :bins].index_select(1, keep)
        else:
            x = torch.randn(batch, m, bins, dtype=torch.complex64, device=dev).to(cdt)

            def f():
                full = torch.zeros(batch, n, n // 2 + 1, dtype=torch.complex64, device=dev).to(cdt)
                full[:, keep, :bins] = x
                return torch.fft.irfft2(full, s=(n, n))
    else:
        raise ValueError(name)
    ms = median_ms(f)
    del x
    torch.cuda.empty_cache()
    return byt / ms / 1e6


def main():
    ours_bin = sys.argv[1]
    extra = sys.argv[2:]
    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}")
    bw = copy_gbps()
    print(f"device-to-device copy: {bw:.0f} GB/s (read + write)")
    print(f"{'case':<31}{'n':>6}{'modes':>6}{'direct':>7}{'batch':>9}{'launch':>7}{'ours GB/s':>11}{'cuFFT GB/s':>12}{'ratio':>7}{'ours/copy':>10}")
    # Ours first, to completion (the baselines must not share the GPU with it);
    # its raw lines are echoed to stderr as they come, so a run cut short
    # still leaves what it measured.
    ours = subprocess.Popen([ours_bin, "cuda", *extra], stdout=subprocess.PIPE, text=True)
    rows = []
    for line in ours.stdout:
        if line.startswith("{"):
            print("OURS " + line.strip(), file=sys.stderr, flush=True)
            rows.append(json.loads(line))
    if ours.wait() != 0:
        sys.exit(ours.returncode)
    for r in rows:
        if r["case"] == "env":
            continue
        base = baseline(r)
        r["cufft_gbps"] = base
        print(f"{r['case']:<31}{r['n']:>6}{r['modes']:>6}{r.get('direct', ''):>7}{r['batch']:>9}{r['launches']:>7}"
              f"{r['gbps']:>11.0f}{base:>12.0f}{r['gbps'] / base:>7.2f}{r['gbps'] / bw:>10.2f}", flush=True)
        print("JSON " + json.dumps(r), file=sys.stderr)


if __name__ == "__main__":
    main()
