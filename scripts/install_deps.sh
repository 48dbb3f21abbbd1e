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
  libgtest-dev libgmock-dev libdnnl-dev libjpeg62-turbo-dev libpng-dev \
  libopenjp2-7-dev libwebp-dev python3-onnx python3-numpy >/dev/null
# The Python package and its tests (for the python3 on PATH).
# onnx is pinned: scripts/test.sh generates its node conformance cases.
# scikit-learn and skl2onnx make the classic-ML models scripts/check_sklearn_models.py runs;
# onnx-ir is what onnxruntime's MatMulNBitsQuantizer needs (scripts/contrib_cases/llm.py).
python3 -m pip install -q --root-user-action=ignore numpy "onnx==1.23.2" onnxruntime pytest "scikit-build-core>=0.10" "pybind11>=2.12" \
  scikit-learn skl2onnx onnx-ir
if [ "${ONYX_WITH_MODELS:-0}" = "1" ]; then
  # Only for building the benchmark models (shared/models/make_models.py).
  $SUDO apt-get install -y -qq --no-install-recommends python3-torch python3-torchvision >/dev/null
fi
echo "dependencies installed"
