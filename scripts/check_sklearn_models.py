#!/usr/bin/env python3
"""Checks Onyx against ONNX Runtime on scikit-learn models exported with skl2onnx
(and gradient-boosting models from LightGBM and XGBoost through onnxmltools,
CatBoost through its own exporter).

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
A case for another library names it as its converter ('lightgbm' and 'xgboost'
go through onnxmltools, 'catboost' through its own exporter); when that library is not installed the case is reported
as not run and not counted.

Needs numpy, onnx, onnxruntime, scikit-learn, skl2onnx; lightgbm, xgboost,
catboost and onnxmltools for those cases. The text vectorizers' StringNormalizer
needs the en_US.UTF-8 locale in onnxruntime (Debian: locales, locale-gen).
"""
import argparse
import importlib.util
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
from sklearn.calibration import CalibratedClassifierCV
from sklearn.cluster import KMeans
from sklearn.feature_extraction import FeatureHasher
from sklearn.cross_decomposition import PLSRegression
from sklearn.decomposition import PCA, TruncatedSVD
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.ensemble import (AdaBoostClassifier, BaggingClassifier, ExtraTreesClassifier, ExtraTreesRegressor,
                              GradientBoostingClassifier, GradientBoostingRegressor, IsolationForest,
                              RandomForestClassifier, RandomForestRegressor, StackingClassifier)
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.feature_selection import SelectKBest, VarianceThreshold
from sklearn.impute import SimpleImputer
from sklearn.linear_model import (BayesianRidge, HuberRegressor, Lasso, LinearRegression, LogisticRegression,
                                  Perceptron, PoissonRegressor, Ridge, RidgeClassifier, SGDClassifier, SGDRegressor,
                                  TweedieRegressor)
from sklearn.multiclass import OneVsRestClassifier
from sklearn.naive_bayes import BernoulliNB, GaussianNB, MultinomialNB
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
from sklearn.neural_network import MLPClassifier, MLPRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import (Binarizer, KBinsDiscretizer, MaxAbsScaler, MinMaxScaler, Normalizer,
                                   OneHotEncoder, PolynomialFeatures, PowerTransformer, QuantileTransformer,
                                   RobustScaler, StandardScaler)
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


def nonnegative(dataset):
    """The dataset with |X| and |y| (MultinomialNB counts, Poisson targets)."""
    def make(n_test):
        X_train, y_train, X_test = dataset(n_test)
        if y_train is not None and y_train.dtype.kind == "f":
            y_train = np.abs(y_train)
        return np.abs(X_train), y_train, np.abs(X_test)
    return make


def with_missing(dataset):
    """The dataset with NaN in every 7th training row / 5th test row of one column (imputers)."""
    def make(n_test):
        X_train, y_train, X_test = dataset(n_test)
        X_train, X_test = X_train.copy(), X_test.copy()
        X_train[::7, 2] = np.nan
        X_test[::5, 1] = np.nan
        return X_train, y_train, X_test
    return make


def categories():
    """Three integer columns of categories 0..4 (OneHotEncoder)."""
    def make(n_test):
        X = np.random.default_rng(SEED).integers(0, 5, size=(200 + n_test, 3)).astype(np.int64)
        return X[n_test:], None, X[:n_test]
    return make


SENTENCES = np.array(["the cat sat on the mat", "dogs and cats", "A quick brown fox", "the mat is red",
                      "Cats, dogs; FOXES!", "über café naïve", "red fox, red mat", "no animals here"])


def texts():
    """Short sentences, fitted as a list, run as a [n, 1] string column; test rows include unseen words."""
    def make(n_test):
        rows = np.resize(SENTENCES, 40)
        test = np.resize(np.append(SENTENCES, "an unseen zebra and the cat"), n_test).reshape(-1, 1)
        return rows, None, test
    return make


def tokens():
    """Rows of three words as a string matrix (FeatureHasher's input), test rows with unseen words."""
    def make(n_test):
        rng = np.random.default_rng(SEED)
        words = np.array(["cat", "dog", "fish", "a", "the", "bird", "zebra", "élan", ""])
        return rng.choice(words[:6], (40, 3)), None, rng.choice(words, (n_test, 3))
    return make


# ---------------------------------------------------------------- cases

@dataclass
class Case:
    """A scikit-learn estimator, trained on `dataset` and exported with skl2onnx."""
    name: str
    make_model: Callable[[], object]
    dataset: Callable[[int], tuple]
    convert_options: dict = field(default_factory=dict)  # extra skl2onnx options for this estimator
    target_opset: Optional[dict] = None  # skl2onnx target_opset when its default does not convert
    converter: str = "skl2onnx"  # or 'lightgbm' / 'xgboost' (onnxmltools), 'catboost' (its own exporter)
    kind = "sklearn"

    def missing_library(self):
        """The Python module this case needs and does not find, else None."""
        for module in CONVERTER_MODULES[self.converter]:
            if importlib.util.find_spec(module) is None:
                return module
        return None

    def build(self, args):
        """Returns (ModelProto, {input name: array})."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # convergence and deprecation warnings of tiny fits
            X_train, y_train, X_test = self.dataset(args.rows)
            model = self.make_model()
            model.fit(X_train) if y_train is None else model.fit(X_train, y_train)
            onx = CONVERTERS[self.converter](model, X_test, self.convert_options, self.target_opset or args.opset)
        return onx, {onx.graph.input[0].name: X_test}


def _lazy(module, name):
    """A library's estimator class, imported only when a case is built (the library is optional)."""
    return lambda *a, **k: getattr(importlib.import_module(module), name)(*a, **k)


LGBMClassifier, LGBMRegressor = _lazy("lightgbm", "LGBMClassifier"), _lazy("lightgbm", "LGBMRegressor")
XGBClassifier, XGBRegressor = _lazy("xgboost", "XGBClassifier"), _lazy("xgboost", "XGBRegressor")
CatBoostClassifier, CatBoostRegressor = _lazy("catboost", "CatBoostClassifier"), _lazy("catboost", "CatBoostRegressor")


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
    # more linear models, discriminant analysis, naive Bayes, neighbours, networks
    Case("Lasso", lambda: Lasso(alpha=0.01), regression()),
    Case("BayesianRidge", lambda: BayesianRidge(), regression()),
    Case("HuberRegressor", lambda: HuberRegressor(), regression()),
    Case("PoissonRegressor", lambda: PoissonRegressor(), nonnegative(regression())),
    Case("TweedieRegressor", lambda: TweedieRegressor(power=1.5), nonnegative(regression())),
    Case("PLSRegression", lambda: PLSRegression(2), regression()),
    Case("Perceptron_3", lambda: Perceptron(random_state=SEED), classification(3)),
    Case("LinearDiscriminantAnalysis_3", lambda: LinearDiscriminantAnalysis(), classification(3)),
    Case("CalibratedClassifierCV_3", lambda: CalibratedClassifierCV(LogisticRegression(), cv=3), classification(3)),
    Case("GaussianNB_3", lambda: GaussianNB(), classification(3)),
    Case("BernoulliNB_3", lambda: BernoulliNB(), classification(3)),
    Case("MultinomialNB_3", lambda: MultinomialNB(), nonnegative(classification(3))),
    Case("KNeighborsClassifier_3", lambda: KNeighborsClassifier(5), classification(3)),
    Case("KNeighborsRegressor", lambda: KNeighborsRegressor(5), regression()),
    # skl2onnx's 'cdist' optimization: com.microsoft CDist instead of the Scan
    Case("KNeighborsClassifier_3_cdist", lambda: KNeighborsClassifier(5), classification(3),
         convert_options={"optim": "cdist"}),
    Case("KNeighborsRegressor_cdist", lambda: KNeighborsRegressor(5), regression(), convert_options={"optim": "cdist"}),
    # com.microsoft MurmurHash3 over the strings
    Case("FeatureHasher", lambda: FeatureHasher(n_features=16, input_type="string"), tokens()),
    Case("MLPClassifier_3", lambda: MLPClassifier((16,), max_iter=300, random_state=SEED), classification(3)),
    Case("MLPRegressor", lambda: MLPRegressor(hidden_layer_sizes=(16,), max_iter=300, random_state=SEED), regression()),
    Case("Stacking_3", lambda: StackingClassifier([("lr", LogisticRegression()), ("nb", GaussianNB())]),
         classification(3)),
    Case("IsolationForest", lambda: IsolationForest(n_estimators=10, random_state=SEED), unlabeled(),
         target_opset={"": 17, "ai.onnx.ml": 3}),
    Case("KMeans_4", lambda: KMeans(4, n_init=3, random_state=SEED), unlabeled()),
    # transformers and preprocessing (Scaler, Normalizer, Binarizer, Imputer, OneHotEncoder, ...)
    Case("PCA_3", lambda: PCA(3), unlabeled()),
    Case("PCA_3_whiten", lambda: PCA(3, whiten=True), unlabeled()),
    Case("TruncatedSVD_3", lambda: TruncatedSVD(3, random_state=SEED), unlabeled()),
    Case("Scalers_pipeline", lambda: make_pipeline(StandardScaler(), MinMaxScaler(), RobustScaler(), MaxAbsScaler()),
         unlabeled()),
    *[Case(f"Normalizer_{norm}", lambda norm=norm: Normalizer(norm), unlabeled()) for norm in ("l1", "l2", "max")],
    Case("Binarizer", lambda: Binarizer(threshold=0.1), unlabeled()),
    Case("PolynomialFeatures_2", lambda: PolynomialFeatures(2), unlabeled()),
    Case("KBinsDiscretizer_ordinal", lambda: KBinsDiscretizer(4, encode="ordinal"), unlabeled()),
    Case("KBinsDiscretizer_onehot", lambda: KBinsDiscretizer(4, encode="onehot-dense"), unlabeled()),
    Case("QuantileTransformer", lambda: QuantileTransformer(n_quantiles=50), unlabeled()),
    Case("PowerTransformer", lambda: PowerTransformer(), unlabeled()),
    Case("SimpleImputer_mean", lambda: SimpleImputer(), with_missing(unlabeled())),
    Case("SelectKBest_3", lambda: SelectKBest(k=3), classification(3)),
    Case("VarianceThreshold", lambda: VarianceThreshold(0.5), unlabeled()),
    Case("OneHotEncoder", lambda: OneHotEncoder(sparse_output=False), categories()),
    # text: StringNormalizer, com.microsoft Tokenizer, TfIdfVectorizer
    Case("CountVectorizer", lambda: CountVectorizer(), texts()),
    Case("TfidfVectorizer", lambda: TfidfVectorizer(), texts()),
    Case("TfidfVectorizer_bigrams", lambda: TfidfVectorizer(ngram_range=(1, 2)), texts()),
    # gradient boosting from other libraries: LightGBM / XGBoost through onnxmltools, CatBoost's own exporter
    Case("LightGBM_2", lambda: LGBMClassifier(n_estimators=20, verbose=-1), classification(2),
         converter="lightgbm"),
    Case("LightGBM_3", lambda: LGBMClassifier(n_estimators=20, verbose=-1), classification(3),
         converter="lightgbm"),
    Case("LightGBMRegressor", lambda: LGBMRegressor(n_estimators=20, verbose=-1), regression(),
         converter="lightgbm"),
    Case("LightGBMRegressor_poisson", lambda: LGBMRegressor(n_estimators=20, objective="poisson", verbose=-1),
         nonnegative(regression()), converter="lightgbm"),
    Case("XGBoost_2", lambda: XGBClassifier(n_estimators=20, max_depth=4), classification(2), converter="xgboost"),
    Case("XGBoost_3", lambda: XGBClassifier(n_estimators=20, max_depth=4), classification(3), converter="xgboost"),
    Case("XGBoostRegressor", lambda: XGBRegressor(n_estimators=20, max_depth=4), regression(), converter="xgboost"),
    Case("CatBoost_2", lambda: CatBoostClassifier(iterations=20, depth=4, random_seed=SEED, verbose=False, allow_writing_files=False),
         classification(2), converter="catboost"),
    Case("CatBoost_3", lambda: CatBoostClassifier(iterations=20, depth=4, random_seed=SEED, verbose=False, allow_writing_files=False,
                                                  loss_function="MultiClass"), classification(3), converter="catboost"),
    Case("CatBoostRegressor", lambda: CatBoostRegressor(iterations=20, depth=4, random_seed=SEED, verbose=False, allow_writing_files=False),
         regression(), converter="catboost"),
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


def convert_onnxmltools(model, X, extra_options, opset):
    """LightGBM and XGBoost through onnxmltools, without ZipMap. Its converters
    go up to opset 15 (the default when --opset is not given)."""
    from onnxmltools.convert import convert_lightgbm, convert_xgboost
    from onnxmltools.convert.common.data_types import FloatTensorType
    initial_types = [("X", FloatTensorType([None, X.shape[1]]))]
    target_opset = opset or 15
    if type(model).__module__.startswith("lightgbm"):
        return convert_lightgbm(model, initial_types=initial_types, zipmap=False, target_opset=target_opset)
    return convert_xgboost(model, initial_types=initial_types, target_opset=target_opset)


def convert_catboost(model, X, extra_options, opset):
    """CatBoost's own ONNX export (TreeEnsemble, classifiers with ZipMap)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.onnx")
        model.save_model(path, format="onnx")
        return onnx.load(path)


CONVERTERS = {"skl2onnx": convert, "lightgbm": convert_onnxmltools, "xgboost": convert_onnxmltools,
              "catboost": convert_catboost}
CONVERTER_MODULES = {"skl2onnx": (), "lightgbm": ("onnxmltools", "lightgbm"), "xgboost": ("onnxmltools", "xgboost"),
                     "catboost": ("catboost",)}


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
    failed = not_run = 0
    for case in cases:
        missing = case.kind == "sklearn" and case.missing_library()
        if missing:
            not_run += 1
            print(f"{case.name:44s} not run: pip install {missing}", flush=True)
            continue
        try:
            worst, problems, ops = check_case(case, args)
        except Exception as e:  # a conversion or run that fails is a failed case, not a stopped script
            worst, problems, ops = float("nan"), [f"{type(e).__name__}: {e}"], []
        failed += bool(problems)
        status = "OK  " if not problems else "FAIL"
        line = f"{case.name:44s} max|diff| {worst:9.2e}  {status}  {','.join(ops)}"
        print(line + ("  " + "; ".join(problems) if problems else ""), flush=True)
    ran = len(cases) - not_run
    print(f"{ran - failed} of {ran} models match ONNX Runtime" + (f" ({not_run} not run)" if not_run else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
