#!/usr/bin/env bash
# Tunes the 3x3 convolution layers of VGG-16 (batch 1, stride 1, padding 1; Simonyan & Zisserman)
# with examples/conv_hwio.lift, one `mapsat tune` per layer, each starting from the learned model
# of the layer before (--model: transfer), and prints a Markdown table of the best kernels.
#
#   bash scripts/vgg16.sh [--layers conv5_1,conv4_1] [--trials 64] [-- EXTRA TUNE FLAGS]
#
# Extra flags go to every tune: `-- --device cuda:0` tunes CUDA kernels on a GPU (compare with
# cuDNN there); the default device is the first OpenCL one (pocl on a CPU). Results go to
# target/vgg16/LAYER/ (best kernel, report, log). The interpreter checks every layer's kernels
# once: the largest layers take a minute or more of it on 2 cores. With MAPSAT_PYTHON set to a
# Python that has numpy (scripts/bench.sh makes target/bench-venv), each layer is also run as
# numpy's im2col + GEMM with the same HWIO weights (scripts/numpy_conv.py), on the CPU.
set -euo pipefail
cd "$(dirname "$0")/.."

# name inH=inW inChs outChs (the 13 layers; conv3_3, conv4_3, conv5_2 and conv5_3 repeat a shape).
all="conv1_1 224 3 64
conv1_2 224 64 64
conv2_1 112 64 128
conv2_2 112 128 128
conv3_1 56 128 256
conv3_2 56 256 256
conv3_3 56 256 256
conv4_1 28 256 512
conv4_2 28 512 512
conv4_3 28 512 512
conv5_1 14 512 512
conv5_2 14 512 512
conv5_3 14 512 512"

layers="" trials=64 extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --layers) layers="$2"; shift 2 ;;
    --trials) trials="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "unknown argument $1 (see the comment at the top of $0)" >&2; exit 2 ;;
  esac
done

cargo build --release --quiet
bin=target/release/mapsat
out=target/vgg16
mkdir -p "$out"
rows=()
model=()
while read -r name hw cin cout; do
  if [ -n "$layers" ] && [[ ",$layers," != *",$name,"* ]]; then
    continue
  fi
  dir="$out/$name"
  rm -rf "$dir"
  sizes="inH=$hw,inW=$hw,inChs=$cin,outChs=$cout"
  echo "== $name: mapsat tune examples/conv_hwio.lift --size $sizes --trials $trials ${model[*]} ${extra[*]}" >&2
  "$bin" tune examples/conv_hwio.lift --size "$sizes" --trials "$trials" --random-trials 0 \
    "${model[@]}" "${extra[@]}" -o "$dir" >&2
  model=(--model "$dir/tune.jsonl.model.json")
  numpy="-"
  if [ -n "${MAPSAT_PYTHON:-}" ]; then
    numpy=$("$MAPSAT_PYTHON" scripts/numpy_conv.py "$hw" "$hw" "$cin" "$cout" --hwio)
  fi
  rows+=("$(python3 - "$dir/report.json" "$name" "$hw" "$cin" "$cout" "$numpy" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
name, hw, cin, cout, numpy = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
gflop = 2 * hw * hw * cin * cout * 9 / 1e9
b = r["best"]
tuning = ",".join(f"{k}={v}" for k, v in sorted(b["tuning"].items()))
row = [name, f"{cin}->{cout}", hw, f"{gflop:.3f}", f"{r['best_ms']:.4f}", f"{r['best_gflops']:.1f}", numpy]
print("| " + " | ".join(map(str, row)) + f" | `{tuning}` `{b['mapping']}` {b['local']} |")
EOF
)")
done <<< "$all"

echo "| layer | channels | H=W | GFLOP | best ms | GFLOP/s | numpy im2col + GEMM GFLOP/s | tunable sizes, mapping, work group |"
echo "|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
