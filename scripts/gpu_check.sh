#!/bin/bash
# Checks the CUDA provider on a machine with an NVIDIA GPU (CUDA 13, cuBLAS,
# cuDNN 9). From the repository root:
#
#   scripts/gpu_check.sh [MODELS_DIR]
#
# 1. builds Onyx with the CUDA provider in build-cuda,
# 2. runs the unit tests (the CUDA ones run instead of skipping),
# 3. runs the ONNX conformance cases that the CUDA provider claims, on CUDA,
# 4. runs the five models of ../shared/models/make_models.py (from MODELS_DIR,
#    default /work/shared/models/out; made there with make_models.py when
#    missing and torch is installed) on CUDA and on the CPU, compares the
#    outputs (relative difference <= 1e-3) and times them on CUDA: plain run,
#    I/O binding, I/O binding + CUDA graph.
# Steps go on after a failure; the exit status is 1 when any failed.
# Set SKIP_BUILD=1 to reuse build-cuda, SKIP_CONFORMANCE=1 / SKIP_MODELS=1 to
# leave those steps out.
set -u
cd "$(dirname "$0")/.."
MODELS=${1:-/work/shared/models/out}
BUILD=build-cuda
STATUS=0
step() { echo; echo "== $*"; }
bad() { echo "FAILED: $*"; STATUS=1; }

step "device"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>/dev/null || echo "(nvidia-smi not available)"

if [ "${SKIP_BUILD:-0}" != 1 ]; then
  step "build ($BUILD)"
  cmake -S . -B $BUILD -G Ninja -DCMAKE_BUILD_TYPE=Release | grep -E "CUDA provider|oneDNN" || bad "configure"
  ninja -C $BUILD -j"$(nproc)" || { bad "build"; exit 1; }
fi

step "unit tests: CUDA provider"
$BUILD/tests/onyx_tests --gtest_filter='Cuda*:Partitioning*:Arena*:ConvAlgoCache*' || bad "CUDA unit tests"
step "unit tests: all"
$BUILD/tests/onyx_tests --gtest_brief=1 || bad "unit tests"

if [ "${SKIP_CONFORMANCE:-0}" != 1 ]; then
  step "conformance on CUDA (cases with at least one node on CUDA)"
  DATA=/usr/share/libonnx-testdata/data
  if [ -d $DATA ]; then
    $BUILD/onyx test --provider cuda --claimed-only --expect-fail tests/conformance_expected_failures.txt \
      $DATA/node $DATA/pytorch-converted $DATA/pytorch-operator $DATA/simple | tail -40 || bad "conformance on CUDA"
  else
    echo "no conformance data at $DATA (apt-get install libonnx-testdata)"
  fi
fi

if [ "${SKIP_MODELS:-0}" != 1 ]; then
  step "models: CUDA vs CPU ($MODELS)"
  NAMES="resnet50 mobilenet_v2 squeezenet1_1 bert_base bert_tiny"
  if [ ! -f "$MODELS/resnet50.onnx" ]; then
    if /usr/bin/python3 -c "import torch, torchvision" 2>/dev/null; then
      /usr/bin/python3 /work/shared/models/make_models.py "$MODELS" || bad "make_models.py"
    else
      echo "no models in $MODELS and no torch to make them: copy them there (make_models.py OUT_DIR)"
    fi
  fi
  OUT=$(mktemp -d)
  for m in $NAMES; do
    [ -f "$MODELS/$m.onnx" ] || { echo "skip $m: $MODELS/$m.onnx missing"; continue; }
    ins=()
    for f in "$MODELS/$m".input_*.npy; do [ -f "$f" ] && ins+=(--input "$f"); done
    for p in cpu cuda; do
      mkdir -p "$OUT/$m/$p"
      $BUILD/onyx run "$MODELS/$m.onnx" "${ins[@]}" --provider $p --output-dir "$OUT/$m/$p" > "$OUT/$m/$p.log" 2>&1 ||
        { bad "$m on $p"; cat "$OUT/$m/$p.log"; }
    done
    python3 scripts/compare_outputs.py "$OUT/$m/cpu" "$OUT/$m/cuda" 1e-3 "$m" || bad "$m: CUDA differs from the CPU"
    $BUILD/onyx run "$MODELS/$m.onnx" "${ins[@]}" --provider cuda --log-level verbose 2>&1 |
      grep -E "placement: (model|fallback)" | sed 's/^/  /'
  done

  step "latency on CUDA (median ms; batch 1 unless noted)"
  for m in $NAMES; do
    [ -f "$MODELS/$m.onnx" ] || continue
    for batch in 1 8; do
      case $m in resnet50|bert_base) ;; *) [ $batch = 1 ] || continue ;; esac
      for mode in plain iobinding cudagraph; do
        args=(--provider cuda -r 100 --warmup 20 --dim batch=$batch)
        case $m in bert_base) args+=(--dim seq=128) ;; bert_tiny) args+=(--dim seq=64) ;; esac
        [ $mode = iobinding ] && args+=(--io-binding)
        [ $mode = cudagraph ] && args+=(--io-binding --provider-option enable_cuda_graph=1)
        line=$($BUILD/onyx perf "$MODELS/$m.onnx" "${args[@]}" 2>&1 | tail -1)
        med=$(echo "$line" | python3 -c 'import json,sys
try: print("%.3f" % json.loads(sys.stdin.read())["median_ms"])
except Exception: print("error")')
        printf "  %-14s batch %d  %-10s %s ms\n" "$m" $batch $mode "$med"
        [ "$med" = error ] && echo "    $line"
      done
    done
  done
  echo
  echo "PyTorch on the same GPU: python3 scripts/bench_torch_cuda.py $MODELS (needs torch with CUDA)"
fi

echo
[ $STATUS = 0 ] && echo "gpu_check: all steps passed" || echo "gpu_check: some steps FAILED"
exit $STATUS
