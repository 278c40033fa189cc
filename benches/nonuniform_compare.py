#!/usr/bin/env python3
"""The non-uniform spectral convolution (ours, NUFFTs) beside the direct
O(M·K) Fourier sums in torch on the same GPU, forward and forward + backward.

Usage (on the GPU machine): python3 benches/nonuniform_compare.py PATH/TO/nonuniform_bench [its args]

The direct version computes exactly what ours approximates to ε:
F = (1/M)·x·E (E[j, k] = e^{−ik·x_j}, complex64, built once outside the
timing), G[b, o, k] = Σ_i F[b, i, k]·W[i, o, k], y = Re(G·Eᴴ); cuBLAS does the
products (TF32 off: float32 products, like ours). Times: median of 5 groups.
"""
import json
import subprocess
import sys
import time

import torch


def median_ms(f, reps=5):
    for _ in range(2):
        f()
    torch.cuda.synchronize()
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(reps):
            f()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3 / reps)
    return sorted(times)[2]


def main():
    binary, args = sys.argv[1], sys.argv[2:]
    out = subprocess.run([binary, *args], check=True, capture_output=True, text=True).stdout
    ours = json.loads([l for l in out.splitlines() if l.startswith("{")][-1])
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = "cuda"
    m, (n1, n2), b, c = ours["points"], ours["modes"], ours["batch"], ours["channels"]
    g = torch.Generator(device=dev).manual_seed(0)
    pts = (torch.rand(m, 2, device=dev, generator=g) * 2 - 1) * torch.pi
    k1 = torch.arange(-(n1 // 2), n1 - n1 // 2, device=dev, dtype=torch.float32)
    k2 = torch.arange(-(n2 // 2), n2 - n2 // 2, device=dev, dtype=torch.float32)
    kk = torch.stack(torch.meshgrid(k1, k2, indexing="ij"), -1).reshape(-1, 2)
    e = torch.exp(-1j * (pts @ kk.T))  # [M, K] complex64
    x = torch.randn(b, c, m, device=dev, requires_grad=True)
    w = (0.1 * torch.randn(c, c, n1 * n2, dtype=torch.complex64, device=dev)).requires_grad_()

    def forward():
        f = (x.to(torch.complex64).reshape(b * c, m) @ e).reshape(b, c, -1) / m
        gm = torch.einsum("bik,iok->bok", f, w)
        return (gm.reshape(b * c, -1) @ e.conj().T).real.reshape(b, c, m)

    def fwd():
        with torch.no_grad():
            forward()

    def fwd_bwd():
        forward().sum().backward()
        x.grad = None
        w.grad = None

    direct_fwd, direct_fwd_bwd = median_ms(fwd), median_ms(fwd_bwd)
    print(f"GPU: {torch.cuda.get_device_name()}  torch {torch.__version__}")
    print(f"case: {m} points (2D), {n1}×{n2} modes, batch {b}, {c}→{c} channels, ε {ours['eps']:.0e}")
    print("| | ours ms | direct sums (torch, cuBLAS) ms | direct / ours |")
    print("| --- | ---: | ---: | ---: |")
    print(f"| forward | {ours['fwd_ms']:.3f} | {direct_fwd:.3f} | {direct_fwd / ours['fwd_ms']:.1f}× |")
    print(f"| forward + backward | {ours['fwd_bwd_ms']:.3f} | {direct_fwd_bwd:.3f} | "
          f"{direct_fwd_bwd / ours['fwd_bwd_ms']:.1f}× |")
    print(f"(ours: first call, plans included: {ours['first_call_ms']:.0f} ms; small case vs the f64 host "
          f"path: y {ours['check_y_err']:.1e}, dL/dx {ours['check_dx_err']:.1e})")


if __name__ == "__main__":
    main()
