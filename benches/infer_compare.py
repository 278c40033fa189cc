#!/usr/bin/env python3
"""Inference throughput: `fno infer` beside neuraloperator 2.0's forward on the
same checkpoint, inputs, batch size and GPU, f32 with TF32 off, in one device
command.

For each case a neuraloperator FNO (4 layers, projection ratio 2) is built
from a fixed seed and exported as our `fno infer` reads it (state_dict as
safetensors and its config.json); both run N standard-normal samples in
batches of B from and to host memory. Reported: samples/s after the first
batch (ours from `fno infer`'s last line: kernel compilation and file reading
apart; torch's timed the same way, each batch copied in and its output copied
out), for each of ours listed in --ours, and the relative L2 distance of our
output from neuraloperator's forward on the CPU (neuraloperator's CUDA irfft
of a learned spectrum depends on cuFFT's plan, so the CPU is the reference).

    python3 infer_compare.py --fno ./fno --out OUT [--cases darcy64,...] [--ours auto,auto-on]

An entry of --ours is an `--impl` path, maybe with `-` and a `--burn-fusion`
value (`-cube` for off).
Writes OUT/infer_compare.jsonl and OUT/infer_compare.md.
"""
import argparse
import copy
import json
import os
import re
import subprocess
import sys
import time

import numpy as np
import torch
from neuralop.models import FNO

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../models/tests/fixtures"))
from gen_fno_fixtures import save_safetensors  # noqa: E402
from train_compare import backend_flags  # noqa: E402

# name: grid, modes, hidden channels, samples, batch.
CASES = {
    "darcy64": ([64, 64], [16, 16], 64, 4096, 64),
    "darcy128": ([128, 128], [24, 24], 64, 2048, 64),
    "darcy256": ([256, 256], [32, 32], 64, 512, 32),
    "cube32": ([32, 32, 32], [12, 12, 12], 32, 512, 32),
}
# Samples of the CPU reference (its forward is slow at 256²).
CHECKED = 8


def export(name, grid, modes, hidden, samples, work):
    """The case's checkpoint, config and inputs in `work`; the model and x."""
    cfg = dict(n_modes=modes, in_channels=1, out_channels=1, hidden_channels=hidden, n_layers=4)
    torch.manual_seed(0)
    model = FNO(**cfg).eval()
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)
    save_safetensors(os.path.join(d, "model.safetensors"), model.state_dict(),
                     {"config": json.dumps(cfg), "generator": "infer_compare.py"}, False)
    x = torch.randn(samples, 1, *grid)
    np.save(os.path.join(d, "x.npy"), x.numpy())
    return d, model, x


def torch_rate(model, x, batch):
    """neuraloperator's samples/s after its first batch, host to host."""
    model = model.cuda()
    batches = torch.split(x, batch)
    with torch.no_grad():
        model(batches[0].cuda()).cpu()
        torch.cuda.synchronize()
        start = time.perf_counter()
        for b in batches[1:]:
            model(b.cuda()).cpu()
        torch.cuda.synchronize()
    return (x.shape[0] - batches[0].shape[0]) / (time.perf_counter() - start)


def ours(fno, d, batch, variant):
    """`fno infer`'s samples/s after the first batch, and its output."""
    out = os.path.join(d, f"y-{variant}.npy")
    cmd = [fno, "infer", "--checkpoint", os.path.join(d, "model.safetensors"), "--config",
           os.path.join(d, "config.json"), "--input", os.path.join(d, "x.npy"), "--output", out,
           "--batch-size", str(batch), "--backend", "cuda", *backend_flags(variant)]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"fno infer failed: {run.stderr.strip().splitlines()[-1:]}")
    rate = re.search(r"([0-9.]+) samples/s after the first batch", run.stderr)
    return float(rate.group(1)), np.load(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fno", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--ours", default="auto,auto-on")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    work, fno = os.path.abspath(args.out), os.path.abspath(args.fno)
    variants = args.ours.split(",")
    gpu = torch.cuda.get_device_name()
    lines = [f"{gpu}, torch {torch.__version__}, f32 (TF32 off)", "",
             "| case | grid | samples | batch | neuraloperator samples/s | "
             + " | ".join(f"ours {v} samples/s | ours/theirs" for v in variants) + " | rel. L2 vs CPU |",
             "| --- | --- | ---: | ---: | ---: |" + " ---: | ---: |" * len(variants) + " ---: |"]
    for name in args.cases.split(","):
        grid, modes, hidden, samples, batch = CASES[name]
        d, model, x = export(name, grid, modes, hidden, samples, work)
        # A copy for the CPU: the grid embedding keeps its grid on the device it first ran on.
        with torch.no_grad():
            want = copy.deepcopy(model)(x[:CHECKED]).numpy()
        row = dict(case=name, gpu=gpu, grid=grid, samples=samples, batch=batch, neuralop=torch_rate(model, x, batch))
        errors = []
        for v in variants:
            try:
                rate, y = ours(fno, d, batch, v)
                e = float(np.linalg.norm(y[:CHECKED] - want) / np.linalg.norm(want))
                row[v] = dict(rate=rate, rel_l2=e)
                errors.append(e)
            except Exception as e:  # one failing run must not hide the others
                row[v] = dict(error=str(e))
        print(json.dumps(row), flush=True)
        with open(os.path.join(work, "infer_compare.jsonl"), "a") as f:
            f.write(json.dumps(row) + "\n")
        cells = " | ".join(f"{row[v]['rate']:.0f} | {row[v]['rate'] / row['neuralop']:.2f}" if "rate" in row[v]
                           else "error | –" for v in variants)
        worst = f"{max(errors):.1e}" if errors else "–"
        lines.append(f"| {name} | {'x'.join(map(str, grid))} | {samples} | {batch} | {row['neuralop']:.0f} | "
                     f"{cells} | {worst} |")
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(work, "infer_compare.md"), "w") as f:
        f.write(text + "\n")


if __name__ == "__main__":
    sys.exit(main())
