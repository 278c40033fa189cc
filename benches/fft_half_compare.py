"""Half-precision FFTs: ours in f16 and bf16 beside our f32 and cuFFT's
float16 (torch.fft on float16/complex32 tensors), same cases, same run.

Usage (on the GPU machine): python3 benches/fft_half_compare.py PATH/TO/fft_bench [fft_bench args]
Runs the Rust benchmark once per precision (f32, f16, bf16, and f16 with
`--tensor-cores never`: the stage kernels where tensor cores would run), then times cuFFT
in float16 where it has the length (powers of two only) and prints per case the
times in ms (cuFFT's f32 too, our f32's reference), ours f16/f32 (issue 48 asks <= 0.6) and cuFFT f16/ours f16
(>= 1.0 is as fast or faster). cuFFT has no bf16 transforms.
"""
import json
import subprocess
import sys

import torch

from fft_compare import baseline


def ours(binary, args, precision, extra=()):
    """Our rows in `precision`, echoed to stderr as they come (a run cut short keeps them)."""
    proc = subprocess.Popen([binary, "cuda", *args, "--precision", precision, *extra], stdout=subprocess.PIPE, text=True)
    rows = {}
    for line in proc.stdout:
        if line.startswith("{"):
            print("OURS " + line.strip(), file=sys.stderr, flush=True)
            r = json.loads(line)
            if r["case"] != "env":
                rows[(r["case"], r["n"], r["modes"])] = r
    if proc.wait() != 0:
        sys.exit(proc.returncode)
    return rows


def main():
    binary, args = sys.argv[1], sys.argv[2:]
    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}")
    runs = {p: ours(binary, args, p) for p in ("f32", "f16", "bf16")}
    runs["f16 stages"] = ours(binary, args, "f16", ("--tensor-cores", "never"))
    print(f"{'case':<24}{'n':>6}{'batch':>9}{'f32 ms':>9}{'f16 ms':>9}{'f16 st ms':>10}{'bf16 ms':>9}"
          f"{'cuFFT32 ms':>11}{'cuFFT16 ms':>11}{'f16/f32':>8}{'bf16/f32':>9}{'cuFFT/f16':>10}{'err f16':>9}{'err bf16':>9}")
    for key, r32 in runs["f32"].items():
        r16, rb, rs = runs["f16"][key], runs["bf16"][key], runs["f16 stages"][key]
        n = r32["n"]
        cufft32 = r32["gbps"] * r32["ms"] / baseline(r32)
        cufft = None
        if n & (n - 1) == 0:
            # Bytes counted in f32 on both sides: GB/s convert to the same ms.
            gbps = baseline(r32, half=True)
            cufft = r32["gbps"] * r32["ms"] / gbps
        cufft_ms = f"{cufft:.4f}" if cufft else "n/a"
        cufft_ratio = f"{cufft / r16['ms']:.2f}" if cufft else "n/a"
        line = (f"{key[0]:<24}{n:>6}{r32['batch']:>9}{r32['ms']:>9.4f}{r16['ms']:>9.4f}{rs['ms']:>10.4f}{rb['ms']:>9.4f}"
                f"{cufft32:>11.4f}{cufft_ms:>11}{r16['ms'] / r32['ms']:>8.2f}{rb['ms'] / r32['ms']:>9.2f}"
                f"{cufft_ratio:>10}{r16['rel_err']:>9.1e}{rb['rel_err']:>9.1e}"
                f"{' TC' if r16.get('tensor_core_launches') else ''}")
        print(line, flush=True)
        print("JSON " + json.dumps({"f32": r32, "f16": r16, "bf16": rb, "f16_stages": rs, "cufft_f32_ms": cufft32, "cufft_f16_ms": cufft}), file=sys.stderr)


if __name__ == "__main__":
    main()
