#!/usr/bin/env python3
"""TensorFlow / Keras models converted by tf2onnx: a third exporter, with its own
graph shapes (NHWC tensors with Transposes around each convolution, folded batch
norms, Keras LSTM/GRU as ONNX LSTM/GRU, Keras MultiHeadAttention as Einsum or
MatMul chains). EfficientNet is left out: tf2onnx leaves its Normalization layer's
statistics as graph inputs. Seeded random weights; same output convention as the other
scripts (OUT/NAME.onnx + OUT/NAME.input_K.npy) for `scripts/check_models.py` and
`../shared/bench/compare_ort.py`.

Needs: python3 -m venv VENV && VENV/bin/pip install tensorflow-cpu tf2onnx
Usage: VENV/bin/python scripts/make_tf_models.py OUT [NAME ...]"""
import os
import sys

import numpy as np
import tensorflow as tf
import tf2onnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_each import export_each  # noqa: E402

K = tf.keras


def app(ctor, size=160):
    def build():
        # Logits: a softmax over random-weight logits is a flat 1/1000 that would hide any difference.
        model = ctor(weights=None, input_shape=(size, size, 3), classifier_activation=None)
        return model, [np.random.default_rng(1).standard_normal((1, size, size, 3)).astype(np.float32)]
    return build


def text_rnn():
    ids = K.Input((20,), dtype='int32')
    x = K.layers.Embedding(500, 32)(ids)
    x = K.layers.Bidirectional(K.layers.LSTM(32, return_sequences=True))(x)
    x = K.layers.GRU(24)(x)
    out = K.layers.Dense(5)(x)
    return K.Model(ids, out), [np.random.default_rng(1).integers(0, 500, (2, 20)).astype(np.int32)]


def conv1d_net():
    inp = K.Input((400, 2))
    x = K.layers.Conv1D(16, 7, strides=2, activation='relu')(inp)
    x = K.layers.BatchNormalization()(x)
    x = K.layers.MaxPooling1D(2)(x)
    x = K.layers.SeparableConv1D(32, 5, padding='same', activation='swish')(x)
    x = K.layers.GlobalAveragePooling1D()(x)
    out = K.layers.Dense(3)(x)
    return K.Model(inp, out), [np.random.default_rng(1).standard_normal((3, 400, 2)).astype(np.float32)]


def encoder():
    inp = K.Input((24, 64))
    h = K.layers.MultiHeadAttention(num_heads=4, key_dim=16)(inp, inp)
    h = K.layers.LayerNormalization()(inp + h)
    # Keras' exact gelu converts to an Erfc node, which is no ONNX op (tf2onnx 1.17); the tanh form.
    f = K.layers.Dense(128, activation=lambda t: K.activations.gelu(t, approximate=True))(h)
    f = K.layers.Dense(64)(f)
    out = K.layers.LayerNormalization()(h + f)
    return K.Model(inp, out), [np.random.default_rng(1).standard_normal((2, 24, 64)).astype(np.float32)]


def unet_small():
    inp = K.Input((64, 64, 3))
    d1 = K.layers.Conv2D(16, 3, padding='same', activation='relu')(inp)
    p1 = K.layers.MaxPooling2D()(d1)
    d2 = K.layers.Conv2D(32, 3, padding='same', activation='relu')(p1)
    u1 = K.layers.Conv2DTranspose(16, 2, strides=2)(d2)
    u1 = K.layers.Concatenate()([u1, d1])
    x = K.layers.DepthwiseConv2D(3, padding='same')(u1)
    x = K.layers.UpSampling2D(interpolation='bilinear')(x)
    out = K.layers.Conv2D(2, 1, activation='sigmoid')(x)
    return K.Model(inp, out), [np.random.default_rng(1).standard_normal((1, 64, 64, 3)).astype(np.float32)]


MODELS = {
    'tf_mobilenet_v2': app(K.applications.MobileNetV2),
    'tf_resnet50': app(K.applications.ResNet50),
    'tf_densenet121': app(K.applications.DenseNet121, 128),
    'tf_text_rnn': text_rnn,
    'tf_conv1d': conv1d_net,
    'tf_encoder': encoder,
    'tf_unet_small': unet_small,
}


def export(name, out):
    if name not in MODELS:
        raise KeyError(f'unknown model {name!r}: one of {", ".join(MODELS)}')
    tf.keras.utils.set_random_seed(0)
    model, inputs = MODELS[name]()
    # Batch dimension left dynamic, the rest as built.
    spec = [tf.TensorSpec((None,) + a.shape[1:], tf.as_dtype(a.dtype), name=f'input_{i}') for i, a in enumerate(inputs)]
    fn = tf.function(lambda *xs: model(list(xs) if len(xs) > 1 else xs[0], training=False))
    path = os.path.join(out, name + '.onnx')
    tf2onnx.convert.from_function(fn, input_signature=spec, opset=17, output_path=path)
    for i, a in enumerate(inputs):
        np.save(os.path.join(out, f'{name}.input_{i}.npy'), a)
    print(f'{path} {os.path.getsize(path) / 1e6:.1f} MB', flush=True)


def main(out, names):
    export_each(out, names or list(MODELS), export)


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2:])
