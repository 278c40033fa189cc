#!/usr/bin/env python3
"""Data-parallel scaling: `fno train --devices N` beside neuraloperator 2.0
under `torchrun` DDP, on the same GPUs, data and global batch, in one device
command.

For each case of train_compare.py named and each device count N: the epoch
time (median of the epochs after the first) of both trainers on N GPUs, their
scaling efficiency t(1) / (N · t(N)), the peak GPU memory per GPU, and the
test relative L2 error after the last epoch. Each batch of `batch` samples is
split among the N devices (the global batch stays the one-GPU batch). Ours
is also trained on one GPU at the per-device batch (batch / N), the memory
each device should not exceed.

neuraloperator's DDP: one process per GPU (`torch.distributed.run
--standalone`), NCCL, `DistributedDataParallel` over neuraloperator's FNO,
each rank taking its contiguous share of every batch of one shared sample
order; its summed losses are multiplied by N, since DDP averages gradients,
so that both trainers step on the whole batch's gradient. TF32 is off for
both (train_compare.py's f32). Peak memory: nvidia-smi's per process and
GPU for ours, torch's peak allocation (largest rank) for neuraloperator.

    python3 scaling_compare.py --fno ./fno --out OUT [--devices 1,2] [--epochs 4] [--cases a,b]

Needs neuraloperator importable (train_compare.sh installs its wheels) and,
for ours on several GPUs, NCCL (libnccl.so) where cudarc finds it.
Writes OUT/scaling_compare.jsonl and OUT/scaling_compare.md.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_compare as tc  # noqa: E402


def neuralop_ddp(name, case, files, epochs, seed):
    """One rank of neuraloperator's DDP training; rank 0 prints the result."""
    import torch
    import torch.distributed as dist
    from neuralop.losses import H1Loss, LpLoss
    from neuralop.models import FNO
    from neuralop.training import AdamW

    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    if world > 1:
        dist.init_process_group("nccl")
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    dev = f"cuda:{local}"
    torch.manual_seed(seed)
    (xtr, ytr, xte, yte), norm = tc.neuralop_data(files, dev)
    d = xtr.ndim - 2
    model = FNO(n_modes=tuple(case["modes"]), in_channels=1, out_channels=1, hidden_channels=case["hidden"],
                projection_channel_ratio=2, n_layers=4).to(dev)
    trained = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local]) if world > 1 else model
    anchor = case.get("anchor", False)
    opt = AdamW(model.parameters(), lr=5e-3 if anchor else 1e-3, weight_decay=1e-4)
    loss_fn = H1Loss(d=d) if anchor else LpLoss(d=d, p=2)
    batch, n = case["batch"], xtr.shape[0]
    torch.cuda.reset_peak_memory_stats()
    times = []
    for ep in range(epochs):
        torch.cuda.synchronize()
        if world > 1:
            dist.barrier()
        t0 = time.perf_counter()
        order = torch.randperm(n, generator=torch.Generator().manual_seed(seed * 1000 + ep))
        for i in range(0, n, batch):
            idx = np.array_split(order[i:i + batch].numpy(), world)[rank]
            x, y = xtr[idx].to(dev), norm.transform(ytr[idx].to(dev))
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(trained(x), y) * world
            loss.backward()
            opt.step()
        torch.cuda.synchronize()
        if world > 1:
            dist.barrier()
        times.append(time.perf_counter() - t0)
    peak = torch.tensor([torch.cuda.max_memory_allocated() / 2 ** 20], device=dev)
    if world > 1:
        dist.all_reduce(peak, op=dist.ReduceOp.MAX)
    if rank == 0:
        l2 = LpLoss(d=d, p=2)
        model.eval()
        err = 0.0
        with torch.no_grad():
            for i in range(0, xte.shape[0], 50):
                x, y = xte[i:i + 50].to(dev), yte[i:i + 50].to(dev)
                err += l2(norm.inverse_transform(model(x)), y).item()
        print(json.dumps(dict(first_epoch_s=times[0], epoch_s=statistics.median(times[1:] or times),
                              torch_peak_mib=peak.item(), test_l2=err / xte.shape[0])), flush=True)
    if world > 1:
        dist.destroy_process_group()


def run_neuralop(name, devices, epochs, work, seed):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={devices}",
           os.path.abspath(__file__), "--neuralop-case", name, "--epochs", str(epochs), "--out", work,
           "--fno", "unused", "--seed", str(seed)]
    env = dict(os.environ, CUDA_VISIBLE_DEVICES=",".join(str(i) for i in range(devices)), OMP_NUM_THREADS="4")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"neuraloperator DDP failed: {proc.stderr.strip().splitlines()[-3:]}")
    return json.loads([line for line in proc.stdout.splitlines() if line.startswith("{")][-1])


def table(rows):
    lines = ["| case | grid | GPUs | neuraloperator s/epoch | ours s/epoch | ours/theirs | scaling (theirs / ours) | "
             "peak MiB per GPU (theirs, torch / ours / ours 1 GPU at batch/N) | our pools MiB (same two) | "
             "test L2 (theirs / ours) |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    ones = {r["case"]: r for r in rows if r["devices"] == 1}
    for r in rows:
        t, o, n = r["neuralop"], r["ours"], r["devices"]
        one = ones.get(r["case"])
        if "error" in t or "error" in o:
            lines.append(f"| {r['case']} | {r['grid']} | {n} | {t.get('error', '')} | {o.get('error', '')} | | | | | |")
            continue
        scaling = "–"
        if one and "error" not in one["neuralop"] and "error" not in one["ours"]:
            scaling = (f"{one['neuralop']['epoch_s'] / (n * t['epoch_s']):.0%} / "
                       f"{one['ours']['epoch_s'] / (n * o['epoch_s']):.0%}")
        per_device = r.get("ours_per_device_batch", {})
        pools = " / ".join(f"{p['pool_reserved_mib']:.0f}" if p.get("pool_reserved_mib") else "–"
                           for p in (o, per_device))
        lines.append(f"| {r['case']} | {r['grid']} | {n} | {t['epoch_s']:.3f} | {o['epoch_s']:.3f} | "
                     f"{o['epoch_s'] / t['epoch_s']:.2f} | {scaling} | {t['torch_peak_mib']:.0f} / {o['peak_mib']} / "
                     f"{per_device.get('peak_mib', '–')} | {pools} | {t['test_l2']:.4f} / {o['test_l2']:.4f} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fno", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--devices", default="1,2")
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--cases", default="darcy128,darcy256,poisson32cube")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--neuralop-case", help=argparse.SUPPRESS)
    args = ap.parse_args()
    work = os.path.abspath(args.out)
    data_dir = os.path.join(work, "data")
    if args.neuralop_case:
        name = args.neuralop_case
        files = {part: os.path.join(data_dir, f"{name}_{part}.npz") for part in ("train", "test")}
        neuralop_ddp(name, tc.CASES[name], files, args.epochs, args.seed)
        return 0
    counts = [int(n) for n in args.devices.split(",")]
    if 1 not in counts:
        ap.error("--devices must include 1 (the scaling's reference)")
    fno = os.path.abspath(args.fno)
    os.makedirs(data_dir, exist_ok=True)
    import torch
    gpu = torch.cuda.get_device_name()
    print(f"{torch.cuda.device_count()} x {gpu}, torch {torch.__version__}, {args.epochs} epochs a run", flush=True)
    memory = tc.GpuMemory()
    rows = []
    try:
        for name in args.cases.split(","):
            case = tc.CASES[name]
            files = tc.make_data(fno, name, case, data_dir)
            grid = "x".join(str(g) for g in tc.load_xy(files["test"])[0].shape[2:])
            for n in counts:
                row = dict(case=name, grid=grid, gpu=gpu, devices=n, epochs=args.epochs, batch=case["batch"])
                runs = [("neuralop", lambda: run_neuralop(name, n, args.epochs, work, args.seed)),
                        ("ours", lambda: tc.run_ours(fno, name, case, files, args.epochs, work, memory, args.seed, "f32",
                                                 devices=n))]
                if n > 1:
                    per_device = dict(case, batch=case["batch"] // n)
                    runs.append(("ours_per_device_batch", lambda: tc.run_ours(
                        fno, name, per_device, files, args.epochs, work, memory, args.seed, "f32")))
                rows.append(tc.record(row, runs, os.path.join(work, "scaling_compare.jsonl")))
    finally:
        memory.stop()
    text = table(rows)
    print(text)
    with open(os.path.join(work, "scaling_compare.md"), "w") as f:
        f.write(f"{torch.cuda.device_count()} x {gpu}, torch {torch.__version__}, {args.epochs} epochs a run\n\n"
                f"{text}\n")


if __name__ == "__main__":
    sys.exit(main())
