#!/usr/bin/env python3
"""Training throughput: `fno train` beside neuraloperator 2.0 on the same data
and GPU, in one device command.

For each case both trainers get the same data files (generated here by
`fno data generate`, or synthetic Poisson problems written with numpy), the
same FNO (4 layers, projection ratio 2), optimiser, loss and batch size, and
run the same number of epochs. Reported: first-epoch time, the median of the
later epochs, peak GPU memory of the process (nvidia-smi, sampled every
100 ms; neuraloperator runs each case in a process of its own; for it also
torch's own peak), and the test relative L2
error of the de-normalised prediction after the last epoch.

    python3 train_compare.py --fno ./fno --out OUT [--epochs 5] [--cases a,b] [--seeds N]
                             [--precision f32,tf32,mixed] [--impl unfused-cube,unfused,auto] [--without-neuralop]
                             [--factorization tucker --rank 0.42]

`--factorization` (tucker, cp or tt) with `--rank` trains both as TFNOs: the
spectral weights factorized alike (neuraloperator's FNO arguments, our
`[model]` keys of the same names).

`--precision` sets both trainers alike. f32: torch with TF32 off everywhere
(`torch.backends.cudnn.allow_tf32 = False`; torch's default leaves it on, so
neuraloperator's 1×1 convolutions run in TF32 unless told), ours with
`matmul_precision = "f32"`. tf32: torch with TF32 on everywhere (cuDNN and
`set_float32_matmul_precision("high")`, which reaches the spectral einsum
too), ours with `matmul_precision = "tf32"` (the 1×1 forwards and input
gradients; our spectral contraction and weight gradients stay f32). mixed:
neuraloperator with `fno_block_precision="mixed"` under torch autocast (float16)
with a GradScaler, TF32 off; ours with `fno_block_precision = "mixed"` (spectra and
their contraction in f16, sums in f32) and f32 1×1 products. half:
neuraloperator with `fno_block_precision="half"` under autocast; ours with
`fno_block_precision = "half"` (every activation in f16, f32 weights and sums).

With `--seeds N` both trainers train each case N times, from seeds 0..N-1
(torch's seed; our `[run] seed`): times and memory are the first run's, test
errors the median over the runs with their range, since neuraloperator's
error after a few epochs varies from run to run even from one seed.

`--impl` trains ours once per spectral path listed (`fno train --impl`;
default unfused; a path may end in `-` and a `--burn-fusion` value, as
`unfused-on` or `auto-on-burn-ops`, `-cube` meaning `off`, and then in `:` and a
`--memory` mode, as `unfused:fast`), the first beside neuraloperator, and
tables each path's epoch time and memory against the first's; `--without-neuralop` leaves neuraloperator
out (the path comparison alone).

Memory: each process's nvidia-smi peak, and that peak less the process's CUDA
context — the nvidia-smi peak of a process of the same kind that does almost
nothing (torch: one tensor of one value on the GPU; ours: `fno fft` of a 64×64
array on CUDA), measured once a run; for ours also the peaks its metrics report
(live tensors and what the pools held, sampled in the training steps).

neuraloperator must be importable (see ../shared/anchors/README.md for its
wheels). Writes OUT/train_compare.jsonl and OUT/train_compare.md.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time

import numpy as np

# name: data, grid, model and optimiser of one case. `gen` are the arguments
# of `fno data generate`; `poisson` a synthetic grid; `anchor` neuraloperator's
# Darcy example (H1 loss, lr 5e-3, batch 8, StepLR).
CASES = {
    "darcy16": dict(gen=("darcy", 16), train=1000, test=100, hidden=24, modes=[16, 16], batch=8, anchor=True),
    "darcy64": dict(gen=("darcy", 64), train=1000, test=100, hidden=64, modes=[16, 16], batch=16),
    "darcy128": dict(gen=("darcy", 128), train=1000, test=100, hidden=64, modes=[24, 24], batch=16),
    "darcy256": dict(gen=("darcy", 256), train=200, test=50, hidden=64, modes=[32, 32], batch=16),
    "burgers1024": dict(gen=("burgers", 1024), train=256, test=64, hidden=64, modes=[32], batch=16),
    "poisson64x128": dict(poisson=[64, 128], train=500, test=100, hidden=64, modes=[16, 16], batch=16),
    "poisson32cube": dict(poisson=[32, 32, 32], train=200, test=50, hidden=32, modes=[12, 12, 12], batch=16),
}


class GpuMemory:
    """Peak GPU memory (MiB) of one process, sampled with nvidia-smi."""

    def __init__(self):
        self.samples = {}
        self.proc = subprocess.Popen(
            ["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits", "-lms", "100"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.stdout:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
                pid, mib = int(parts[0]), int(parts[1])
                self.samples[pid] = max(self.samples.get(pid, 0), mib)

    def peak(self, pid):
        return self.samples.get(pid)

    def stop(self):
        self.proc.terminate()


def poisson_data(path, grid, n, seed):
    """x: a smooth random field; y solves −Δy = x on the periodic box (zero mean)."""
    rng = np.random.default_rng(seed)
    k = np.meshgrid(*[np.fft.fftfreq(g, 1.0 / g) for g in grid], indexing="ij")
    k2 = sum(ki ** 2 for ki in k)
    decay = (1.0 + k2) ** -1.5
    shape = (n, *grid)
    xh = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)) * decay
    x = np.fft.ifftn(xh, axes=tuple(range(1, len(grid) + 1))).real
    k2[(0,) * len(grid)] = 1.0
    yh = np.fft.fftn(x, axes=tuple(range(1, len(grid) + 1))) / ((2 * np.pi) ** 2 * k2)
    yh[(slice(None),) + (0,) * len(grid)] = 0.0
    y = np.fft.ifftn(yh, axes=tuple(range(1, len(grid) + 1))).real
    scale = np.abs(x).max()
    np.savez(path, x=(x / scale).astype(np.float32), y=(y / scale).astype(np.float32))


def make_data(fno, name, case, data_dir):
    """Train and test files of a case: ([N, *grid] arrays x, y)."""
    files = {}
    for part, n, seed in (("train", case["train"], 0), ("test", case["test"], 1)):
        path = os.path.join(data_dir, f"{name}_{part}.npz")
        files[part] = path
        if os.path.exists(path):
            continue
        if "poisson" in case:
            poisson_data(path, case["poisson"], n, seed)
        else:
            pde, res = case["gen"]
            extra = ["--fine", "2048"] if pde == "burgers" else []
            subprocess.run([fno, "data", "generate", pde, "--n", str(n), "--res", str(res), "--seed", str(seed),
                            *extra, "--out", path], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return files


def load_xy(path):
    """[N, 1, *grid] float32 arrays, whether the file stores a channel dim or not."""
    with np.load(path) as f:
        x, y, ours = f["x"], f["y"], "__metadata__.json" in f.files
    return (x, y) if ours else (x[:, None], y[:, None])


def run_neuralop_process(name, epochs, work, memory, seed, precision, tfno=None):
    """neuraloperator's run of one case in a process of its own, so that its
    GPU memory (and torch's cache) is this case's alone."""
    factorized = ["--factorization", tfno[0], "--rank", str(tfno[1])] if tfno else []
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--neuralop-case", name, "--epochs",
                             str(epochs), "--out", work, "--fno", "unused", "--seed", str(seed),
                             "--precision", precision, *factorized],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"neuraloperator failed: {err.strip().splitlines()[-1:]}")
    result = json.loads(out.strip().splitlines()[-1])
    result["peak_mib"] = memory.peak(proc.pid)
    return result


def neuralop_data(files, dev):
    """A case's train and test arrays as torch tensors (on the host), and
    neuraloperator's normaliser of the outputs fitted on the training set (on `dev`)."""
    import torch
    from neuralop.data.transforms.normalizers import UnitGaussianNormalizer

    (xtr, ytr), (xte, yte) = load_xy(files["train"]), load_xy(files["test"])
    arrays = tuple(torch.from_numpy(a) for a in (xtr, ytr, xte, yte))
    norm = UnitGaussianNormalizer(dim=[0] + list(range(2, xtr.ndim)))
    norm.fit(arrays[1])
    return arrays, norm.to(dev)


def run_neuralop(name, case, files, epochs, seed, precision, tfno=None, dev="cuda"):
    """neuraloperator's training of one case on `dev` (cuda, or cpu for cpu_compare.py)."""
    import torch
    tf32, mixed = precision == "tf32", precision in ("mixed", "half")
    torch.backends.cudnn.allow_tf32 = tf32
    torch.set_float32_matmul_precision("high" if tf32 else "highest")
    from neuralop.losses import H1Loss, LpLoss
    from neuralop.models import FNO
    from neuralop.training import AdamW

    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    torch.manual_seed(seed)
    (xtr, ytr, xte, yte), norm = neuralop_data(files, dev)
    d = xtr.ndim - 2
    model = FNO(n_modes=tuple(case["modes"]), in_channels=1, out_channels=1, hidden_channels=case["hidden"],
                projection_channel_ratio=2, n_layers=4,
                fno_block_precision=precision if mixed else "full",
                **(dict(factorization=tfno[0], rank=tfno[1]) if tfno else {})).to(dev)
    scaler = torch.amp.GradScaler(dev, enabled=mixed)
    autocast = lambda: torch.autocast(dev, dtype=torch.float16, enabled=mixed)
    anchor = case.get("anchor", False)
    opt = AdamW(model.parameters(), lr=5e-3 if anchor else 1e-3, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=max(1, epochs // 5), gamma=0.5) if anchor else None
    loss_fn = H1Loss(d=d) if anchor else LpLoss(d=d, p=2)
    l2 = LpLoss(d=d, p=2)
    batch, n = case["batch"], xtr.shape[0]
    if dev == "cuda":
        torch.cuda.reset_peak_memory_stats()
    times = []
    for ep in range(epochs):
        sync()
        t0 = time.perf_counter()
        model.train()
        order = torch.randperm(n)
        for i in range(0, n, batch):
            idx = order[i:i + batch]
            x, y = xtr[idx].to(dev), norm.transform(ytr[idx].to(dev))
            opt.zero_grad(set_to_none=True)
            with autocast():
                loss = loss_fn(model(x).float(), y)
            scaler.scale(loss).backward()
            try:
                scaler.step(opt)
                scaler.update()
            except RuntimeError as e:  # a scaler that cannot unscale complex gradients: train unscaled
                print(f"GradScaler: {e}; this step skipped, the rest unscaled", file=sys.stderr)
                scaler = torch.amp.GradScaler(dev, enabled=False)
        if sched:
            sched.step()
        sync()
        times.append(time.perf_counter() - t0)
    model.eval()
    err = 0.0
    with torch.no_grad():
        for i in range(0, xte.shape[0], 50):
            x, y = xte[i:i + 50].to(dev), yte[i:i + 50].to(dev)
            with autocast():
                out = model(x).float()
            err += l2(norm.inverse_transform(out), y).item()
    return dict(first_epoch_s=times[0], epoch_s=statistics.median(times[1:] or times),
                torch_peak_mib=torch.cuda.max_memory_allocated() / 2 ** 20 if dev == "cuda" else None,
                test_l2=err / xte.shape[0])


def toml_for(name, case, files, epochs, out_dir, seed, precision, tfno=None):
    anchor = case.get("anchor", False)
    factorized = f'factorization = "{tfno[0]}"\nrank = {float(tfno[1])}\n' if tfno else ""
    schedule = (f'{{ kind = "step", step_size = {max(1, epochs // 5)}, gamma = 0.5 }}' if anchor
                else '{ kind = "constant" }')
    return f"""[model]
n_modes = {case["modes"]}
in_channels = 1
out_channels = 1
hidden_channels = {case["hidden"]}
n_layers = 4
projection_channel_ratio = 2.0
fno_block_precision = "{precision if precision in ("mixed", "half") else "full"}"
{factorized}
[data]
encode_input = false
encode_output = true

[data.train]
file = "{files["train"]}"

[[data.tests]]
name = "{name}"
file = "{files["test"]}"

[optim]
epochs = {epochs}
batch_size = {case["batch"]}
lr = {5e-3 if anchor else 1e-3}
weight_decay = 1e-4
eps = 1e-6
loss = "{"h1" if anchor else "l2"}"
schedule = {schedule}

[run]
out_dir = "{out_dir}"
seed = {seed}
eval_every = {epochs}
checkpoint_every = {epochs}
plot_samples = 0
matmul_precision = "{"tf32" if precision == "tf32" else "f32"}"
"""


def backend_flags(variant):
    """`--impl PATH` of `PATH[-FUSION][:MEMORY]`, `--burn-fusion FUSION` (`cube`: off)
    and `--memory MEMORY`."""
    variant, _, mode = variant.partition(":")
    path, _, fusion = variant.partition("-")
    fusion = {"cube": "off"}.get(fusion, fusion)
    return (["--impl", path] + (["--burn-fusion", fusion] if fusion else [])
            + (["--memory", mode] if mode else []))


def context_mib(fno, work, memory):
    """The nvidia-smi peaks of near-empty processes: torch's, and ours (`fno fft`)."""
    import numpy as np
    probe = os.path.join(work, "context_probe.npy")
    np.save(probe, np.ones((64, 64), dtype=np.float32))
    commands = dict(
        neuralop=[sys.executable, "-c", "import time, torch; torch.ones(1, device='cuda'); "
                  "torch.cuda.synchronize(); time.sleep(1)"],
        ours=[fno, "fft", "--backend", "cuda", "--input", probe, "--output", probe + ".out.npy"])
    peaks = {}
    for name, command in commands.items():
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        proc.wait()
        time.sleep(0.3)
        peaks[name] = memory.peak(proc.pid)
    return peaks


def run_ours(fno, name, case, files, epochs, work, memory, seed, precision, imp="unfused", devices=1, tfno=None):
    """`fno train` of one case (`--devices` as given; scaling_compare.py)."""
    run_dir = os.path.join(work, "runs", name)
    config = os.path.join(work, f"{name}.toml")
    with open(config, "w") as f:
        f.write(toml_for(name, case, files, epochs, run_dir, seed, precision, tfno))
    flags = backend_flags(imp)
    proc = subprocess.Popen([fno, "train", "--config", config, "--backend", "cuda", *flags, "--overwrite",
                             "--devices", str(devices)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, err = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"fno train failed: {err.strip().splitlines()[-1:]}")
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        history = [json.loads(line) for line in f]
    times = [m["seconds"] for m in history]
    # The peaks our metrics report (sampled in the steps), beside nvidia-smi's figure.
    pools = [m.get("memory") or {} for m in history]
    most = lambda key: max((p[key] for p in pools if p.get(key) is not None), default=None)
    return dict(first_epoch_s=times[0], epoch_s=statistics.median(times[1:] or times),
                peak_mib=memory.peak(proc.pid), test_l2=history[-1]["tests"][0]["l2"],
                pool_reserved_mib=most("peak_reserved_mib") or most("reserved_mib"),
                pool_in_use_mib=most("peak_in_use_mib") or most("in_use_mib"))


def l2(result):
    """The test error: the median over the seeds, with their range when several."""
    errors = result["test_l2_seeds"]
    median = f"{statistics.median(errors):.4f}"
    return median if len(errors) == 1 else f"{median} ({min(errors):.4f}–{max(errors):.4f})"


def with_seeds(run, seeds):
    """The first seed's result, with every seed's test error."""
    results = [run(seed) for seed in range(seeds)]
    first = results[0]
    first["test_l2_seeds"] = [r["test_l2"] for r in results]
    return first


def less_context(result, context):
    """A run's nvidia-smi peak less its kind's context (None where either is unknown)."""
    peak = result.get("peak_mib")
    return peak - context if peak is not None and context is not None else None


def memory_cell(theirs, ours):
    """`theirs / ours (ratio)` of peaks less their contexts."""
    if theirs is None or ours is None:
        return "–"
    return f"{theirs} / {ours} ({ours / theirs:.2f})" if theirs > 0 else f"{theirs} / {ours}"


def table(rows, context):
    """One line a case; `ours, again` is the first epoch of a second `fno train`
    of the same case (compiled kernels cached), where one was run."""
    lines = ["| case | grid | precision | neuraloperator s/epoch | ours s/epoch | ours/theirs | "
             "first epoch (theirs / ours / ours, again) s | peak MiB (theirs / ours) | "
             "peak less context MiB (theirs / ours) | test L2 (theirs / ours) |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        t, o = r["neuralop"], r["ours"]
        again = f"{r['ours_again']['first_epoch_s']:.1f}" if "first_epoch_s" in r.get("ours_again", {}) else "–"
        lines.append(f"| {r['case']} | {r['grid']} | {r['precision']} | {t['epoch_s']:.3f} | {o['epoch_s']:.3f} | "
                     f"{o['epoch_s'] / t['epoch_s']:.2f} | {t['first_epoch_s']:.1f} / {o['first_epoch_s']:.1f} / "
                     f"{again} | {t['peak_mib']} / {o['peak_mib']} | "
                     f"{memory_cell(less_context(t, context.get('neuralop')), less_context(o, context.get('ours')))} | "
                     f"{l2(t)} / {l2(o)} |")
    return "\n".join(lines)


def impl_table(rows, imps, context):
    """Our epoch time and memory under each spectral path, against the first path's."""
    first = imps[0]
    head = " | ".join(f"{imp} s/epoch" for imp in imps)
    ratios = " | ".join(f"{first}/{imp}" for imp in imps[1:])
    lines = [f"| case | grid | precision | {head} | {ratios} | peak less context MiB ({', '.join(imps)}) | "
             f"sampled peak in use / held MiB | test L2 ({', '.join(imps)}) |",
             "| --- | --- | --- |" + " ---: |" * (2 * len(imps) - 1) + " ---: | ---: | ---: |"]
    fmt = lambda v: "–" if v is None else f"{v:.0f}"
    for r in rows:
        runs = [r[ours_label(imp, imps)] for imp in imps]
        times = " | ".join(f"{o['epoch_s']:.3f}" for o in runs)
        ratio = " | ".join(f"{runs[0]['epoch_s'] / o['epoch_s']:.2f}" for o in runs[1:])
        peaks = " / ".join(fmt(less_context(o, context.get("ours"))) for o in runs)
        pools = " / ".join(f"{fmt(o.get('pool_in_use_mib'))}, {fmt(o.get('pool_reserved_mib'))}" for o in runs)
        lines.append(f"| {r['case']} | {r['grid']} | {r['precision']} | {times} | {ratio} | {peaks} | {pools} | "
                     f"{' / '.join(l2(o) for o in runs)} |")
    return "\n".join(lines)


def ours_label(imp, imps):
    """The first path's runs are `ours`; the others' `ours_<path>`."""
    return "ours" if imp == imps[0] else f"ours_{imp}"


def record(row, runs, jsonl):
    """`row` with each labelled run's result (or its error: one failing run
    must not hide the others), printed and appended to `jsonl`."""
    for label, run in runs:
        try:
            row[label] = run()
        except Exception as e:
            row[label] = dict(error=str(e))
    print(json.dumps(row), flush=True)
    with open(jsonl, "a") as f:
        f.write(json.dumps(row) + "\n")
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fno", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--seeds", type=int, default=1, help="runs a case from seeds 0..N-1 (test errors: median, range)")
    ap.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--precision", default="f32",
                    help="f32, tf32, mixed, half or several as f32,half: both trainers' precision (see above)")
    ap.add_argument("--again", action="store_true",
                    help="train each case a second time with ours, for the start-up with compiled kernels cached")
    ap.add_argument("--impl", default="unfused", help="our spectral paths, as unfused,fused (see above)")
    ap.add_argument("--without-neuralop", action="store_true", help="train ours alone")
    ap.add_argument("--factorization", help="tucker, cp or tt: train TFNOs (both trainers)")
    ap.add_argument("--rank", type=float, default=1.0, help="the factorization's rank fraction")
    ap.add_argument("--neuralop-case", help=argparse.SUPPRESS)
    args = ap.parse_args()
    tfno = (args.factorization, args.rank) if args.factorization else None
    imps = args.impl.split(",")
    paths = {"reference", "unfused", "fused", "auto"}
    fusions = {"", "cube", "off", "on", "on-burn-ops"}
    modes = {"", "fast", "balanced", "small"}
    split = [(i.partition(":")[0].partition("-"), i.partition(":")[2]) for i in imps]
    if not imps or any(p not in paths or f not in fusions or m not in modes for (p, _, f), m in split):
        ap.error(f"--impl: {args.impl!r} is not a list of reference, unfused, fused and auto "
                 "(each maybe -off, -on or -on-burn-ops, then maybe :fast, :balanced or :small)")
    precisions = args.precision.split(",")
    if not set(precisions) <= {"f32", "tf32", "mixed", "half"}:
        ap.error(f"--precision: {args.precision!r} is not a list of f32, tf32, mixed and half")
    fno = os.path.abspath(args.fno)
    work = os.path.abspath(args.out)
    data_dir = os.path.join(work, "data")
    if args.neuralop_case:
        # The child of run_neuralop_process: the data exist; one JSON line back.
        name = args.neuralop_case
        files = {part: os.path.join(data_dir, f"{name}_{part}.npz") for part in ("train", "test")}
        print(json.dumps(run_neuralop(name, CASES[name], files, args.epochs, args.seed, args.precision, tfno)))
        return 0
    os.makedirs(data_dir, exist_ok=True)
    import torch
    gpu = torch.cuda.get_device_name()
    setup = f"{gpu}, torch {torch.__version__}, {args.epochs} epochs a case"
    if tfno:
        setup += f", TFNO: {tfno[0]} rank {tfno[1]}"
    print(setup, flush=True)
    memory = GpuMemory()
    rows = []
    context = {}
    try:
        context = context_mib(fno, work, memory)
        print(f"contexts (nvidia-smi MiB of near-empty processes): {context}", flush=True)
        for name, precision in [(n, p) for n in args.cases.split(",") for p in precisions]:
            case = CASES[name]
            files = make_data(fno, name, case, data_dir)
            grid = "x".join(str(g) for g in load_xy(files["test"])[0].shape[2:])
            row = dict(case=name, grid=grid, gpu=gpu, epochs=args.epochs, precision=precision, tfno=tfno)
            runs = [] if args.without_neuralop else [("neuralop", lambda: with_seeds(
                lambda s: run_neuralop_process(name, args.epochs, work, memory, s, precision, tfno), args.seeds))]
            runs += [(ours_label(imp, imps), lambda imp=imp: with_seeds(
                lambda s: run_ours(fno, name, case, files, args.epochs, work, memory, s, precision, imp, tfno=tfno),
                args.seeds)) for imp in imps]
            if args.again:
                runs.append(("ours_again",
                             lambda: run_ours(fno, name, case, files, args.epochs, work, memory, 0, precision, imps[0],
                                              tfno=tfno)))
            rows.append(record(row, runs, os.path.join(work, "train_compare.jsonl")))
    finally:
        memory.stop()
    done = [r for r in rows if "error" not in r.get("neuralop", {}) and "error" not in r["ours"]]
    text = f"Contexts (MiB): {context}\n\n"
    text += "" if args.without_neuralop else table(done, context) + "\n"
    text += "\n" + impl_table([r for r in done if all("error" not in r[ours_label(i, imps)] for i in imps)],
                              imps, context)
    print(text)
    with open(os.path.join(work, "train_compare.md"), "w") as f:
        f.write(f"{setup}\n\n{text.strip()}\n")


if __name__ == "__main__":
    sys.exit(main())
