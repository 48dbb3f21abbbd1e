#!/usr/bin/env python3
"""Times classic-ML models in Onyx's Python package and in onnxruntime, side by side.

Trains seeded scikit-learn models (3-class data with 20 features; the
forests on 2 classes), exports them with skl2onnx (classifiers without
ZipMap unless the name says so), and times `run` at batch 1 and 1000 in
both runtimes with the same thread count: two alternating rounds, each the
median of many calls, the better round kept. Prints ORT/Onyx per model and
batch (> 1: Onyx is faster). A benchmark, not a test: outputs are checked by
scripts/check_sklearn_models.py.

Usage: python3 scripts/bench_sklearn.py [--threads 1] [NAME_SUBSTRING ...]
Needs numpy, onnxruntime, scikit-learn, skl2onnx and the installed onyx package."""
import argparse
import statistics
import time
import warnings

import numpy as np
import onnxruntime
from sklearn import ensemble, linear_model, neighbors, pipeline, preprocessing, svm
from sklearn.datasets import make_classification
from skl2onnx import to_onnx

import onyx

MODELS = [  # name, estimator, ZipMap kept, binary data
    ("LogisticRegression", lambda: linear_model.LogisticRegression(max_iter=300), False, False),
    ("LogisticRegression_zipmap", lambda: linear_model.LogisticRegression(max_iter=300), True, False),
    ("StandardScaler_LogisticRegression",
     lambda: pipeline.make_pipeline(preprocessing.StandardScaler(), linear_model.LogisticRegression(max_iter=300)),
     False, False),
    ("SVC_rbf", lambda: svm.SVC(), False, False),
    ("LinearSVC", lambda: svm.LinearSVC(), False, False),
    ("RandomForest_50_depth8", lambda: ensemble.RandomForestClassifier(50, max_depth=8, random_state=0), False, False),
    ("RandomForest_100_depth10", lambda: ensemble.RandomForestClassifier(100, max_depth=10, random_state=0), False, True),
    ("GradientBoosting_100_depth4",
     lambda: ensemble.GradientBoostingClassifier(n_estimators=100, max_depth=4, random_state=0), False, True),
    ("KNeighbors_5", lambda: neighbors.KNeighborsClassifier(5), False, False),
]


def export(model, X, zipmap):
    final = model.steps[-1][1] if hasattr(model, "steps") else model
    options = None if zipmap or not hasattr(final, "predict_proba") else {id(final): {"zipmap": False}}
    return to_onnx(model, X[:1], options=options, target_opset={"": 17, "ai.onnx.ml": 3}).SerializeToString()


def median_call(sess, feeds, calls):
    sess.run(None, feeds)
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    data = {}
    for binary in (False, True):
        X, y = make_classification(6000, 20, n_informative=10, n_classes=2 if binary else 3, random_state=0)
        data[binary] = (X.astype(np.float32), y)
    for name, make, zipmap, binary in MODELS:
        if args.names and not any(n in name for n in args.names):
            continue
        X, y = data[binary]
        model = make().fit(X[:3000], y[:3000])
        onx = export(model, X, zipmap)
        so_ort, so_onyx = onnxruntime.SessionOptions(), onyx.SessionOptions()
        so_ort.intra_op_num_threads = so_onyx.intra_op_num_threads = args.threads
        sessions = {"ort": onnxruntime.InferenceSession(onx, so_ort), "onyx": onyx.InferenceSession(onx, so_onyx)}
        line = f"{name:36s}"
        for batch in (1, 1000):
            feeds = {"X": X[3000:3000 + batch]}
            best = {"ort": float("inf"), "onyx": float("inf")}
            for _ in range(2):
                for runtime in ("ort", "onyx"):
                    calls = 300 if batch == 1 else 20
                    best[runtime] = min(best[runtime], median_call(sessions[runtime], feeds, calls))
            line += (f"  batch {batch}: ORT {best['ort'] * 1e3:.3f} ms, Onyx {best['onyx'] * 1e3:.3f} ms,"
                     f" ORT/Onyx {best['ort'] / best['onyx']:.2f}")
        print(line, flush=True)


if __name__ == "__main__":
    main()
