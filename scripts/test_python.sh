#!/usr/bin/env bash
# Builds and installs the Python package (`pip install .`: scikit-build-core +
# pybind11, CMake build folder build-py/ kept between runs so reinstalls are
# incremental) and runs its pytest suite, which compares against onnxruntime.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
missing=()
for mod in scikit_build_core pybind11 pytest numpy onnx onnxruntime; do
  "$PY" -c "import $mod" 2>/dev/null || missing+=("$mod")
done
if [ ${#missing[@]} -gt 0 ]; then
  pkgs=()
  for m in "${missing[@]}"; do
    case "$m" in
      scikit_build_core) pkgs+=("scikit-build-core>=0.10") ;;
      pybind11) pkgs+=("pybind11>=2.12") ;;
      *) pkgs+=("$m") ;;
    esac
  done
  "$PY" -m pip install -q --root-user-action=ignore "${pkgs[@]}"
fi
# --no-build-isolation: use the build tools installed above (no download per
# run) and keep the CMake build folder valid between runs.
"$PY" -m pip install -q --root-user-action=ignore --no-build-isolation ./
# Run from python/tests so the installed package (not python/onyx) is imported.
"$PY" -m pytest -q -p no:cacheprovider python/tests "$@"
