#!/usr/bin/env bash
# The whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --no-fail-fast
else
  cargo test --workspace --no-fail-fast
fi
