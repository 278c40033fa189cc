"""Checksummed kernels beside unchecked ones and PyTorch, same cases, same run.

Usage (on the GPU machine):
    python3 benches/fault_compare.py PATH/TO/fft_bench [--sizes pow2|any] [--quick]
    python3 benches/fault_compare.py --spectral PATH/TO/spectral_bench [--quick] [--turbofno]
The first runs `fft_bench --fault-tolerance` (each case unchecked, detecting and
correcting faults, timed in turn), times cuFFT on each case (torch.fft), and
prints: case, n, batch, ms unchecked / detect / correct, overheads
(checked / unchecked), and cuFFT's time over each of ours (>1: ours faster).
The second does the same for the spectral convolution's Unfused path,
forward and forward+backward, beside neuraloperator's SpectralConv.
"""
import json
import subprocess
import sys

import fft_compare


def main():
    if sys.argv[1] == "--spectral":
        spectral(sys.argv[2], sys.argv[3:])
        return
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


def spectral(bench, args):
    import spectral_compare
    ours = subprocess.run([bench, "cuda", "--fault-tolerance", "--no-reference", *args],
                          capture_output=True, text=True)
    if ours.returncode != 0:
        sys.stderr.write(ours.stderr)
        sys.exit(ours.returncode)
    rows = [json.loads(l) for l in ours.stdout.splitlines() if l.startswith("{")]
    print("| case | fwd off ms | detect/off | correct/off | fwd+bwd off ms | detect/off | correct/off "
          "| neuralop/off fwd | neuralop/off fwd+bwd | checked vs off | false pos. | injected: detected, corrected, vs off |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    worst = [0.0] * 4
    for r in rows:
        nf, nb = spectral_compare.neuralop_times(r)
        name = f"{r['dim']}D B{r['B']} C{r['C']} N{r['N']} m{tuple(r['modes'])}"
        ratios = [r.get(k) for k in ("detect_fwd_ratio", "correct_fwd_ratio", "detect_fwd_bwd_ratio",
                                     "correct_fwd_bwd_ratio")]
        if None in ratios:
            print(f"| {name} | {r} |")
            continue
        worst = [max(w, x) for w, x in zip(worst, ratios)]
        off = max(r.get("detect_vs_off", 0.0), r.get("correct_vs_off", 0.0))
        print(f"| {name} | {r['off_fwd_ms']:.4f} | {ratios[0]:.3f} | {ratios[1]:.3f} | {r['off_fwd_bwd_ms']:.4f} "
              f"| {ratios[2]:.3f} | {ratios[3]:.3f} | {nf / r['off_fwd_ms']:.2f} | {nb / r['off_fwd_bwd_ms']:.2f} "
              f"| {off:.1e} | {r['false_positives']} | {r.get('injected_detected')}/{r.get('injected')}, "
              f"{r.get('injected_corrected')}, {r.get('corrected_vs_off', float('nan')):.1e} |", flush=True)
        print("JSON " + json.dumps(r | {"neuralop_fwd_ms": nf, "neuralop_fwd_bwd_ms": nb}), file=sys.stderr)
    print(f"\nworst overhead: forward detect {worst[0]:.3f}, correct {worst[1]:.3f}; "
          f"forward+backward detect {worst[2]:.3f}, correct {worst[3]:.3f}")


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
