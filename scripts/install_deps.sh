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
  libopenjp2-7-dev libwebp-dev python3-onnx python3-numpy locales >/dev/null
# onnxruntime's StringNormalizer (the reference in scripts/check_sklearn_models.py)
# needs the en_US.UTF-8 locale to change case.
if ! locale -a 2>/dev/null | grep -qi '^en_US.utf8$'; then
  $SUDO sed -i 's/^# *en_US.UTF-8 UTF-8/en_US.UTF-8 UTF-8/' /etc/locale.gen
  $SUDO locale-gen >/dev/null
fi
# The Python package and its tests (for the python3 on PATH).
# onnx is pinned: scripts/test.sh generates its node conformance cases.
# scikit-learn and skl2onnx make the classic-ML models scripts/check_sklearn_models.py runs;
# onnx-ir is what onnxruntime's MatMulNBitsQuantizer needs (scripts/contrib_cases/llm.py);
# lightgbm and onnxmltools make the LightGBM cases (xgboost and catboost, 200+ MB each, are left to
# whoever runs those cases by hand).
python3 -m pip install -q --root-user-action=ignore numpy "onnx==1.23.2" onnxruntime pytest "scikit-build-core>=0.10" "pybind11>=2.12" \
  scikit-learn skl2onnx onnx-ir lightgbm onnxmltools
if [ "${ONYX_WITH_MODELS:-0}" = "1" ]; then
  # Only for building the benchmark models (shared/models/make_models.py).
  $SUDO apt-get install -y -qq --no-install-recommends python3-torch python3-torchvision >/dev/null
fi
echo "dependencies installed"
