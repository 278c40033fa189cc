#!/usr/bin/env bash
# One device run: neuraloperator's anchor training and ours on the same data and GPU.
# Run from a folder holding: fno (cargo build --release -p fno-cli), train_neuralop.py
# (../shared/anchors), data/darcy_{train,test}_16.pt, darcy_neuralop.toml (configs/ with the
# data paths pointed at data/), and ../.whl with the neuraloperator 2.0 wheels.
set -u
cd "$(dirname "$0")"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site ../.whl/*.whl
export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
timeout 220 python3 train_neuralop.py data 60 8 16 > $OUT/anchor.jsonl 2> $OUT/anchor.err
echo "anchor rc $?"
tail -2 $OUT/anchor.jsonl
timeout 330 ./fno train --config darcy_neuralop.toml --backend cuda --out $OUT/ours 2>&1 >$OUT/ours.out | tr '\r' '\n' | grep -v batches > $OUT/ours.err
echo "ours rc ${PIPESTATUS[0]}"
head -3 $OUT/ours.err
tail -3 $OUT/ours.err
rm -f $OUT/ours/*.state
