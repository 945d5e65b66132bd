#!/usr/bin/env bash
# The tuner's evidence benchmark (benches/tune_quality.rs): guided against random tuning, model
# accuracy, and the tuned convolution against numpy, on pocl. Installs numpy in a venv under
# target/ for the baseline (quietly when it is there). About half an hour on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
venv=target/bench-venv
if ! "$venv/bin/python" -c "import numpy" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet numpy
fi
MAPSAT_PYTHON="$venv/bin/python" cargo bench --bench tune_quality "$@"
