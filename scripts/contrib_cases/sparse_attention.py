"""com.microsoft SparseAttention on the CPU: block-sparse causal GQA over a
fixed-length KV cache. ORT's CPU kernel runs only with past and present key /
value bound to one buffer, so onnxruntime runs these cases through IO
binding. Prompt and decode steps (one and several new tokens), packed QKV,
several layouts (sparse and dense rows), rotary (half-split and interleaved),
scale, float16.

Batches in a decode step all have the same key length here: where they
differ, ORT's CPU kernel writes each head's probabilities at a stride of the
longest length but reads them back at the batch's own, so a batch shorter
than the longest attends with other heads' probabilities (or unwritten
memory); Onyx computes the documented attention there (not compared)."""
import numpy as np
import onnxruntime as ort
from onnx import helper

from . import Case, node_model, rand


def _layout(blocks, seed, dense=False):
    """CSR rows of a lower-triangular block layout: each block row sees its
    diagonal block and a random subset of the earlier ones (all when dense)."""
    rng = np.random.default_rng(seed)
    rows, cols = [0], []
    for i in range(blocks):
        seen = [j for j in range(i) if dense or rng.uniform() < 0.5] + [i]
        cols += seen
        rows.append(len(cols))
    return rows, cols


def _layouts(n, blocks, seed, dense_first=False):
    made = [_layout(blocks, seed + i, dense=dense_first and i == 0) for i in range(n)]
    nnz = blocks * (blocks + 1) // 2
    rows = np.array([r for r, _ in made], np.int32)
    cols = np.zeros((n, nnz), np.int32)
    for i, (_, c) in enumerate(made):
        cols[i, :len(c)] = c
    return rows, cols


def _ort_run_bound(sess, feeds):
    """Runs with past_key / past_value and present_key / present_value in one
    buffer each, the only way ORT's CPU kernel accepts."""
    io = sess.io_binding()
    shared = {}
    for name, v in feeds.items():
        if name in ("past_key", "past_value"):
            shared[name] = ort.OrtValue.ortvalue_from_numpy(v.copy())
            io.bind_ortvalue_input(name, shared[name])
        else:
            io.bind_cpu_input(name, v)
    for out in sess.get_outputs():
        if out.name in ("present_key", "present_value"):
            io.bind_ortvalue_output(out.name, shared[out.name.replace("present", "past")])
        else:
            io.bind_output(out.name)
    sess.run_with_iobinding(io)
    return io.copy_outputs_to_cpu()


def _sparse(batch, seq, heads, kv_heads, head, cache, block, blocks, key_lens, seed, layouts=2, packed=False,
            rotary_dim=0, attrs=None, dt=np.float32, dense_first=False):
    def build():
        total = max(key_lens)
        rows, cols = _layouts(layouts, blocks, seed, dense_first)
        if packed:
            feeds = {"query": rand((batch, seq, (heads + 2 * kv_heads) * head), seed, dt)}
        else:
            feeds = {"query": rand((batch, seq, heads * head), seed, dt),
                     "key": rand((batch, seq, kv_heads * head), seed + 1, dt),
                     "value": rand((batch, seq, kv_heads * head), seed + 2, dt)}
        feeds.update({"past_key": rand((batch, kv_heads, cache, head), seed + 3, dt),
                      "past_value": rand((batch, kv_heads, cache, head), seed + 4, dt),
                      "block_row_indices": rows, "block_col_indices": cols,
                      "total_sequence_length": np.array([total], np.int32),
                      "key_total_sequence_lengths": np.array(key_lens, np.int32)})
        a = {"num_heads": heads, "kv_num_heads": kv_heads, "sparse_block_size": block}
        if rotary_dim:
            angles = np.arange(cache)[:, None] / (100.0 ** (np.arange(rotary_dim // 2)[None, :] / (rotary_dim // 2)))
            feeds["cos_cache"] = np.cos(angles).astype(dt)
            feeds["sin_cache"] = np.sin(angles).astype(dt)
            a["do_rotary"] = 1
        a.update(attrs or {})
        names = list(feeds)
        if packed:
            names = ["query", "", ""] + names[1:]
        tp = helper.np_dtype_to_tensor_dtype(np.dtype(dt))
        outs = [("output", tp), ("present_key", tp), ("present_value", tp)]
        return node_model("SparseAttention", feeds, outs, attrs=a, inputs=names), feeds
    return build


def _case(name, build, **kw):
    return Case(name, build, ort_run=_ort_run_bound, **kw)


CASES = [
    _case("SparseAttention_prompt", _sparse(1, 13, 4, 2, 16, 16, 4, 4, [13], 1)),
    _case("SparseAttention_prompt_packed", _sparse(2, 8, 4, 1, 8, 12, 4, 3, [8, 8], 2, packed=True)),
    _case("SparseAttention_prompt_dense_layout", _sparse(1, 10, 2, 2, 16, 16, 4, 4, [10], 3, dense_first=True)),
    _case("SparseAttention_prompt_one_layout_scale", _sparse(1, 9, 3, 1, 8, 12, 3, 4, [9], 4, layouts=1,
                                                             attrs={"scale": 0.2})),
    _case("SparseAttention_decode_one_token", _sparse(2, 1, 4, 2, 16, 32, 4, 8, [19, 19], 5)),
    _case("SparseAttention_decode_three_tokens", _sparse(2, 3, 4, 4, 8, 24, 4, 6, [21, 21], 6, layouts=4)),
    _case("SparseAttention_decode_packed", _sparse(1, 1, 4, 2, 16, 16, 2, 8, [14], 7, packed=True)),
    _case("SparseAttention_rotary_prompt", _sparse(1, 7, 2, 1, 32, 16, 4, 4, [7], 8, rotary_dim=16)),
    _case("SparseAttention_rotary_interleaved_decode", _sparse(2, 1, 2, 2, 16, 16, 4, 4, [12, 12], 9, rotary_dim=16,
                                                               attrs={"rotary_interleaved": 1})),
    _case("SparseAttention_rotary_packed_decode", _sparse(1, 2, 4, 2, 32, 20, 4, 5, [17], 10, packed=True,
                                                          rotary_dim=32)),
    _case("SparseAttention_f16", _sparse(1, 6, 2, 1, 16, 8, 4, 2, [6], 11, dt=np.float16), rtol=5e-3, atol=2e-3),
]
