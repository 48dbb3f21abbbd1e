#!/usr/bin/env python3
"""Checks Onyx against ONNX Runtime on scikit-learn models exported with skl2onnx.

Each case trains a small scikit-learn estimator on seeded synthetic data
(make_classification / make_regression with a fixed random_state), converts
it with skl2onnx (classifiers without ZipMap unless the case asks for it),
runs held-out rows through onnxruntime and through
`onyx run MODEL --input NAME=FILE.npy --output-dir DIR`, and compares every
output: labels (integer or string) must be equal, float outputs within
--rtol/--atol (|onyx - ort| <= atol + rtol |ort|), shapes and types the
same. One line per model: name, the largest absolute float difference,
OK or FAIL, the model's ai.onnx.ml ops, and what failed.
Exit status 1 if any model fails.

Usage:
  scripts/check_sklearn_models.py [--onyx build/onyx] [--rtol 1e-4] [--atol 1e-5]
                                  [--rows 64] [--only sklearn|nodes] [--keep DIR] [--list]
                                  [NAME_SUBSTRING ...]

  NAME_SUBSTRING  run only the cases whose name contains one of them
  --keep DIR      keep each model (NAME.onnx) and its inputs (NAME.INPUT.npy) in DIR
  --list          print the case names and exit

Besides the exported models, NODE_CASES are one-node models built with
onnx.helper for what skl2onnx never emits: every post_transform, int64 /
int32 / double and 1-D inputs, the SVM forms without support vectors,
SVMRegressor with one_class=1. Run only those with `--only nodes`, only the
scikit-learn ones with `--only sklearn`.

To add an estimator (tree ensembles, pipelines, ...), append a Case to CASES:
a name, a function returning the unfitted estimator, and a dataset (one of
the dataset functions below, or a new one returning X_train, y_train, X_test).
A NodeCase takes a name, an op, its attributes and an input array.

Needs numpy, onnx, onnxruntime, scikit-learn, skl2onnx.
"""
import argparse
import os
import sys
import tempfile
import warnings
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np
import onnx
import onnxruntime as ort
from sklearn.datasets import make_classification, make_regression
from sklearn.linear_model import (LinearRegression, LogisticRegression, Ridge, RidgeClassifier, SGDClassifier,
                                  SGDRegressor)
from sklearn.ensemble import (AdaBoostClassifier, BaggingClassifier, ExtraTreesClassifier, ExtraTreesRegressor,
                              GradientBoostingClassifier, GradientBoostingRegressor, RandomForestClassifier,
                              RandomForestRegressor)
from sklearn.multiclass import OneVsRestClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor
from sklearn.svm import SVC, SVR, LinearSVC, LinearSVR, NuSVC, NuSVR, OneClassSVM
from skl2onnx import to_onnx

from ort_compare import compare, compare_maps, parse_output, run_onyx

SEED = 0
N_FEATURES = 6

# ---------------------------------------------------------------- datasets
# Each returns (X_train, y_train or None, X_test) with float32 X.

STRING_CLASSES = np.array(["ant", "bee", "cat", "dog", "eel"])


def _split(X, y, n_test):
    X = X.astype(np.float32)
    return X[n_test:], (None if y is None else y[n_test:]), X[:n_test]


def classification(n_classes, labels="int"):
    """make_classification with n_classes; labels 'int' (0..k-1) or 'str' (animal names)."""
    def make(n_test):
        X, y = make_classification(n_samples=200 + n_test, n_features=N_FEATURES, n_informative=4, n_redundant=1,
                                   n_classes=n_classes, n_clusters_per_class=1, random_state=SEED)
        if labels == "str":
            y = STRING_CLASSES[y]
        return _split(X, y, n_test)
    return make


def regression(n_targets=1):
    def make(n_test):
        X, y = make_regression(n_samples=200 + n_test, n_features=N_FEATURES, n_informative=4, n_targets=n_targets,
                               noise=0.5, random_state=SEED)
        return _split(X, y / np.abs(y).max(), n_test)  # targets of order 1
    return make


def unlabeled():
    """For novelty detection (OneClassSVM): the classification features without labels."""
    def make(n_test):
        X_train, _, X_test = classification(2)(n_test)
        return X_train, None, X_test
    return make


# ---------------------------------------------------------------- cases

@dataclass
class Case:
    """A scikit-learn estimator, trained on `dataset` and exported with skl2onnx."""
    name: str
    make_model: Callable[[], object]
    dataset: Callable[[int], tuple]
    convert_options: dict = field(default_factory=dict)  # extra skl2onnx options for this estimator
    kind = "sklearn"

    def build(self, args):
        """Returns (ModelProto, {input name: array})."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # convergence and deprecation warnings of tiny fits
            X_train, y_train, X_test = self.dataset(args.rows)
            model = self.make_model()
            model.fit(X_train) if y_train is None else model.fit(X_train, y_train)
            onx = convert(model, X_test, self.convert_options, args.opset)
        return onx, {onx.graph.input[0].name: X_test}


def _svc(kernel, probability, nu=False):
    cls = NuSVC if nu else SVC
    return lambda: cls(kernel=kernel, probability=probability, random_state=SEED)


CASES = [
    # linear classifiers -> LinearClassifier
    Case("LogisticRegression_binary", lambda: LogisticRegression(max_iter=500), classification(2)),
    Case("LogisticRegression_binary_str", lambda: LogisticRegression(max_iter=500), classification(2, "str")),
    Case("LogisticRegression_multinomial_3", lambda: LogisticRegression(max_iter=500), classification(3)),
    Case("LogisticRegression_multinomial_4_str", lambda: LogisticRegression(max_iter=500), classification(4, "str")),
    Case("LogisticRegression_ovr_3", lambda: OneVsRestClassifier(LogisticRegression(max_iter=500)), classification(3)),
    Case("LinearSVC_binary", lambda: LinearSVC(random_state=SEED), classification(2)),
    Case("LinearSVC_3_str", lambda: LinearSVC(random_state=SEED), classification(3, "str")),
    Case("SGDClassifier_binary", lambda: SGDClassifier(random_state=SEED), classification(2)),
    Case("SGDClassifier_3", lambda: SGDClassifier(random_state=SEED), classification(3)),
    Case("SGDClassifier_log_3", lambda: SGDClassifier(loss="log_loss", random_state=SEED), classification(3)),
    Case("RidgeClassifier_binary", lambda: RidgeClassifier(), classification(2)),
    Case("RidgeClassifier_3_str", lambda: RidgeClassifier(), classification(3, "str")),
    # linear regressors -> LinearRegressor
    Case("LinearRegression", lambda: LinearRegression(), regression()),
    Case("Ridge_3_targets", lambda: Ridge(alpha=0.5), regression(n_targets=3)),
    Case("LinearSVR", lambda: LinearSVR(random_state=SEED, max_iter=5000), regression()),
    Case("SGDRegressor", lambda: SGDRegressor(random_state=SEED), regression()),
    # support vector classifiers -> SVMClassifier
    *[Case(f"SVC_{kernel}_{n}{'_proba' if proba else ''}", _svc(kernel, proba), classification(n))
      for kernel in ("linear", "rbf", "poly", "sigmoid") for n in (2, 3) for proba in (False, True)],
    Case("SVC_rbf_4_str", _svc("rbf", False), classification(4, "str")),
    Case("SVC_rbf_4_str_proba", _svc("rbf", True), classification(4, "str")),
    Case("SVC_rbf_7_proba", _svc("rbf", True), classification(7)),
    Case("NuSVC_rbf_2", _svc("rbf", False, nu=True), classification(2)),
    Case("NuSVC_rbf_3_proba", _svc("rbf", True, nu=True), classification(3)),
    Case("NuSVC_poly_3_str", _svc("poly", False, nu=True), classification(3, "str")),
    # support vector regressors -> SVMRegressor
    Case("SVR_rbf", lambda: SVR(), regression()),
    Case("SVR_linear", lambda: SVR(kernel="linear"), regression()),
    Case("SVR_poly", lambda: SVR(kernel="poly", degree=2, coef0=1.0), regression()),
    Case("SVR_sigmoid", lambda: SVR(kernel="sigmoid", gamma=0.05), regression()),
    Case("NuSVR_rbf", lambda: NuSVR(), regression()),
    Case("OneClassSVM_rbf", lambda: OneClassSVM(gamma="scale", nu=0.2), unlabeled()),
    Case("OneClassSVM_linear", lambda: OneClassSVM(kernel="linear", nu=0.2), unlabeled()),
    # tree ensembles (TreeEnsembleClassifier / TreeEnsembleRegressor)
    Case("DecisionTree_2", lambda: DecisionTreeClassifier(max_depth=6, random_state=SEED), classification(2)),
    Case("DecisionTree_3_str_zipmap", lambda: DecisionTreeClassifier(max_depth=6, random_state=SEED),
         classification(3, "str"), {"zipmap": True}),
    Case("RandomForest_2", lambda: RandomForestClassifier(20, max_depth=8, random_state=SEED), classification(2)),
    Case("RandomForest_2_zipmap", lambda: RandomForestClassifier(20, max_depth=8, random_state=SEED),
         classification(2), {"zipmap": True}),
    Case("RandomForest_4_str", lambda: RandomForestClassifier(20, random_state=SEED), classification(4, "str")),
    Case("ExtraTrees_3", lambda: ExtraTreesClassifier(15, random_state=SEED), classification(3)),
    Case("GradientBoosting_2", lambda: GradientBoostingClassifier(n_estimators=30, random_state=SEED), classification(2)),
    Case("GradientBoosting_3_zipmap", lambda: GradientBoostingClassifier(n_estimators=20, random_state=SEED),
         classification(3), {"zipmap": True}),
    Case("AdaBoost_3", lambda: AdaBoostClassifier(n_estimators=10, random_state=SEED), classification(3)),
    Case("Bagging_3", lambda: BaggingClassifier(DecisionTreeClassifier(max_depth=4), n_estimators=5, random_state=SEED),
         classification(3)),
    Case("Pipeline_scaler_forest_3", lambda: make_pipeline(StandardScaler(), RandomForestClassifier(10, random_state=SEED)),
         classification(3)),
    Case("DecisionTreeRegressor", lambda: DecisionTreeRegressor(max_depth=6, random_state=SEED), regression()),
    Case("RandomForestRegressor_2_targets", lambda: RandomForestRegressor(20, random_state=SEED), regression(n_targets=2)),
    Case("ExtraTreesRegressor", lambda: ExtraTreesRegressor(10, random_state=SEED), regression()),
    Case("GradientBoostingRegressor", lambda: GradientBoostingRegressor(n_estimators=40, random_state=SEED), regression()),
    # ZipMap after the linear and SVM classifiers
    Case("LogisticRegression_3_zipmap", lambda: LogisticRegression(max_iter=500), classification(3), {"zipmap": True}),
    Case("SVC_rbf_2_proba_zipmap", _svc("rbf", True), classification(2), {"zipmap": True}),
]



# ---------------------------------------------------------------- one-node cases

ML_OPSET = 1  # LinearClassifier, LinearRegressor, SVMClassifier, SVMRegressor have had one version
POST_TRANSFORMS = ("NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO", "PROBIT")
_ONNX_TYPES = {np.dtype(np.float32): onnx.TensorProto.FLOAT, np.dtype(np.float64): onnx.TensorProto.DOUBLE,
               np.dtype(np.int64): onnx.TensorProto.INT64, np.dtype(np.int32): onnx.TensorProto.INT32}


@dataclass
class NodeCase:
    """One ai.onnx.ml node with the given attributes, run on X."""
    name: str
    op: str
    attrs: dict
    X: np.ndarray
    kind = "nodes"

    def build(self, args):
        from onnx import helper
        classifier = self.op.endswith("Classifier")
        outputs = [helper.make_tensor_value_info("Y", onnx.TensorProto.FLOAT, None)]
        if classifier:
            label_type = onnx.TensorProto.STRING if "classlabels_strings" in self.attrs else onnx.TensorProto.INT64
            outputs = [helper.make_tensor_value_info("Y", label_type, None),
                       helper.make_tensor_value_info("Z", onnx.TensorProto.FLOAT, None)]
        node = helper.make_node(self.op, ["X"], [o.name for o in outputs], domain="ai.onnx.ml", **self.attrs)
        graph = helper.make_graph([node], self.name, [helper.make_tensor_value_info("X", _ONNX_TYPES[self.X.dtype], None)],
                                  outputs)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                        helper.make_opsetid("ai.onnx.ml", ML_OPSET)])
        model.ir_version = 8
        return model, {"X": self.X}


def _rows(n, f, seed, scale=1.0):
    """n rows of f features, normal, with one all-zero row (scores tie at the intercepts)."""
    X = np.random.default_rng(seed).normal(scale=scale, size=(n, f)).astype(np.float32)
    X[0] = 0
    return X


# Three classes, one support vector each (e0, e1, e2, linear kernel): the pair
# (i, j) scores x_i - x_j + rho_ij.
_SVM3 = dict(kernel_type="LINEAR", kernel_params=[0.0, 0.0, 0.0], support_vectors=list(np.eye(3).ravel()),
             vectors_per_class=[1, 1, 1], coefficients=[1.0, -1.0, -1.0, 1.0, 1.0, -1.0], rho=[0.0, -0.5, 0.25])
_PROBS3 = dict(prob_a=[-1.0, -2.0, -1.5], prob_b=[0.1, -0.2, 0.3])
# Two classes, RBF, two support vectors per class.
_SVM2 = dict(kernel_type="RBF", kernel_params=[0.5, 0.0, 0.0], support_vectors=[0.0, 0.0, 1.0, 0.5, 1.0, 1.0, -0.5, 1.5],
             vectors_per_class=[2, 2], coefficients=[1.0, 0.5, -1.0, -0.5], rho=[0.1])
_SVR = dict(support_vectors=[1.0, 0.0, 0.0, 1.0, 0.5, -0.5], n_supports=3, coefficients=[1.0, -0.5, 0.25], rho=[0.1],
            kernel_params=[0.5, 1.0, 3.0])
# No support vectors: ONNX Runtime wants kernel_params all the same.
_LINEAR_FORM = dict(kernel_type="LINEAR", kernel_params=[0.0, 0.0, 0.0])
_LC3 = dict(coefficients=[1.0, 0.0, -0.5, 0.0, 1.0, 0.5, -1.0, -1.0, 0.0], intercepts=[0.0, 0.5, 0.0],
            classlabels_ints=[7, 9, 11])


def _node_cases():
    X2, X3 = _rows(16, 2, 1), _rows(16, 3, 2)
    unit = np.linspace(0, 1, 101, dtype=np.float32).reshape(-1, 1)  # scores across [0, 1] for PROBIT
    cases = []
    for pt in POST_TRANSFORMS:
        cases += [
            NodeCase(f"LinearClassifier_3_{pt}", "LinearClassifier", {**_LC3, "post_transform": pt}, X3),
            NodeCase(f"LinearRegressor_3_targets_{pt}", "LinearRegressor",
                     dict(coefficients=_LC3["coefficients"], intercepts=[0.0, 0.5, 0.0], targets=3, post_transform=pt), X3),
            NodeCase(f"LinearRegressor_1_target_{pt}", "LinearRegressor",
                     dict(coefficients=[1.0], intercepts=[0.0], post_transform=pt), unit),
            NodeCase(f"SVMClassifier_3_{pt}", "SVMClassifier",
                     {**_SVM3, "classlabels_strings": ["a", "b", "c"], "post_transform": pt}, X3),
            NodeCase(f"SVMClassifier_3_proba_{pt}", "SVMClassifier",
                     {**_SVM3, **_PROBS3, "classlabels_ints": [7, 9, 11], "post_transform": pt}, X3),
            NodeCase(f"SVMClassifier_2_proba_{pt}", "SVMClassifier",
                     {**_SVM2, "prob_a": [-2.0], "prob_b": [0.3], "classlabels_ints": [0, 1], "post_transform": pt}, X2),
            NodeCase(f"SVMClassifier_linear_form_3_{pt}", "SVMClassifier",
                     dict(_LINEAR_FORM, classlabels_ints=[7, 9, 11], coefficients=_LC3["coefficients"], rho=[0.5],
                          post_transform=pt), X3),
            NodeCase(f"SVMRegressor_{pt}", "SVMRegressor", {**_SVR, "kernel_type": "RBF", "post_transform": pt}, X2),
        ]
        # One score expanded to two columns: under PROBIT ONNX Runtime leaves part of Z unset, so no comparison.
        if pt != "PROBIT":
            cases += [
                NodeCase(f"LinearClassifier_2_single_score_{pt}", "LinearClassifier",
                         dict(coefficients=[0.5, -0.25], intercepts=[0.1], classlabels_strings=["no", "yes"],
                              post_transform=pt), X2),
                NodeCase(f"SVMClassifier_2_{pt}", "SVMClassifier", {**_SVM2, "classlabels_ints": [7, 9], "post_transform": pt}, X2),
            ]
    for dtype in (np.int64, np.int32, np.float64):
        Xi = np.round(X3 * 2).astype(dtype)
        cases += [NodeCase(f"LinearClassifier_3_{np.dtype(dtype).name}_X", "LinearClassifier", _LC3, Xi),
                  NodeCase(f"SVMClassifier_3_proba_{np.dtype(dtype).name}_X", "SVMClassifier",
                           {**_SVM3, **_PROBS3, "classlabels_ints": [7, 9, 11]}, Xi)]
    cases += [
        NodeCase("LinearClassifier_3_1D_X", "LinearClassifier", _LC3, X3[3]),
        NodeCase("LinearRegressor_3_targets_1D_X", "LinearRegressor",
                 dict(coefficients=_LC3["coefficients"], targets=3), X3[3]),
        NodeCase("SVMClassifier_2_1D_X", "SVMClassifier", {**_SVM2, "classlabels_ints": [7, 9]}, X2[5]),
        NodeCase("SVMRegressor_1D_X", "SVMRegressor", {**_SVR, "kernel_type": "POLY"}, X2[5]),
        NodeCase("SVMClassifier_linear_form_2_mixed", "SVMClassifier",
                 dict(_LINEAR_FORM, classlabels_ints=[7, 9], coefficients=[1.0, -0.5, -1.0, 0.5], rho=[-0.2]), X2),
        NodeCase("SVMClassifier_linear_form_2_nonneg", "SVMClassifier",
                 dict(_LINEAR_FORM, classlabels_ints=[7, 9], coefficients=[0.3, 0.1, 0.2, 0.0], rho=[0.0]), X2),
        NodeCase("SVMClassifier_linear_form_2_proba", "SVMClassifier",
                 dict(_LINEAR_FORM, classlabels_ints=[7, 9], coefficients=[1.0, -0.5, -1.0, 0.5], rho=[-0.2],
                      prob_a=[1.0], prob_b=[0.0]), X2),
        NodeCase("SVMClassifier_3_votes_tie", "SVMClassifier",
                 {**_SVM3, "rho": [0.0, -2.0, 0.5], "classlabels_ints": [7, 9, 11]},
                 np.array([[1, 0, 0], [3, 2, 1], [1, 1, 1], [0, 0, 0]], np.float32)),
        NodeCase("SVMRegressor_linear_form", "SVMRegressor", dict(_LINEAR_FORM, coefficients=[1.0, 2.0], rho=[0.1]), X2),
        NodeCase("SVMRegressor_linear_form_one_class", "SVMRegressor",
                 dict(_LINEAR_FORM, coefficients=[1.0, 2.0], rho=[0.1], one_class=1), X2),
    ]
    for kernel in ("LINEAR", "POLY", "RBF", "SIGMOID"):
        cases.append(NodeCase(f"SVMRegressor_{kernel}", "SVMRegressor", {**_SVR, "kernel_type": kernel}, X2))
        cases.append(NodeCase(f"SVMRegressor_one_class_{kernel}", "SVMRegressor",
                              {**_SVR, "kernel_type": kernel, "one_class": 1, "rho": [-0.3]}, X2))
    return cases


NODE_CASES = _node_cases()

# ---------------------------------------------------------------- conversion and running

def convert(model, X, extra_options, opset):
    """skl2onnx without ZipMap unless the case asks for it ({'zipmap': True});
    estimators without that option are converted as they are."""
    kwargs = {} if opset is None else {"target_opset": opset}
    try:
        return to_onnx(model, X[:1], options={"zipmap": False, **extra_options}, **kwargs)
    except (NameError, RuntimeError) as e:
        if "zipmap" not in str(e):
            raise
        return to_onnx(model, X[:1], options=extra_options or None, **kwargs)


def ml_ops(model):
    """The ai.onnx.ml op types of a model, for the report line."""
    return sorted({n.op_type for n in model.graph.node if n.domain == "ai.onnx.ml"})


def check_case(case, args):
    """Returns (largest float difference, problems, the model's ai.onnx.ml ops)."""
    onx, feeds = case.build(args)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.keep or tmp
        model_path = os.path.join(workdir, f"{case.name}.onnx")
        onnx.save(onx, model_path)
        so = ort.SessionOptions()
        so.log_severity_level = 3  # ORT warns when a skl2onnx output shape differs from its declared one
        # One thread: with more, ORT splits a small batch's trees across threads and
        # sums the parts in another order, so a random forest's 0.5 ties label
        # differently from run to run (seen on RandomForest_2: 2 of 64 rows).
        so.intra_op_num_threads = 1
        sess = ort.InferenceSession(model_path, so, providers=["CPUExecutionProvider"])
        if args.keep:
            for name, value in feeds.items():
                np.save(os.path.join(workdir, f"{case.name}.{name}.npy"), value)
        expected = sess.run(None, feeds)
        case_dir = os.path.join(workdir, case.name + ".run")
        os.makedirs(case_dir, exist_ok=True)
        got = run_onyx(args.onyx, model_path, feeds, case_dir, args.threads)
    if len(got) != len(expected):
        return 0.0, [f"{len(got)} outputs, expected {len(expected)}"], ml_ops(onx)
    worst, problems = 0.0, []
    for out, e, g in zip(sess.get_outputs(), expected, got):
        g = parse_output(g, e)
        if isinstance(e, list):
            d, problem = compare_maps(out.name, e, g, args.rtol, args.atol)
        else:
            d, problem = compare(out.name, np.asarray(e), g, args.rtol, args.atol)
        worst = max(worst, d)
        if problem:
            problems.append(problem)
    return worst, problems, ml_ops(onx)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--onyx", default="build/onyx", help="the onyx CLI (default build/onyx)")
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--atol", type=float, default=1e-5)
    ap.add_argument("--rows", type=int, default=64, help="held-out rows run through both runtimes")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--opset", type=int, default=None, help="skl2onnx target_opset (default: its own)")
    ap.add_argument("--only", choices=("sklearn", "nodes"), help="run only the exported models or the one-node cases")
    ap.add_argument("--keep", help="keep models and inputs in this folder")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    ap.add_argument("names", nargs="*", help="run only cases whose name contains one of these")
    args = ap.parse_args()
    cases = [c for c in CASES + NODE_CASES
             if (not args.only or c.kind == args.only) and (not args.names or any(n in c.name for n in args.names))]
    if args.list:
        print("\n".join(c.name for c in cases))
        return 0
    if not cases:
        print("no case matches", args.names)
        return 1
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    ort.set_default_logger_severity(3)
    failed = 0
    for case in cases:
        try:
            worst, problems, ops = check_case(case, args)
        except Exception as e:  # a conversion or run that fails is a failed case, not a stopped script
            worst, problems, ops = float("nan"), [f"{type(e).__name__}: {e}"], []
        failed += bool(problems)
        status = "OK  " if not problems else "FAIL"
        line = f"{case.name:44s} max|diff| {worst:9.2e}  {status}  {','.join(ops)}"
        print(line + ("  " + "; ".join(problems) if problems else ""), flush=True)
    print(f"{len(cases) - failed} of {len(cases)} models match ONNX Runtime")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
