"""python -m onyx.quantization.preprocess --input model.onnx --output model.pre.onnx

Prepares a float model for quantization, as onnxruntime's
`python -m onnxruntime.quantization.preprocess` (same options): shape inference,
Onyx's basic graph optimizations, shape inference again. See quant_pre_process."""
import argparse
import sys

from .shape_inference import quant_pre_process


def _bool(text):
    """onnxruntime declares the --skip_* options type=bool, so `--skip_optimization True`
    is how scripts pass them; here `False` also means False, and the bare flag True."""
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def parse_arguments(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m onyx.quantization.preprocess",
        description="Prepare a float ONNX model for quantization: (1) shape inference with data propagation, "
                    "(2) Onyx's basic graph optimizations, (3) ONNX shape inference. Each step can be skipped.")
    parser.add_argument("--input", required=True, help="path of the float model")
    parser.add_argument("--output", required=True, help="path of the model to write")
    for name, what in (("--skip_optimization", "the graph optimizations"),
                       ("--skip_onnx_shape", "the final ONNX shape inference"),
                       ("--skip_symbolic_shape", "the first shape inference (data propagation)")):
        parser.add_argument(name, type=_bool, nargs="?", const=True, default=False, help=f"skip {what}")
    parser.add_argument("--auto_merge", action="store_true",
                        help="accepted for onnxruntime's command line; no effect (symbolic inference only)")
    parser.add_argument("--int_max", type=int, default=2**31 - 1,
                        help="accepted for onnxruntime's command line; no effect (symbolic inference only)")
    parser.add_argument("--guess_output_rank", action="store_true",
                        help="accepted for onnxruntime's command line; no effect (symbolic inference only)")
    parser.add_argument("--verbose", type=int, default=0, help="accepted for onnxruntime's command line")
    parser.add_argument("--save_as_external_data", action="store_true", help="save the weights to an external file")
    parser.add_argument("--all_tensors_to_one_file", action="store_true",
                        help="with --save_as_external_data: all weights in one file")
    parser.add_argument("--external_data_location", default=None,
                        help="with --save_as_external_data: the external file's name, next to the model")
    parser.add_argument("--external_data_size_threshold", type=int, default=1024,
                        help="with --save_as_external_data: smaller tensors stay in the model file")
    args = parser.parse_args(argv)
    if args.skip_optimization and args.skip_onnx_shape and args.skip_symbolic_shape:
        parser.error("all three steps are skipped: nothing to do")
    return args


def main(argv=None):
    args = parse_arguments(argv)
    quant_pre_process(args.input, args.output, args.skip_optimization, args.skip_onnx_shape, args.skip_symbolic_shape,
                      args.auto_merge, args.int_max, args.guess_output_rank, args.verbose, args.save_as_external_data,
                      args.all_tensors_to_one_file, args.external_data_location, args.external_data_size_threshold)
    return 0


if __name__ == "__main__":
    sys.exit(main())
