"""Checksummed FFT plans beside unchecked ones and cuFFT, same cases, same run.

Usage (on the GPU machine): python3 benches/fault_compare.py PATH/TO/fft_bench [--sizes pow2|any] [--quick]
Runs `fft_bench --fault-tolerance` (each case unchecked, detecting and
correcting faults, timed in turn), times cuFFT on each case (torch.fft), and
prints: case, n, batch, ms unchecked / detect / correct, overheads
(checked / unchecked), and cuFFT's time over each of ours (>1: ours faster).
"""
import json
import subprocess
import sys

import fft_compare


def main():
    cmd = [sys.argv[1], "cuda", "--fault-tolerance"] + sys.argv[2:]
    ours = subprocess.run(cmd, capture_output=True, text=True)
    if ours.returncode != 0:
        sys.stderr.write(ours.stderr)
        sys.exit(ours.returncode)
    rows = [json.loads(l) for l in ours.stdout.splitlines() if l.startswith("{")]
    print("| case | n | batch | ms off | ms detect | ms correct | detect/off | correct/off | cuFFT/off | cuFFT/detect | cuFFT/correct | false pos. |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    worst = [0.0, 0.0]
    for r in rows:
        if r["case"] == "env":
            continue
        cufft_ms = baseline_ms(r)
        worst = [max(worst[0], r["detect_ratio"]), max(worst[1], r["correct_ratio"])]
        print(f"| {r['case']} | {r['n']} | {r['batch']} | {r['ms_off']:.4f} | {r['ms_detect']:.4f} | {r['ms_correct']:.4f} "
              f"| {r['detect_ratio']:.3f} | {r['correct_ratio']:.3f} | {cufft_ms / r['ms_off']:.2f} "
              f"| {cufft_ms / r['ms_detect']:.2f} | {cufft_ms / r['ms_correct']:.2f} | {r['false_positives']} |")
    print(f"\nworst overhead: detect {worst[0]:.3f}, correct {worst[1]:.3f}")


def baseline_ms(r):
    """cuFFT's time on case `r`: the median `fft_compare.baseline` measures."""
    captured = {}
    orig = fft_compare.median_ms

    def timed(f, n=30):
        ms = orig(f, n=n)
        captured["ms"] = ms
        return ms
    fft_compare.median_ms = timed
    try:
        fft_compare.baseline(r)
    finally:
        fft_compare.median_ms = orig
    return captured["ms"]


if __name__ == "__main__":
    main()
