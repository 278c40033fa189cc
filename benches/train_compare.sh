#!/usr/bin/env bash
# One device run of train_compare.py (`fno train` beside neuraloperator 2.0):
#   bash benches/train_compare.sh FNO_BINARY WORK_DIR [train_compare.py options]
# with neuraloperator's wheels in .whl/ at the repository root (see
# ../shared/anchors/README.md); the tables land in WORK_DIR.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "$here"/../.whl/*.whl
export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
fno="$1" work="$2"
shift 2
python3 "$here/train_compare.py" --fno "$fno" --out "$work" "$@"
