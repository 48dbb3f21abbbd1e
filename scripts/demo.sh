#!/usr/bin/env bash
# The main job: build Onyx, make a small model (a two-layer MLP with a Relu,
# written with the onnx Python helpers) and run it with `onyx run` and `onyx perf`.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target onyx_cli
mkdir -p build/demo
/usr/bin/python3 scripts/make_demo_model.py build/demo
echo "== onyx run"
build/onyx run build/demo/mlp.onnx --input build/demo/x.npy
echo "== expected (numpy)"
cat build/demo/expected.txt
echo "== onyx perf"
build/onyx perf build/demo/mlp.onnx --runs 50
