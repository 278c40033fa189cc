"""Our factorized spectral convolution (TFNO's Tucker weights, the factors'
chain) beside our dense one and neuraloperator's factorized SpectralConv, same
GPU, same run.

Usage (on the GPU machine, neuraloperator importable):
    python3 benches/factorized_compare.py PATH/TO/factorized_bench [--quick]
Runs the Rust benchmark (one JSON line per spectral anchor: our dense and
Tucker rank 0.1 and 0.42 convolutions, forward and forward+backward), then
times neuraloperator 2.0's SpectralConv(factorization="tucker", rank=r) (its
default implementation="factorized", which contracts through the factors) and
its dense one on the same shapes with CUDA events, and prints the table.
Columns: ours Tucker / ours dense time (the target: at most 1.2), and
neuraloperator's Tucker time / ours (above 1: we are faster; the target: 5).
"""
import json
import subprocess
import sys

import torch

from spectral_compare import neuralop_times


def main():
    bench, rest = sys.argv[1], sys.argv[2:]
    out = subprocess.run([bench, "cuda", *rest], check=True, capture_output=True, text=True).stdout
    cases = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    print("| case | dense fwd+bwd ms (ours / neuralop) | rank | Tucker ranks | ours Tucker fwd / fwd+bwd ms "
          "| ours Tucker / ours dense (fwd / fwd+bwd) | neuralop Tucker fwd / fwd+bwd ms | neuralop / ours (fwd / fwd+bwd) "
          "| ours vs reference (y / gradients) |")
    print("| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for c in cases:
        _, dense_theirs = neuralop_times(c)
        name = f"{c['dim']}D B{c['B']} C{c['C']} N{c['N']} m{'x'.join(map(str, c['modes']))}"
        for t in c["tucker"]:
            fwd, fwd_bwd = neuralop_times(c, factorization="tucker", rank=t["rank"])
            t.update(neuralop_fwd_ms=fwd, neuralop_fwd_bwd_ms=fwd_bwd)
            print(f"| {name} | {c['dense_fwd_bwd_ms']:.3f} / {dense_theirs:.3f} | {t['rank']} | {t['ranks']} "
                  f"| {t['fwd_ms']:.3f} / {t['fwd_bwd_ms']:.3f} "
                  f"| {t['fwd_ms'] / c['dense_fwd_ms']:.2f} / {t['fwd_bwd_ms'] / c['dense_fwd_bwd_ms']:.2f} "
                  f"| {fwd:.3f} / {fwd_bwd:.3f} | {fwd / t['fwd_ms']:.1f} / {fwd_bwd / t['fwd_bwd_ms']:.1f} "
                  f"| {t['vs_reference']:.1e} / {t['grads_vs_reference']:.1e} |", flush=True)
        c["neuralop_dense_fwd_bwd_ms"] = dense_theirs
    for c in cases:
        print(json.dumps(c))


if __name__ == "__main__":
    main()
