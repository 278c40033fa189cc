#!/usr/bin/env python3
"""The CPU beside PyTorch: `fno train` and `fno infer` on the cpu backend
beside neuraloperator 2.0 on torch's CPU build, on the same machine, data and
settings, both on the same number of threads (every core unless `--threads`).

Training (the cases of train_compare.py's form: Darcy from `fno data generate`,
H1 loss, AdamW lr 5e-3, StepLR halving five times over the run): the median
epoch time of epochs 2 on, the test relative L2 after the last epoch, and each
process's peak resident memory. `darcy16` is the README's default job (1000
samples of 16², hidden 24, modes 16, batch 8).

Inference: a neuraloperator FNO from a fixed seed, exported as `fno infer`
reads it (infer_compare.py's export), run over standard-normal inputs in
batches: samples/s after the first batch for neuraloperator (torch.no_grad),
ours on the Burn engine (`--impl unfused`) and on the Candle engine, and the
relative L2 distance of ours from neuraloperator's output.

    python3 cpu_compare.py --fno ./fno --out OUT [--epochs 20] [--train darcy16,darcy64]
                           [--infer infer16,infer64,infer128] [--threads N]

Needs torch (its CPU build is enough) and neuraloperator. Writes
OUT/cpu_compare.jsonl and OUT/cpu_compare.md.
"""
import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_compare import make_data, run_neuralop, toml_for  # noqa: E402

TRAIN = {
    "darcy16": dict(gen=("darcy", 16), train=1000, test=100, hidden=24, modes=[16, 16], batch=8, anchor=True),
    "darcy64": dict(gen=("darcy", 64), train=200, test=50, hidden=32, modes=[16, 16], batch=16, anchor=True),
}
# name: grid, modes, hidden channels, samples, batch.
INFER = {
    "infer16": ([16, 16], [16, 16], 24, 2048, 32),
    "infer64": ([64, 64], [16, 16], 32, 256, 16),
    "infer128": ([128, 128], [24, 24], 64, 64, 8),
}


def measured(cmd, log):
    """Runs `cmd` with its output in `log`; its exit status, wall seconds and
    peak RSS (MiB): the kernel's high-water mark of the process's own memory
    (VmHWM), sampled every 20 ms. (A child's `ru_maxrss` would not do: Linux
    carries the parent's RSS at the fork into it.)"""
    with open(log, "w") as f:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT)
        peak_kib = 0
        while True:
            try:
                with open(f"/proc/{proc.pid}/status") as status:
                    hwm = [int(line.split()[1]) for line in status if line.startswith("VmHWM:")]
                peak_kib = max([peak_kib] + hwm)
            except OSError:
                pass
            if proc.poll() is not None:
                break
            time.sleep(0.02)
    return proc.returncode, time.perf_counter() - start, peak_kib / 1024


def failure(what, log):
    with open(log) as f:
        lines = [line for line in f.read().splitlines() if line.strip()]
    return RuntimeError(f"{what} failed: {' / '.join(lines[-3:])}")


def neuralop_train(name, epochs, work, threads):
    """neuraloperator's training of a case in a process of its own (for its RSS)."""
    log = os.path.join(work, f"{name}_neuralop.log")
    code, _, rss = measured([sys.executable, os.path.abspath(__file__), "--fno", "unused", "--out", work,
                             "--epochs", str(epochs), "--threads", str(threads), "--neuralop-case", name], log)
    if code != 0:
        raise failure("neuraloperator", log)
    with open(log) as f:
        result = json.loads(f.read().strip().splitlines()[-1])
    return dict(result, peak_rss_mib=rss)


def ours_train(fno, name, files, epochs, work, threads):
    run_dir = os.path.join(work, "runs", name)
    config = os.path.join(work, f"{name}.toml")
    with open(config, "w") as f:
        f.write(toml_for(name, TRAIN[name], files, epochs, run_dir, 0, "f32"))
    log = os.path.join(work, f"{name}_ours.log")
    code, _, rss = measured([fno, "train", "--config", config, "--backend", "cpu", "--impl", "unfused",
                             "--threads", str(threads), "--overwrite"], log)
    if code != 0:
        raise failure("fno train", log)
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        history = [json.loads(line) for line in f]
    times = [m["seconds"] for m in history]
    return dict(first_epoch_s=times[0], epoch_s=statistics.median(times[1:] or times),
                test_l2=history[-1]["tests"][0]["l2"], peak_rss_mib=rss)


def torch_rate(model, x, batch):
    """neuraloperator's samples/s after its first batch, and its output."""
    import torch
    batches = torch.split(x, batch)
    with torch.no_grad():
        outs = [model(batches[0])]
        start = time.perf_counter()
        outs += [model(b) for b in batches[1:]]
        rate = (x.shape[0] - batches[0].shape[0]) / (time.perf_counter() - start)
    return rate, torch.cat(outs).numpy()


def ours_infer(fno, d, batch, engine, threads):
    """`fno infer`'s samples/s after the first batch, its peak RSS and output."""
    import numpy as np
    out = os.path.join(d, f"y-{engine}.npy")
    log = os.path.join(d, f"infer-{engine}.log")
    code, _, rss = measured([fno, "infer", "--checkpoint", os.path.join(d, "model.safetensors"), "--config",
                             os.path.join(d, "config.json"), "--input", os.path.join(d, "x.npy"), "--output", out,
                             "--batch-size", str(batch), "--backend", "cpu", "--engine", engine,
                             "--threads", str(threads), *(["--impl", "unfused"] if engine == "burn" else [])], log)
    if code != 0:
        raise failure(f"fno infer ({engine})", log)
    with open(log) as f:
        rate = re.search(r"([0-9.]+) samples/s after the first batch", f.read())
    return float(rate.group(1)), rss, np.load(out)


def infer_row(fno, name, work, threads):
    import numpy as np
    from infer_compare import export
    grid, modes, hidden, samples, batch = INFER[name]
    d, model, x = export(name, grid, modes, hidden, samples, work)
    rate, want = torch_rate(model.eval(), x, batch)
    row = dict(case=name, grid=grid, samples=samples, batch=batch, neuralop=rate)
    for engine in ("burn", "candle"):
        try:
            ours, rss, y = ours_infer(fno, d, batch, engine, threads)
            err = float(np.linalg.norm(y - want) / np.linalg.norm(want))
            row[engine] = dict(rate=ours, peak_rss_mib=rss, rel_l2=err)
        except Exception as e:  # one failing run must not hide the others
            row[engine] = dict(error=str(e))
    return row


def train_lines(rows):
    lines = ["| case | neuraloperator s/epoch | ours s/epoch | ours/theirs | first epoch s (theirs / ours) | "
             "peak RSS MiB (theirs / ours) | test L2 (theirs / ours) |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        t, o = r["neuralop"], r["ours"]
        if "error" in t or "error" in o:
            lines.append(f"| {r['case']} | {t.get('error', '')} {o.get('error', '')} | | | | | |")
            continue
        lines.append(f"| {r['case']} | {t['epoch_s']:.2f} | {o['epoch_s']:.2f} | {o['epoch_s'] / t['epoch_s']:.2f} | "
                     f"{t['first_epoch_s']:.1f} / {o['first_epoch_s']:.1f} | "
                     f"{t['peak_rss_mib']:.0f} / {o['peak_rss_mib']:.0f} | {t['test_l2']:.4f} / {o['test_l2']:.4f} |")
    return lines


def infer_lines(rows):
    lines = ["| case | grid | samples | batch | neuraloperator samples/s | Burn engine samples/s (×) | "
             "Candle engine samples/s (×) | peak RSS MiB (Burn / Candle) | rel. L2 vs neuraloperator |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        cells, rss, errs = [], [], []
        for engine in ("burn", "candle"):
            e = r[engine]
            cells.append(f"{e['rate']:.0f} ({e['rate'] / r['neuralop']:.2f})" if "rate" in e else "error")
            rss.append(f"{e['peak_rss_mib']:.0f}" if "rate" in e else "–")
            errs.append(e["rel_l2"] if "rate" in e else float("nan"))
        lines.append(f"| {r['case']} | {'×'.join(map(str, r['grid']))} | {r['samples']} | {r['batch']} | "
                     f"{r['neuralop']:.0f} | {cells[0]} | {cells[1]} | {' / '.join(rss)} | {max(errs):.1e} |")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fno", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--train", default=",".join(TRAIN), help="training cases, or none")
    ap.add_argument("--infer", default=",".join(INFER), help="inference cases, or none")
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="both libraries' threads")
    ap.add_argument("--neuralop-case", help=argparse.SUPPRESS)
    args = ap.parse_args()
    pick = lambda s: [] if s == "none" else s.split(",")
    train, infer = pick(args.train), pick(args.infer)
    unknown = [c for c in train if c not in TRAIN] + [c for c in infer if c not in INFER]
    if unknown or args.threads < 1:
        ap.error(f"unknown cases {unknown}" if unknown else "--threads must be at least 1")
    import torch
    torch.set_num_threads(args.threads)
    work, fno = os.path.abspath(args.out), os.path.abspath(args.fno)
    data_dir = os.path.join(work, "data")
    if args.neuralop_case:
        name = args.neuralop_case
        files = {part: os.path.join(data_dir, f"{name}_{part}.npz") for part in ("train", "test")}
        print(json.dumps(run_neuralop(name, TRAIN[name], files, args.epochs, 0, "f32", dev="cpu")))
        return 0
    os.makedirs(data_dir, exist_ok=True)
    setup = (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, {args.threads} threads each; "
             f"torch {torch.__version__}; {args.epochs} epochs a training case")
    print(setup, flush=True)
    jsonl = os.path.join(work, "cpu_compare.jsonl")
    train_rows, infer_rows = [], []
    for name in train:
        print(f"training {name} …", flush=True)
        files = make_data(fno, name, TRAIN[name], data_dir)
        row = dict(case=name, threads=args.threads)
        for label, run in (("neuralop", lambda: neuralop_train(name, args.epochs, work, args.threads)),
                           ("ours", lambda: ours_train(fno, name, files, args.epochs, work, args.threads))):
            try:
                row[label] = run()
            except Exception as e:  # one failing run must not hide the other
                row[label] = dict(error=str(e))
        train_rows.append(row)
        print(json.dumps(row), flush=True)
        with open(jsonl, "a") as f:
            f.write(json.dumps(row) + "\n")
    for name in infer:
        print(f"inference {name} …", flush=True)
        row = dict(infer_row(fno, name, work, args.threads), threads=args.threads)
        infer_rows.append(row)
        print(json.dumps(row), flush=True)
        with open(jsonl, "a") as f:
            f.write(json.dumps(row) + "\n")
    lines = [setup, ""]
    lines += (train_lines(train_rows) + [""]) if train_rows else []
    lines += infer_lines(infer_rows) if infer_rows else []
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(work, "cpu_compare.md"), "w") as f:
        f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
