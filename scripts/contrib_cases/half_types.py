"""float16 variants of float cases. onnxruntime's CPU provider runs these ops on
float16 (it casts around its float kernels); so must Onyx. Each case is a float
case with its float inputs, initializers and outputs made float16, except the
outputs the op defines as float whatever the input (LayerNorm statistics)."""
import numpy as np
from onnx import TensorProto, numpy_helper

from . import Case, fused_activations, transformer


def _half(case, float_outputs=()):
    def build():
        model, feeds = case.build()
        g = model.graph
        for vi in list(g.input) + list(g.output):
            t = vi.type.tensor_type
            if t.elem_type == TensorProto.FLOAT and vi.name not in float_outputs:
                t.elem_type = TensorProto.FLOAT16
        for init in g.initializer:
            if init.data_type == TensorProto.FLOAT:
                init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init).astype(np.float16), init.name))
        return model, {k: v.astype(np.float16) if v.dtype == np.float32 else v for k, v in feeds.items()}
    # Both runtimes compute in float and round once: one float16 step apart at most.
    return Case(case.name + "_float16", build, rtol=2e-3, atol=2e-3)


_BY_NAME = {c.name: c for c in fused_activations.CASES + transformer.CASES}
_STATISTICS = ("mean", "inv_std", "o1")

CASES = [_half(_BY_NAME[name], _STATISTICS) for name in [
    "BiasGelu_3d", "Gelu_edges", "FastGelu_bias", "QuickGelu_alpha",
    "FusedMatMul_transB", "FusedGemm_Relu", "FusedConv_Relu_Z",
    "SkipLayerNorm_bias_all_outputs", "SkipSimplifiedLayerNorm_bias_outputs",
    "SimplifiedLayerNorm_axis1_inv_std",
    "Attention_mask_end", "Attention_past_present_gpt2",
    "MHA_cross_bias_odd_sizes", "MHA_past_present_decode",
]]
