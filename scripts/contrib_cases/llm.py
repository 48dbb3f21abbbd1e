"""LLM contrib ops (com.microsoft): MatMulNBits, GatherBlockQuantized,
RotaryEmbedding, GroupQueryAttention, and a tiny decoder block."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from . import MS, Case, node_model, rand


# ---- MatMulNBits ----

def _pack_codes(q, bits):
    """Codes q [..., n] (n a multiple of 8 / bits) packed little-end first, as MatMulNBits stores them."""
    per = 8 // bits
    q = q.astype(np.uint32).reshape(*q.shape[:-1], q.shape[-1] // per, per)
    out = np.zeros(q.shape[:-1], np.uint32)
    for i in range(per):
        out |= q[..., i] << (bits * i)
    return out.astype(np.uint8)


def _mnb(M, K, N, bits, block, zp=None, bias=False, acc=0, seed=0, const=True, lead=(), g_idx=False, f16=False):
    def build():
        rng = np.random.default_rng(seed)
        nb = (K + block - 1) // block
        q = rng.integers(0, 2 ** bits, size=(N, nb, block))
        consts = {"B": _pack_codes(q, bits), "scales": rng.uniform(0.01, 0.1, N * nb).astype(np.float32)}
        names = ["A", "B", "scales"]
        if zp == "u8":
            per = 8 // bits
            zq = np.zeros((N, (nb + per - 1) // per * per), np.int64)
            zq[:, :nb] = rng.integers(0, 2 ** bits, size=(N, nb))
            consts["zp"] = _pack_codes(zq, bits).reshape(-1)
        elif zp == "f":
            consts["zp"] = rng.uniform(0, 2 ** bits - 1, N * nb).astype(np.float32)
        names.append("zp" if zp else "")
        if g_idx:  # act-order: a permutation of the k -> block map
            consts["g_idx"] = rng.permutation(np.arange(K, dtype=np.int32) // block).astype(np.int32)
        names.append("g_idx" if g_idx else "")
        if bias:
            consts["bias"] = rand((N,), seed + 1)
        names.append("bias" if bias else "")
        while names[-1] == "":
            names.pop()
        a = rand((*lead, M, K), seed + 2)
        if f16:
            a = a.astype(np.float16)
            for n in ("scales", "bias"):
                if n in consts:
                    consts[n] = consts[n].astype(np.float16)
        feeds = {"A": a}
        if not const:
            feeds.update(consts)
            consts = {}
        out_t = TensorProto.FLOAT16 if f16 else TensorProto.FLOAT
        model = node_model("MatMulNBits", feeds, [("Y", out_t)], consts=consts, inputs=names,
                           attrs=dict(K=K, N=N, bits=bits, block_size=block, accuracy_level=acc))
        return model, {"A": a} if const else feeds
    return build


def _quantizer_model(K, N, block, symmetric, M=5, bits=4, seed=0):
    """A MatMul with a float weight, quantized by ORT's own MatMulNBitsQuantizer."""
    def build():
        from onnxruntime.quantization.matmul_nbits_quantizer import DefaultWeightOnlyQuantConfig, MatMulNBitsQuantizer
        w = rand((K, N), seed, low=-0.5, high=0.5)
        graph = helper.make_graph(
            [helper.make_node("MatMul", ["A", "W"], ["Y"])], "mm",
            [helper.make_tensor_value_info("A", TensorProto.FLOAT, [None, K])],
            [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)], [numpy_helper.from_array(w, "W")])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
        cfg = DefaultWeightOnlyQuantConfig(block_size=block, is_symmetric=symmetric, bits=bits)
        q = MatMulNBitsQuantizer(model, algo_config=cfg)
        q.process()
        out = q.model.model
        assert any(n.op_type == "MatMulNBits" for n in out.graph.node)
        return out, {"A": rand((M, K), seed + 1)}
    return build


# accuracy_level 4: ORT quantizes A to int8 per block (Onyx stays in float):
# the difference is a fraction of a percent of the output's size.
_ACC4 = dict(rtol=1e-2, atol=0.1)

MATMUL_NBITS = [
    Case("MatMulNBits_4bit_sym", _mnb(3, 64, 8, 4, 32)),
    Case("MatMulNBits_4bit_u8zp_bias", _mnb(3, 96, 7, 4, 32, zp="u8", bias=True), atol=1e-4),
    Case("MatMulNBits_4bit_floatzp", _mnb(2, 64, 9, 4, 16, zp="f"), atol=1e-4),
    Case("MatMulNBits_4bit_K_odd", _mnb(5, 50, 7, 4, 16, zp="u8")),
    Case("MatMulNBits_4bit_M1_decode", _mnb(1, 256, 33, 4, 32, zp="u8", bias=True), atol=1e-4),
    Case("MatMulNBits_4bit_M64_blk128", _mnb(64, 300, 40, 4, 128, zp="u8"), atol=1e-4),
    Case("MatMulNBits_4bit_3d_batch", _mnb(7, 64, 12, 4, 32, lead=(2,))),
    Case("MatMulNBits_4bit_runtime_B", _mnb(3, 80, 6, 4, 16, zp="u8", bias=True, const=False)),
    Case("MatMulNBits_4bit_runtime_B_M1", _mnb(1, 80, 6, 4, 16, zp="f", const=False)),
    Case("MatMulNBits_4bit_g_idx", _mnb(3, 64, 8, 4, 16, g_idx=True)),
    Case("MatMulNBits_4bit_g_idx_M1", _mnb(1, 64, 8, 4, 16, zp="f", g_idx=True), atol=1e-4),
    Case("MatMulNBits_8bit", _mnb(3, 64, 8, 8, 32), rtol=1e-4, atol=1e-3),
    Case("MatMulNBits_8bit_u8zp_M1", _mnb(1, 100, 10, 8, 32, zp="u8"), atol=1e-3),
    Case("MatMulNBits_8bit_M17", _mnb(17, 256, 24, 8, 64, zp="u8", bias=True), atol=1e-3),
    Case("MatMulNBits_2bit", _mnb(3, 64, 8, 2, 32)),
    Case("MatMulNBits_2bit_u8zp_M1", _mnb(1, 70, 5, 2, 16, zp="u8")),
    Case("MatMulNBits_2bit_floatzp", _mnb(4, 64, 8, 2, 32, zp="f"), atol=1e-4),
    Case("MatMulNBits_4bit_f16", _mnb(3, 64, 8, 4, 32, zp="u8", bias=True, f16=True), rtol=2e-3, atol=2e-2),
    Case("MatMulNBits_acc4_4bit_M1", _mnb(1, 256, 32, 4, 32, zp="u8", acc=4), **_ACC4),
    Case("MatMulNBits_acc4_4bit_M9", _mnb(9, 256, 32, 4, 64, acc=4), **_ACC4),
    Case("MatMulNBits_acc4_8bit", _mnb(4, 128, 16, 8, 32, acc=4), rtol=1e-2, atol=1.5),
    Case("MatMulNBits_quantizer_sym_b32", _quantizer_model(128, 48, 32, True), atol=1e-4),
    Case("MatMulNBits_quantizer_asym_b32", _quantizer_model(128, 48, 32, False), atol=1e-4),
    Case("MatMulNBits_quantizer_asym_b128_M1", _quantizer_model(256, 40, 128, False, M=1), atol=1e-4),
    Case("MatMulNBits_quantizer_sym_b16_Kodd", _quantizer_model(72, 24, 16, True), atol=1e-4),
    Case("MatMulNBits_quantizer_8bit_asym", _quantizer_model(128, 32, 64, False, bits=8), atol=1e-4),
]

CASES = MATMUL_NBITS
