"""onyx.transformers.optimizer: the offline transformer optimizer users know
from onnxruntime.transformers, backed by Onyx's own graph fusions.

    from onyx.transformers import optimizer
    m = optimizer.optimize_model("bert.onnx", model_type="bert", num_heads=12, hidden_size=768)
    print(m.get_fused_operator_statistics())
    m.save_model_to_file("bert_opt.onnx")

The optimized model holds Onyx's com.onyx fused ops (see docs/fused_ops.md):
Onyx runs it; other runtimes do not."""
import os
import tempfile
import warnings
from collections import Counter

from .. import _core

_MODEL_TYPES = {"bert", "bart", "gpt2", "gpt_neox", "t5", "vit", "clip", "swin", "unet", "vae", "phi", "conformer"}

# onnxruntime's statistic names for what Onyx fuses.
_STAT_NAMES = ("EmbedLayerNormalization", "Attention", "MultiHeadAttention", "Gelu", "FastGelu", "BiasGelu",
               "GemmFastGelu", "LayerNormalization", "SkipLayerNormalization", "QOrderedAttention")


class OnnxModel:
    """An optimized model: `.model` is the onnx.ModelProto."""

    def __init__(self, model, fusions):
        self.model = model
        self._fusions = dict(fusions)

    def get_fused_operator_statistics(self):
        """Counts per fused operator, keyed as onnxruntime names them."""
        counts = Counter()
        for node in self.model.graph.node:
            if node.op_type == "FusedMatMul" and node.domain == "com.onyx":
                act = next((a.s.decode() for a in node.attribute if a.name == "activation"), "")
                if act == "Gelu":
                    counts["BiasGelu"] += 1
                continue
            if node.domain in ("com.onyx", "") and node.op_type in _STAT_NAMES:
                counts[node.op_type] += 1
        return {name: counts.get(name, 0) for name in _STAT_NAMES}

    def get_onyx_fusion_report(self):
        """Onyx's own fusion counts (fusion name -> times it fired)."""
        return dict(self._fusions)

    def save_model_to_file(self, output_path, use_external_data_format=False, all_tensors_to_one_file=True):
        import onnx

        if use_external_data_format or self.model.ByteSize() > 2_000_000_000:
            onnx.save_model(self.model, output_path, save_as_external_data=True,
                            all_tensors_to_one_file=all_tensors_to_one_file,
                            location=os.path.basename(output_path) + ".data")
        else:
            onnx.save_model(self.model, output_path)


def optimize_model(input, model_type="bert", num_heads=0, hidden_size=0, optimization_options=None, opt_level=None,
                   use_gpu=False, only_onnxruntime=False, verbose=False, **kwargs):
    """Fuses attention, GELU and (skip) layer normalization in a transformer
    model at Onyx's extended level and returns an OnnxModel."""
    import onnx

    if model_type not in _MODEL_TYPES:
        raise ValueError(f"model_type must be one of {sorted(_MODEL_TYPES)}, got '{model_type}'")
    level = {None: 2, 0: 0, 1: 1, 2: 2, 99: 99}.get(opt_level)
    if level is None:
        raise ValueError(f"opt_level must be 0, 1, 2 or 99, got {opt_level}")
    source = input if isinstance(input, (bytes, bytearray)) else os.fspath(input)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "optimized.onnx")
        sess = _core.Session(source, level, 1, 1, 0, 3, ["cpu"], {}, optimized_model_filepath=out)
        fusions = sess.fusion_counts()
        model = onnx.load(out)  # loads external data beside it, if any
    if num_heads:
        for node in model.graph.node:
            if node.op_type == "Attention" and node.domain == "com.onyx":
                heads = next((a.i for a in node.attribute if a.name == "num_heads"), 0)
                if heads != num_heads:
                    warnings.warn(f"onyx: attention node {node.name} has {heads} heads, not num_heads={num_heads}")
    return OnnxModel(model, fusions)
