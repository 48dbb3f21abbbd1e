"""quant_pre_process: onnxruntime's preparation of a float model for quantization
(shape inference, the runtime's basic graph optimizations, shape inference
again), done with ONNX's shape inference (with data propagation, in place of
onnxruntime's symbolic shape inference) and Onyx's optimizer. The quantizer
needs each tensor's type and shape, and works best on an optimized graph."""
import logging
import os
import tempfile
import warnings

logger = logging.getLogger(__name__)

# The tag onnxruntime's quantizer looks for (it warns on models without it), so a model
# prepared here is recognised by both libraries.
PRE_PROCESS_METADATA = ("onnx.quant.pre_process", "onnxruntime.quant")
_PROTOBUF_LIMIT = 2**31 - 1


def quant_pre_process(input_model=None, output_model_path=None, skip_optimization=False, skip_onnx_shape=False,
                      skip_symbolic_shape=False, auto_merge=False, int_max=2**31 - 1, guess_output_rank=False,
                      verbose=0, save_as_external_data=False, all_tensors_to_one_file=False,
                      external_data_location=None, external_data_size_threshold=1024, **deprecated_kwargs):
    """Writes `input_model` (a path or an onnx.ModelProto) to `output_model_path`
    after three steps, each skippable:

    1. shape inference with data propagation (skip_symbolic_shape);
    2. Onyx's basic graph optimizations (ORT_ENABLE_BASIC: constant folding,
       Identity / Dropout removal...; skip_optimization). If Onyx cannot load
       the model, the error is logged and the step skipped, as onnxruntime does;
    3. ONNX shape inference on the result (skip_onnx_shape).

    A model below opset 11 is first converted to opset 11 (Upsample becomes
    Resize), as onnxruntime does. auto_merge, int_max and guess_output_rank tune
    onnxruntime's symbolic shape inference, which Onyx does not use: non-default
    values warn; verbose (its log level) is accepted with no effect. The
    external-data arguments apply to the saved model as in
    onnx.save_model."""
    if input_model is None:
        input_model = deprecated_kwargs.pop("input_model_path", None)
    if deprecated_kwargs:
        raise TypeError(f"quant_pre_process() got unexpected keyword arguments: {', '.join(sorted(deprecated_kwargs))}")
    if input_model is None:
        raise ValueError("quant_pre_process needs input_model (a path or an onnx.ModelProto)")
    if output_model_path is None:
        raise ValueError("quant_pre_process needs output_model_path")
    if not skip_symbolic_shape:
        _warn_symbolic_options(auto_merge, int_max, guess_output_rank)

    model = _upgrade_old_opset(_load(input_model))
    with tempfile.TemporaryDirectory(prefix="onyx.pre.quant.") as tmp:
        if not skip_symbolic_shape:
            logger.info("shape inference with data propagation")
            model = _infer_shapes(model, tmp, data_prop=True)
        if not skip_optimization:
            logger.info("Onyx basic graph optimizations")
            model = _optimize_basic(model, tmp)
        if not skip_onnx_shape:
            logger.info("ONNX shape inference")
            model = _infer_shapes(model, tmp, data_prop=False)
    _tag_preprocessed(model)
    _save(model, output_model_path, save_as_external_data, all_tensors_to_one_file, external_data_location,
          external_data_size_threshold)


def _warn_symbolic_options(auto_merge, int_max, guess_output_rank):
    ignored = [name for name, value, default in (("auto_merge", auto_merge, False), ("int_max", int_max, 2**31 - 1),
                                                 ("guess_output_rank", guess_output_rank, False)) if value != default]
    if ignored:
        warnings.warn(f"quant_pre_process ignores {', '.join(ignored)}: they tune onnxruntime's symbolic shape "
                      "inference, which Onyx replaces with ONNX shape inference (data propagation)", stacklevel=3)


def _load(input_model):
    import onnx

    from .quant_utils import load_model

    if isinstance(input_model, onnx.ModelProto) and any(
            onnx.external_data_helper.uses_external_data(t) for t in input_model.graph.initializer):
        raise ValueError("input_model is a ModelProto whose external data is not loaded: load it first "
                         "(onnx.load_external_data_for_model) or pass the model's path")
    return load_model(input_model, "input_model")


def _upgrade_old_opset(model):
    """Quantization raises the opset to at least 11, where Upsample no longer
    exists; ONNX's converter turns it into Resize on the way."""
    import onnx.version_converter

    from .quant_utils import opset_of

    if opset_of(model) > 10:
        return model
    logger.info("converting the model from opset %d to 11", opset_of(model))
    return onnx.version_converter.convert_version(model, 11)


def _weight_bytes(model):
    return sum(len(t.raw_data) for t in model.graph.initializer)


def _save_for_tools(model, path):
    """Saves `model` where a tool (Onyx, ONNX's shape inference) reads it from a file;
    weights go to an external file past protobuf's 2 GB limit."""
    import onnx

    if _weight_bytes(model) < _PROTOBUF_LIMIT:
        onnx.save_model(model, path)
    else:
        onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                        location=os.path.basename(path) + ".data")


def _infer_shapes(model, tmp, data_prop):
    import onnx

    if _weight_bytes(model) < _PROTOBUF_LIMIT:
        return onnx.shape_inference.infer_shapes(model, data_prop=data_prop)
    # In memory ONNX cannot serialize the model past 2 GB: infer through files.
    src, dst = os.path.join(tmp, "to_infer.onnx"), os.path.join(tmp, "inferred.onnx")
    _save_for_tools(model, src)
    onnx.shape_inference.infer_shapes_path(src, dst, data_prop=data_prop)
    return onnx.load(dst)


def _optimize_basic(model, tmp):
    """`model` after Onyx's ORT_ENABLE_BASIC optimizations, saved by the session
    through SessionOptions.optimized_model_filepath."""
    import onnx

    from .. import GraphOptimizationLevel, InferenceSession, SessionOptions

    src, dst = os.path.join(tmp, "to_optimize.onnx"), os.path.join(tmp, "optimized.onnx")
    _save_for_tools(model, src)
    options = SessionOptions()
    options.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = dst
    try:
        InferenceSession(src, options, providers=["CPUExecutionProvider"])
    except Exception:  # noqa: BLE001 - as onnxruntime: an unoptimized model still quantizes
        logger.exception("Onyx could not optimize the model; it is kept unoptimized "
                         "(pass skip_optimization=True to skip this step)")
        return model
    return onnx.load(dst)


def _tag_preprocessed(model):
    key, value = PRE_PROCESS_METADATA
    for prop in model.metadata_props:
        if prop.key == key:
            prop.value = value
            return
    entry = model.metadata_props.add()
    entry.key, entry.value = key, value


def _save(model, path, save_as_external_data, all_tensors_to_one_file, location, size_threshold):
    import onnx

    path = os.fspath(path)
    if save_as_external_data:
        onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=all_tensors_to_one_file,
                        location=location, size_threshold=size_threshold, convert_attribute=False)
    else:
        onnx.save(model, path)
