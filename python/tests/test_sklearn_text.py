"""A scikit-learn text pipeline exported by skl2onnx (StringNormalizer,
com.microsoft Tokenizer, TfIdfVectorizer, LinearClassifier) against
scikit-learn itself: onnxruntime's StringNormalizer needs an en_US locale
these machines lack, so scikit-learn's own predictions are the reference."""

import numpy as np
import pytest

import onyx as ort

sklearn = pytest.importorskip("sklearn")
skl2onnx = pytest.importorskip("skl2onnx")


@pytest.mark.parametrize("ngrams", [(1, 1), (1, 2)])
def test_tfidf_logistic_regression_matches_sklearn(ngrams):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from skl2onnx.common.data_types import StringTensorType

    docs = np.array(["The cat sat on the mat", "dogs and cats", "a dog ate my homework", "the quick brown fox",
                     "Cats are great!", "dog days"] * 4)
    labels = np.array([0, 1, 1, 0, 1, 1] * 4)
    model = make_pipeline(TfidfVectorizer(ngram_range=ngrams), LogisticRegression()).fit(docs, labels)
    onx = skl2onnx.convert_sklearn(model, initial_types=[("input", StringTensorType([None, 1]))],
                                   options={id(model.steps[-1][1]): {"zipmap": False}})
    label, proba = ort.InferenceSession(onx.SerializeToString()).run(None, {"input": docs.reshape(-1, 1)})
    np.testing.assert_array_equal(label, model.predict(docs))
    np.testing.assert_allclose(proba, model.predict_proba(docs), rtol=1e-4, atol=1e-6)
