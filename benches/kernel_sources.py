"""The kernel sources a benchmark compiles, one file per distinct source, to
check that a refactor leaves the generated code (WGSL on wgpu, CUDA C on CUDA)
as it was.

Usage:
  python3 benches/kernel_sources.py dump BIN_DIR BACKEND OUT_DIR [--quick] [--sets S,...]
  python3 benches/kernel_sources.py diff OUT_DIR_BEFORE OUT_DIR_AFTER

`dump` runs `BIN_DIR/fft_bench BACKEND --sizes S` for each set S (default:
pow2, any, smooth, resident, odd, plane) and `BIN_DIR/spectral_bench BACKEND`
(set `spectral`), each in a scratch directory whose cubecl.toml logs every
compiled kernel, and writes OUT_DIR/S/<sha256>.src per distinct source plus
OUT_DIR/S.list (the hashes with the kernel's name, sorted). `diff` compares
two dumps set by set and exits 1 on any difference, printing which sources
appear on one side only. Kernel names hold Rust module paths and are compared
apart from the sources (a moved module renames a kernel, not its code).

CubeCL emits a kernel's uninitialised declarations in an order that changes
from run to run of the same binary (WGSL `var x: T;`, C `T x;`), and on CUDA
places its shared-memory buffers at offsets of the dynamic shared memory
that change likewise; so each run of consecutive declarations is sorted and
those offsets blanked before hashing (`canonical`); nothing else changes.
"""
import hashlib
import os
import re
import subprocess
import sys
import tempfile

SETS = ["pow2", "any", "smooth", "resident", "odd", "plane"]
# An uninitialised declaration: WGSL `var a_1: array<f32, 8>;`, C `float l_2;`, `uint a_3[8];`.
DECLARATION = re.compile(r"^\s*(var(<[^>]*>)? \w+: [^=();]*|[A-Za-z_][\w:<>, ]*[\s*]+\w+(\[\d+\])*)\s*;\s*$")
# A CUDA shared buffer placed in the dynamic shared memory, and the comment before a barrier's.
SHARED_PLACEMENT = re.compile(r"(reinterpret_cast<.*>\(&?dynamic_shared_mem\[)\d+(\]\);)\s*$")
SHARED_COMMENT = re.compile(r"^\s*// Shared (value|array) size: .*$")
BLOCK = re.compile(r"\[START_KERNEL_COMPILATION\](.*?)\[END_KERNEL_COMPILATION\]", re.S)


def canonical(src):
    """`src` with each run of consecutive declarations (blank lines between
    them included) in sorted order."""
    out, run, comment = [], [], ""
    for line in src.split("\n"):
        if SHARED_COMMENT.match(line):
            # The buffer's size, kept with the placement it describes.
            comment = line.strip() + " | "
            continue
        placed = SHARED_PLACEMENT.search(line)
        if placed:
            run.append(comment + SHARED_PLACEMENT.sub(r"\1*\2", line))
            comment = ""
        elif DECLARATION.match(line) and not line.strip().startswith("return"):
            run.append(line)
        elif run and not line.strip():
            continue
        else:
            out += sorted(run)
            run = []
            out.append(line)
    return "\n".join(out + sorted(run))


def compiled(log_text):
    """(name, source) of each kernel compiled, in compile order."""
    out = []
    for block in BLOCK.findall(log_text):
        name = re.search(r"^name: (.*)$", block, re.M)
        src = block.split("source:\n", 1)[1]
        out.append((name.group(1) if name else "?", canonical(src.strip())))
    return out


def run_set(bin_dir, backend, name, quick):
    with tempfile.TemporaryDirectory() as scratch:
        log = os.path.join(scratch, "compiled.log")
        with open(os.path.join(scratch, "cubecl.toml"), "w") as f:
            f.write(f'[compilation.logger]\nlevel = "full"\nfile = "{log}"\nappend = true\n')
        if name == "spectral":
            cmd = [os.path.join(bin_dir, "spectral_bench"), backend, "--reps", "1", "--no-reference"]
        else:
            cmd = [os.path.join(bin_dir, "fft_bench"), backend, "--sizes", name]
        if quick:
            cmd.append("--quick")
        done = subprocess.run(cmd, cwd=scratch, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
        with open(log) as f:
            return compiled(f.read())


def dump(bin_dir, backend, out_dir, quick, sets):
    bin_dir = os.path.abspath(bin_dir)
    os.makedirs(out_dir, exist_ok=True)
    for name in sets:
        kernels = run_set(bin_dir, backend, name, quick)
        folder = os.path.join(out_dir, name)
        os.makedirs(folder, exist_ok=True)
        listed = set()
        for kernel, src in kernels:
            digest = hashlib.sha256(src.encode()).hexdigest()[:16]
            with open(os.path.join(folder, digest + ".src"), "w") as f:
                f.write(src + "\n")
            listed.add(f"{digest} {kernel.split('<')[0].split('::')[-1]}")
        with open(os.path.join(out_dir, name + ".list"), "w") as f:
            f.write("\n".join(sorted(listed)) + "\n")
        print(f"{name}: {len(kernels)} compilations, {len(listed)} distinct sources", flush=True)


def diff(before, after):
    same = True
    for entry in sorted(os.listdir(before)):
        if not entry.endswith(".list"):
            continue
        a = set(open(os.path.join(before, entry)).read().split("\n")) - {""}
        b_path = os.path.join(after, entry)
        b = set(open(b_path).read().split("\n")) - {""} if os.path.exists(b_path) else set()
        hashes = lambda s: {line.split()[0] for line in s}
        only_a, only_b = hashes(a) - hashes(b), hashes(b) - hashes(a)
        status = "identical" if not (only_a or only_b) else "DIFFERENT"
        print(f"{entry[:-5]}: {len(a)} sources before, {len(b)} after: {status}")
        for h in sorted(only_a):
            print(f"  only before: {entry[:-5]}/{h}.src")
        for h in sorted(only_b):
            print(f"  only after:  {entry[:-5]}/{h}.src")
        same &= not (only_a or only_b)
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) >= 4 and args[0] == "dump":
        sets = SETS + ["spectral"]
        if "--sets" in args:
            sets = args[args.index("--sets") + 1].split(",")
        dump(args[1], args[2], args[3], "--quick" in args, sets)
    elif len(args) == 3 and args[0] == "diff":
        diff(args[1], args[2])
    else:
        sys.exit(__doc__)
