#!/usr/bin/env bash
# The whole test suite, as CI runs it: cargo-nextest's `ci` profile (.config/nextest.toml), which
# adds the exhaustive checks the everyday `cargo nextest run` leaves out, with 30 sampled
# mappings per example in tuner/tests/soundness.rs, and a larger differential test
# (tuner/tests/differential: more mappings per kernel, more generated pipelines); then the Python
# package's tests (python/tests, pytest, against numpy). See docs/testing.md.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export MAPSAT_SOUNDNESS_SAMPLES="${MAPSAT_SOUNDNESS_SAMPLES:-30}"
export MAPSAT_DIFFERENTIAL_SAMPLES="${MAPSAT_DIFFERENTIAL_SAMPLES:-4}"
export MAPSAT_DIFFERENTIAL_PROGRAMS="${MAPSAT_DIFFERENTIAL_PROGRAMS:-30}"
if cargo nextest --version >/dev/null 2>&1; then
  cargo test --workspace --doc  # nextest does not run doctests
  cargo nextest run --workspace --profile ci --no-fail-fast
else
  cargo test --workspace --no-fail-fast  # without nextest: every test, doctests included
fi
bash scripts/python.sh -m pytest -q python/tests
