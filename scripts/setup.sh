#!/usr/bin/env bash
# Installs the system packages mapsat needs, once; quiet and quick when they are already there.
set -euo pipefail
# clinfo: an independent reading of the OpenCL device limits, for tuner/tests/opencl_profile.rs.
# python3-venv: the numpy baseline of scripts/bench.sh.
packages=(libz3-dev libclang-dev pocl-opencl-icd ocl-icd-opencl-dev clang-14 clinfo python3-venv)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
command -v cargo >/dev/null || { echo "cargo is required (https://rustup.rs)" >&2; exit 1; }
