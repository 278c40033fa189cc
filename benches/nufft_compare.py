#!/usr/bin/env python3
"""Non-uniform FFT throughput: ours (nufft_bench) beside FINUFFT on the CPU,
same cases, same run.

Usage (on the GPU machine, FINUFFT's wheel installed, see
../shared/anchors/README.md for carrying wheels):
    python3 benches/nufft_compare.py PATH/TO/nufft_bench [--points M] [--batch B] [--modes N,N]

For every case of nufft_bench (2D 500² and 3D 64³ modes, types 1 and 2,
ε = 1e-2 and 1e-5, M uniform points) FINUFFT runs the same transform in
single precision on all the machine's cores with a plan made once
(`finufft.Plan`, `setpts`, then `execute` timed, median of 5), as our times
exclude the plan too. cuFINUFFT does not run here (its wheel needs the CUDA 12
runtime and cuFFT 11); its published figures are printed beside, labelled so.
"""
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

# cuFINUFFT's published throughput (FINUFFT documentation, RTX A6000, single
# precision, 2D type 1, 1M points, 500² modes, ε = 1e-5; execution only).
PUBLISHED = {(1, 2, 1e-5): "5.8e8 (cuFINUFFT, A6000, published)"}


def finufft_ms(row, points):
    import finufft
    d, m, modes, eps = row["dims"], points, tuple(row["modes"]), row["eps"]
    rng = np.random.default_rng(0)
    x = [rng.uniform(-np.pi, np.pi, m).astype(np.float32) for _ in range(d)]
    kind = row["type"]
    isign = 1 if kind == 1 else -1
    batch = row.get("batch", 1)
    plan = finufft.Plan(kind, modes, n_trans=batch, eps=eps, isign=isign, dtype="complex64",
                        nthreads=os.cpu_count())
    plan.setpts(*x)
    shape = (m,) if kind == 1 else modes
    if batch > 1:
        shape = (batch, *shape)
    data = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)
    plan.execute(data)
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        plan.execute(data)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main():
    binary, args = sys.argv[1], sys.argv[2:]
    points = int(args[args.index("--points") + 1]) if "--points" in args else 1_000_000
    out = subprocess.run([binary, "cuda", *args], check=True, capture_output=True, text=True).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                         text=True).stdout.strip()
    batch = int(args[args.index("--batch") + 1]) if "--batch" in args else 1
    print(f"GPU: {gpu}; CPU threads for FINUFFT: {os.cpu_count()}; {points} points, {batch} vectors")
    print("| type | modes | ε | width | ours plan ms | ours ms | ours points/s | rel err | "
          "FINUFFT CPU ms | ours vs FINUFFT | cuFINUFFT |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in rows:
        theirs = finufft_ms(r, points)
        published = PUBLISHED.get((r["type"], r["dims"], r["eps"]), "–")
        modes = "×".join(str(n) for n in r["modes"])
        print(f"| {r['type']} | {modes} | {r['eps']:.0e} | {r['width']} | {r['plan_ms']:.1f} | {r['ms']:.3f} | "
              f"{r['points_per_s']:.2e} | {r['rel_err']:.1e} | {theirs:.2f} | {theirs / r['ms']:.1f}× | {published} |",
              flush=True)
        print("ROW " + json.dumps({**r, "finufft_ms": theirs}), file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
