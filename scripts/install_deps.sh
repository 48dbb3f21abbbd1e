#!/usr/bin/env bash
# Installs what building, testing and benchmarking Onyx needs on a fresh
# Debian 12 machine: compilers and libraries from apt, Python packages from pip.
set -euo pipefail
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential cmake ninja-build pkg-config \
  libprotobuf-dev protobuf-compiler libonnx-dev libonnx-testdata \
  libgtest-dev libgmock-dev python3-onnx python3-numpy >/dev/null
if [ "${ONYX_WITH_MODELS:-0}" = "1" ]; then
  # Only for building the benchmark models (shared/models/make_models.py).
  $SUDO apt-get install -y -qq --no-install-recommends python3-torch python3-torchvision >/dev/null
fi
if [ "${ONYX_WITH_ORT:-0}" = "1" ]; then
  python3 -m pip install -q numpy onnxruntime
fi
echo "dependencies installed"
