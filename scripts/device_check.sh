#!/usr/bin/env bash
# The CUDA checks in one run (scripts/device_check.py): modelcore on the GPU against the CPU, decoding at batch 1
# and 16, a bf16 training step against float32, and the playground stream with the interactive worker on CUDA.
# Figures go to $OUT/device_check.json (bench/results/ without $OUT). Without CUDA it says so and exits 0.
#
#   scripts/device_check.sh            # on the GPU machine, from the repository's root
#
# The Python used is $PYTHON, else the first of python3 and .venv/bin/python whose torch sees a CUDA device (a GPU
# machine's image ships a CUDA build of torch: the project's pinned CPU build is never installed over it). Wheels
# carried in .whl/ (the web stack, for the stream) are installed beside it first, without reaching any index.
set -uo pipefail
cd "$(dirname "$0")/.."

sees_cuda() { "$1" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; }

python="${PYTHON:-}"
if [[ -z "$python" ]]; then
  for candidate in python3 .venv/bin/python; do
    if command -v "$candidate" >/dev/null && sees_cuda "$candidate"; then python="$candidate"; break; fi
  done
fi
if [[ -z "$python" ]]; then
  echo "device check: no CUDA device here (no Python whose torch sees one); nothing to check"
  exit 0
fi
if compgen -G ".whl/*.whl" >/dev/null; then
  "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/device-check-site .whl/*.whl \
    && export PYTHONPATH="/tmp/device-check-site${PYTHONPATH:+:$PYTHONPATH}"
fi
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
exec timeout 480 "$python" scripts/device_check.py "$@"
