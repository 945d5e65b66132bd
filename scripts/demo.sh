#!/usr/bin/env bash
# The main job on the bundled example: check, print and evaluate the direct convolution.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release --quiet
bin=target/release/mapsat
echo "== mapsat check examples/conv.lift"
$bin check examples/conv.lift
echo "== mapsat fmt examples/conv.lift"
$bin fmt examples/conv.lift
echo "== mapsat eval examples/conv.lift --random 1 -o target/conv_out.npy"
$bin eval examples/conv.lift --random 1 -o target/conv_out.npy
