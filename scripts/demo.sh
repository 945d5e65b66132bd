#!/usr/bin/env bash
# The main job on the bundled example: tune the convolution written as an outer-product register
# block (examples/conv_hwio.lift: weights in HWIO layout, 28x28 pixels, 32 -> 32 channels) on the
# default device (pocl on the CPU), about a minute on 2 cores. Prints the best kernel's speed
# against the median valid candidate and writes the best kernel, a report and a plot to
# target/demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release --quiet
bin=target/release/mapsat
out=target/demo
rm -rf "$out"
echo "== mapsat tune examples/conv_hwio.lift --size inH=28,inW=28,inChs=32,outChs=32 -o $out"
$bin tune examples/conv_hwio.lift --size inH=28,inW=28,inChs=32,outChs=32 --trials 64 --random-trials 32 -o "$out"
