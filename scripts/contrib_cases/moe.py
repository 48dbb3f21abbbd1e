"""com.microsoft MoE on the CPU: routing (top-k of the router softmax,
normalized or not, ties), every activation ORT's CPU kernel takes (relu,
gelu, silu, identity, interleaved SwiGLU with alpha / beta / limit), biases
optional, 2-D and 3-D input, the older [E, in, out] weight shapes, float16."""
import numpy as np
from onnx import helper

from . import Case, node_model, rand


def _moe(rows, hidden, inter, experts, k, activation, seed, dt=np.float32, bias=True, attrs=None, legacy=False,
         batch=None, router=None):
    def build():
        fc1_out = 2 * inter if activation == "swiglu" else inter
        shape = (batch, rows // batch, hidden) if batch else (rows, hidden)
        feeds = {"input": rand(shape, seed, dt),
                 "router_probs": router if router is not None else rand((rows, experts), seed + 1, dt, -2, 2)}
        w1 = rand((experts, fc1_out, hidden), seed + 2, dt, -0.5, 0.5)
        w2 = rand((experts, hidden, inter), seed + 3, dt, -0.5, 0.5)
        if legacy:  # the older shapes, same buffers (ORT's CPU kernel reads them as [E, out, in])
            w1 = w1.reshape(experts, hidden, fc1_out)
            w2 = w2.reshape(experts, inter, hidden)
        consts = {"fc1_experts_weights": w1, "fc2_experts_weights": w2}
        names = ["input", "router_probs", "fc1_experts_weights", "", "fc2_experts_weights", ""]
        if bias:
            consts["fc1_experts_bias"] = rand((experts, fc1_out), seed + 4, dt, -0.5, 0.5)
            consts["fc2_experts_bias"] = rand((experts, hidden), seed + 5, dt, -0.5, 0.5)
            names[3], names[5] = "fc1_experts_bias", "fc2_experts_bias"
        a = {"k": k, "activation_type": activation}
        if activation == "swiglu":
            a["swiglu_fusion"] = 1
        a.update(attrs or {})
        out = [("output", helper.np_dtype_to_tensor_dtype(np.dtype(dt)))]
        return node_model("MoE", feeds, out, attrs=a, consts=consts, inputs=names), feeds
    return build


_TIED = np.array([[1, 1, 1, 1], [0, 2, 2, 0], [3, 1, 3, 3], [0, 0, 0, 0], [1, 2, 2, 2]], np.float32)

CASES = [
    Case("MoE_relu_k2", _moe(6, 8, 12, 4, 2, "relu", 1)),
    Case("MoE_gelu_k1", _moe(5, 16, 8, 3, 1, "gelu", 2)),
    Case("MoE_silu_k3_normalized", _moe(7, 8, 6, 5, 3, "silu", 3, attrs={"normalize_routing_weights": 1})),
    Case("MoE_identity_no_bias", _moe(4, 12, 12, 4, 2, "identity", 4, bias=False)),
    Case("MoE_swiglu_defaults", _moe(6, 8, 6, 4, 2, "swiglu", 5)),
    Case("MoE_swiglu_alpha_beta_limit", _moe(6, 8, 10, 4, 2, "swiglu", 6, attrs={
        "activation_alpha": 1.702, "activation_beta": 1.0, "swiglu_limit": 0.3, "normalize_routing_weights": 1})),
    Case("MoE_3d_input", _moe(8, 8, 4, 6, 2, "relu", 7, batch=2)),
    Case("MoE_legacy_shapes", _moe(5, 8, 6, 4, 2, "gelu", 8, legacy=True)),
    Case("MoE_sparse_mixer_k2", _moe(5, 8, 6, 4, 2, "silu", 9, attrs={"use_sparse_mixer": 1})),
    Case("MoE_tied_router", _moe(5, 4, 6, 4, 2, "relu", 10, router=_TIED)),
    Case("MoE_all_experts", _moe(3, 6, 5, 3, 3, "identity", 11)),
    Case("MoE_f16_relu", _moe(6, 8, 12, 4, 2, "relu", 12, dt=np.float16), rtol=5e-3, atol=2e-3),
    Case("MoE_f16_swiglu", _moe(6, 8, 6, 4, 2, "swiglu", 13, dt=np.float16, attrs={"swiglu_limit": 0.5}),
         rtol=5e-3, atol=2e-3),
]
