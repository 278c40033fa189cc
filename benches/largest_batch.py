#!/usr/bin/env python3
"""The largest batch each trainer trains on one GPU: `fno train` (each
`--memory` mode listed) beside neuraloperator 2.0, on FNOs too big for small
batches — 3-D at 64³ and 128³, 2-D at 512² and 1024².

A trial trains one epoch of two batches (f32, AdamW, relative L2 loss, 4
layers, projection ratio 2) on synthetic Poisson data (train_compare.py's) and
succeeds when the process exits cleanly; a failure whose messages do not
speak of memory is noted, and the search bisects past it like the others.
Batches double from 1 until a trial fails, then the largest good batch is
found by bisection (`--start` sets the first batch). Each trial runs in a
process of its own.

    python3 largest_batch.py --fno ./fno --out OUT [--cases cube64,square1024]
                             [--memory balanced,fast] [--limit 512] [--budget-s 500] [--start 1]
                             [--without-neuralop]

Writes OUT/largest_batch.jsonl and OUT/largest_batch.md.
"""

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_compare import poisson_data, toml_for  # noqa: E402

CASES = {
    "cube64": dict(poisson=[64, 64, 64], hidden=32, modes=[16, 16, 16]),
    "cube128": dict(poisson=[128, 128, 128], hidden=32, modes=[16, 16, 16]),
    "square512": dict(poisson=[512, 512], hidden=64, modes=[32, 32]),
    "square1024": dict(poisson=[1024, 1024], hidden=32, modes=[32, 32]),
}

MEMORY_WORDS = ("out of memory", "outofmemory", "buffertoobig", "cuda_error_out_of_memory", "memory")

NEUROP = r"""
import sys, torch
from neuralop.models import FNO
from neuralop.losses import LpLoss
from neuralop.training import AdamW
grid, hidden, modes, batch = {grid}, {hidden}, {modes}, {batch}
model = FNO(n_modes=tuple(modes), in_channels=1, out_channels=1, hidden_channels=hidden,
            projection_channel_ratio=2, n_layers=4).cuda()
opt = AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
loss_fn = LpLoss(d=len(grid), p=2)
for _ in range(2):
    x = torch.randn(batch, 1, *grid, device="cuda")
    opt.zero_grad(set_to_none=True)
    loss_fn(model(x), x).backward()
    opt.step()
torch.cuda.synchronize()
print(torch.cuda.max_memory_allocated() / 2 ** 20)
"""


def trial_neuralop(case, batch, work):
    code = NEUROP.format(grid=case["poisson"], hidden=case["hidden"], modes=case["modes"], batch=batch)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return proc.returncode == 0, proc.stderr


def trial_ours(fno, name, case, batch, mode, work):
    data = os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    files = {}
    for part, n in (("train", 2 * batch), ("test", 1)):
        files[part] = os.path.join(data, f"{name}_{part}_{n}.npz")
        if not os.path.exists(files[part]):
            poisson_data(files[part], case["poisson"], n, 0)
    run = dict(case, train=2 * batch, test=1, batch=batch)
    config = os.path.join(work, f"{name}_{mode}_{batch}.toml")
    run_dir = os.path.join(work, "runs", f"{name}_{mode}_{batch}")
    with open(config, "w") as f:
        f.write(toml_for(name, run, files, 1, run_dir, 0, "f32"))
    proc = subprocess.run([fno, "train", "--config", config, "--backend", "cuda", "--impl", "unfused",
                           "--memory", mode, "--overwrite"], capture_output=True, text=True)
    return proc.returncode == 0, proc.stderr


def largest(trial, limit, deadline, start=1):
    """The largest batch ≤ limit that `trial` passes (0 if none), doubling
    from `start`, and the first failure that was not memory (the search
    bisects past it too)."""
    good, bad, batch, note = 0, None, start, None
    while bad is None or bad - good > 1:
        if time.time() > deadline:
            return good, "out of time" + (f"; {note}" if note else "")
        ok, why = trial(batch)
        if ok:
            good = batch
            if batch >= limit:
                return good, f"limit {limit}"
        else:
            if note is None and not any(w in why.lower() for w in MEMORY_WORDS):
                last = [line for line in why.splitlines() if line.strip()][-3:]
                note = f"failed at {batch}: {' / '.join(last)[:300]}"
            bad = batch
        batch = batch * 2 if bad is None else (good + bad) // 2
        batch = min(batch, limit)
    return good, note


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fno", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--cases", default="cube64,square1024")
    ap.add_argument("--memory", default="balanced,fast", help="our --memory modes to sweep")
    ap.add_argument("--limit", type=int, default=512, help="the largest batch tried")
    ap.add_argument("--budget-s", type=float, default=500, help="stop starting trials after this long")
    ap.add_argument("--start", type=int, default=1, help="the first batch tried (a known floor saves trials)")
    ap.add_argument("--without-neuralop", action="store_true", help="search ours alone")
    args = ap.parse_args()
    work = os.path.abspath(args.out)
    os.makedirs(work, exist_ok=True)
    fno = os.path.abspath(args.fno)
    deadline = time.time() + args.budget_s
    rows = []
    for name in args.cases.split(","):
        case = CASES[name]
        trainers = [] if args.without_neuralop else [("neuraloperator", lambda b: trial_neuralop(case, b, work))]
        trainers += [(f"ours ({m})", lambda b, m=m: trial_ours(fno, name, case, b, m, work))
                     for m in args.memory.split(",")]
        for label, trial in trainers:
            batch, note = largest(trial, args.limit, deadline, min(args.start, args.limit))
            row = dict(case=name, grid=case["poisson"], hidden=case["hidden"], modes=case["modes"],
                       trainer=label, largest_batch=batch, note=note)
            print(json.dumps(row), flush=True)
            rows.append(row)
            with open(os.path.join(work, "largest_batch.jsonl"), "a") as f:
                f.write(json.dumps(row) + "\n")
    lines = ["| case | grid | hidden | modes | trainer | largest batch | note |",
             "| --- | --- | ---: | --- | --- | ---: | --- |"]
    lines += [f"| {r['case']} | {'×'.join(map(str, r['grid']))} | {r['hidden']} | {r['modes']} | {r['trainer']} | "
              f"{r['largest_batch']} | {r['note'] or ''} |" for r in rows]
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(work, "largest_batch.md"), "w") as f:
        f.write(text + "\n")


if __name__ == "__main__":
    sys.exit(main())
