"""Cases for check_contrib_ops.py: one module per op family, each with a
list CASES of Case. A case builds a model (usually one node) and its inputs;
the checker runs both through onnxruntime and Onyx and compares outputs."""
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import onnx
from onnx import helper, numpy_helper

MS = "com.microsoft"


@dataclass
class Case:
    name: str
    build: Callable[[], Tuple[onnx.ModelProto, Dict[str, np.ndarray]]]  # -> (model, feeds)
    rtol: float = 1e-4
    atol: float = 1e-5
    # How onnxruntime runs it, when sess.run cannot (e.g. ops that need IO binding): (session, feeds) -> outputs
    ort_run: Optional[Callable] = None


def node_model(op: str, feeds: Dict[str, np.ndarray], outputs: Sequence[Tuple[str, int]],
               attrs: Optional[dict] = None, consts: Optional[Dict[str, np.ndarray]] = None,
               inputs: Optional[List[str]] = None, domain: str = MS, opset: int = 17) -> onnx.ModelProto:
    """A one-node model. `feeds` become graph inputs (their dtype and shape),
    `consts` initializers; `inputs` orders the node's inputs by name ("" for an
    omitted optional one; default: feeds then consts in order); `outputs` are
    (name, TensorProto elem type) pairs."""
    consts = consts or {}
    names = inputs if inputs is not None else list(feeds) + list(consts)
    node = helper.make_node(op, names, [n for n, _ in outputs], domain=domain, **(attrs or {}))
    graph = helper.make_graph(
        [node], f"{op}_case",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for n, v in feeds.items()],
        [helper.make_tensor_value_info(n, t, None) for n, t in outputs],
        [numpy_helper.from_array(v, n) for n, v in consts.items()])
    imports = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    return helper.make_model(graph, opset_imports=imports, ir_version=8)


def rand(shape, seed, dtype=np.float32, low=-1.0, high=1.0):
    """Seeded uniform values of a shape and dtype (integers: low..high inclusive)."""
    rng = np.random.default_rng(seed)
    if np.issubdtype(np.dtype(dtype), np.integer):
        return rng.integers(int(low), int(high) + 1, size=shape).astype(dtype)
    return rng.uniform(low, high, size=shape).astype(dtype)
