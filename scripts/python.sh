#!/usr/bin/env bash
# mapsat's Python package (python/: the extension built by maturin, numpy in and out) installed
# into target/py-venv, with numpy and pytest: quiet and quick when already there. Then, given
# arguments, runs them in that environment (`bash scripts/python.sh -m pytest python/tests`).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/py-venv
if [ ! -x "$venv/bin/maturin" ] || ! "$venv/bin/python" -c "import numpy, pytest" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "maturin>=1.5,<2" "numpy>=1.21" pytest
fi
# An editable install: the Python half is read from python/python/, the extension rebuilt here.
log=target/py-venv/maturin.log
if ! (cd python && VIRTUAL_ENV="$PWD/../$venv" PATH="$PWD/../$venv/bin:$PATH" maturin develop --quiet) >"$log" 2>&1; then
  cat "$log" >&2
  echo "the mapsat Python package did not build" >&2
  exit 1
fi
if [ $# -gt 0 ]; then
  "$venv/bin/python" "$@"
fi
