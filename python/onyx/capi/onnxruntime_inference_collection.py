"""InferenceSession, IOBinding and friends: onnxruntime's Python API over
Onyx's C++ session (onyx._core)."""

from __future__ import annotations

import collections.abc
import os
import threading
import time
import warnings
from typing import Any, Sequence

from onyx import _core
from onyx._modelmeta import read_model_metadata
from onyx.capi._devices import _assigned_subgraphs, _cpu_memory_info
from onyx.capi.onnxruntime_pybind11_state import (  # noqa: F401  (OrtDevice, SparseTensor, ...: re-exported)
    _AVAILABLE_PROVIDERS,
    _OPT_LEVEL_TO_ONYX,
    _PROVIDER_TO_ONYX,
    Fail,
    InvalidArgument,
    ModelLoadCanceled,
    ModelMetadata,
    NodeArg,
    OrtDevice,
    OrtDeviceVendorId,
    OrtEpDevice,
    OrtValue,
    RunOptions,
    SessionOptions,
    SparseTensor,
    copy_tensors,
    get_ep_devices,
)


def check_and_normalize_provider_args(
    providers: Sequence[str | tuple[str, dict[Any, Any]]] | None,
    provider_options: Sequence[dict[Any, Any]] | None,
    available_provider_names: Sequence[str],
):
    """Validates 'providers' and 'provider_options' as onnxruntime does and
    returns (provider names, options dicts with str keys and values)."""
    if providers is None:
        return [], []

    provider_name_to_options: dict[str, dict[str, str]] = {}

    def set_provider_options(name, options):
        if name not in available_provider_names:
            warnings.warn(
                "Specified provider '{}' is not in available provider names.Available providers: '{}'".format(
                    name, ", ".join(available_provider_names)
                )
            )
        if name in provider_name_to_options:
            warnings.warn(f"Duplicate provider '{name}' encountered, ignoring.")
            return
        provider_name_to_options[name] = {str(k): str(v) for k, v in options.items()}

    if not isinstance(providers, collections.abc.Sequence) or isinstance(providers, str):
        raise ValueError("'providers' should be a sequence.")

    if provider_options is not None:
        if not isinstance(provider_options, collections.abc.Sequence):
            raise ValueError("'provider_options' should be a sequence.")
        if len(providers) != len(provider_options):
            raise ValueError("'providers' and 'provider_options' should be the same length if both are given.")
        if not all(isinstance(p, str) for p in providers):
            raise ValueError("Only string values for 'providers' are supported if 'provider_options' is given.")
        if not all(isinstance(o, dict) for o in provider_options):
            raise ValueError("'provider_options' values must be dicts.")
        for name, options in zip(providers, provider_options):
            set_provider_options(name, options)
    else:
        for provider in providers:
            if isinstance(provider, str):
                set_provider_options(provider, {})
            elif (
                isinstance(provider, tuple)
                and len(provider) == 2
                and isinstance(provider[0], str)
                and isinstance(provider[1], dict)
            ):
                set_provider_options(provider[0], provider[1])
            else:
                raise ValueError("'providers' values must be either strings or (string, dict) tuples.")

    return list(provider_name_to_options.keys()), list(provider_name_to_options.values())


class Session:
    """Base of InferenceSession (as in onnxruntime)."""

    def __init__(self):
        self._sess = None
        self._enable_fallback = True
        self._profiling_start_ns = 0
        self._profiling_ended = False

    # -- metadata
    def get_session_options(self) -> SessionOptions:
        return self._sess_options

    def get_inputs(self) -> list[NodeArg]:
        return self._inputs_meta

    def get_outputs(self) -> list[NodeArg]:
        return self._outputs_meta

    def get_overridable_initializers(self) -> list[NodeArg]:
        return self._overridable_initializers

    def get_modelmeta(self) -> ModelMetadata:
        if self._model_meta is None:
            self._model_meta = ModelMetadata(read_model_metadata(self._model_source))
        return self._model_meta

    def get_providers(self) -> list[str]:
        return list(self._providers)

    def get_input_memory_infos(self) -> list:
        """Where each input is read from: host memory for every input (Python values live there)."""
        return [_cpu_memory_info() for _ in self._inputs_meta]

    def get_output_memory_infos(self) -> list:
        """Where each output is written: host memory."""
        return [_cpu_memory_info() for _ in self._outputs_meta]

    def get_input_epdevices(self) -> list[OrtEpDevice]:
        """The OrtEpDevice each input is consumed on: the CPU provider's."""
        cpu = get_ep_devices()[0]
        return [cpu for _ in self._inputs_meta]

    def get_provider_graph_assignment_info(self) -> list:
        """The provider of every node of the optimized graph, one OrtEpAssignedSubgraph per node
        (needs the session config entry 'session.record_ep_graph_assignment_info' = '1')."""
        if self._sess_options._config.get("session.record_ep_graph_assignment_info") != "1":
            raise Fail(
                "[ONNXRuntimeError] : 1 : FAIL : Session configuration entry 'session.record_ep_graph_assignment_info' "
                'must be set to "1" to retrieve EP graph assignment information.'
            )
        return _assigned_subgraphs(self._sess.node_assignment())

    def get_provider_options(self) -> dict[str, dict[str, str]]:
        return {name: dict(opts) for name, opts in zip(self._providers, self._provider_options)}

    def set_providers(self, providers=None, provider_options=None) -> None:
        """Re-creates the session with other providers (as onnxruntime)."""
        if not providers:
            raise ValueError("Invalid providers list. Please provide a list of strings or (string, dict) tuples.")
        self._create_inference_session(providers, provider_options)

    def disable_fallback(self) -> None:
        self._enable_fallback = False

    def enable_fallback(self) -> None:
        self._enable_fallback = True

    # -- running
    def run(self, output_names, input_feed, run_options=None):
        """Computes the outputs named in `output_names` (None or [] for all)
        from `input_feed` (a dict input name -> numpy array); returns a list
        of numpy arrays."""
        if run_options is None:
            return self._sess.run(output_names, input_feed)
        return self._run_with_options(self._sess.run, output_names, input_feed, run_options)

    def _run_with_options(self, fn, output_names, input_feed, run_options):
        if run_options is not None and run_options.terminate:
            raise Fail("[ONNXRuntimeError] : 1 : FAIL : Exiting due to terminate flag being set to true.")
        if run_options is not None and run_options._adapters:
            # As onnxruntime: an active adapter's parameter wins over a feed of the same name.
            input_feed = {**input_feed, **run_options._adapter_feeds()}
        if run_options is not None and run_options._config:
            return fn(output_names, input_feed, dict(run_options._config))
        return fn(output_names, input_feed)

    def run_with_ort_values(self, output_names, input_dict_ort_values, run_options=None):
        """As run(), with OrtValues in and out."""
        return self._run_with_options(self._sess.run_ort, output_names, input_dict_ort_values, run_options)

    def run_with_ortvaluevector(self, run_options, feed_names, feeds, fetch_names, fetches, fetch_devices):
        results = self.run_with_ort_values(fetch_names, dict(zip(feed_names, feeds)), run_options)
        fetches.clear()
        fetches.extend(results)

    def run_async(self, output_names, input_feed, callback, user_data, run_options=None):
        """Runs on a separate thread and calls callback(outputs, user_data, error_message)."""

        def work():
            try:
                outs = self.run(output_names, input_feed, run_options)
            except Exception as e:  # reported through the callback, as onnxruntime
                callback([], user_data, str(e))
            else:
                callback(outs, user_data, "")

        threading.Thread(target=work, daemon=True).start()

    def io_binding(self) -> "IOBinding":
        return IOBinding(self)

    def create_ortvalue_from_shape_and_type(self, shape, element_type, device_type, device_id=0, vendor_id=-1):
        """A zero-filled OrtValue from the session's allocator (host memory): a numeric element
        type (numpy type or ONNX type number) on the CPU."""
        device = OrtDevice.make(device_type, device_id, vendor_id)
        if device.device_type() != OrtDevice.cpu():
            raise RuntimeError(f"No session allocator found for device {device._describe()}: Onyx's sessions "
                               "allocate OrtValues in host memory")
        value = OrtValue.ortvalue_from_shape_and_type(list(shape), element_type)
        if value.data_type() == "tensor(string)":
            raise RuntimeError("Creation of OrtValues is currently only supported for numeric tensor types")
        return value

    def release_captured_graph(self, graph_annotation_id: int = 0) -> None:
        """Nothing to release: the CPU provider captures no graphs (a no-op, as for
        onnxruntime's providers without graph capture)."""

    def set_ep_dynamic_options(self, options: dict[str, str]) -> None:
        """Options providers may change at run time; Onyx's providers have none, and accept
        them as onnxruntime's CPU provider does."""
        for k, v in dict(options).items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise TypeError("set_ep_dynamic_options(): keys and values must be str")

    def get_tuning_results(self) -> list:
        """TunableOp results: none, no provider of Onyx tunes kernels (onnxruntime's CPU gives [])."""
        return []

    def set_tuning_results(self, results, *, error_on_invalid=False) -> None:
        """No provider of Onyx takes TunableOp results; each entry is refused with a warning (or an
        error with error_on_invalid), as onnxruntime's CPU provider does."""
        for i, r in enumerate(results):
            ep = r.get("ep", "") if isinstance(r, dict) else ""
            message = f"Invalid TuningResults (index={i}). {ep or 'The provider'} does not support TunableOp."
            if error_on_invalid:
                raise Fail(f"[ONNXRuntimeError] : 1 : FAIL : {message}")
            warnings.warn(message)

    def run_with_iobinding(self, iobinding: "IOBinding", run_options=None) -> None:
        iobinding._run(run_options)

    # -- profiling
    def end_profiling(self) -> str:
        """Writes the Chrome trace the C++ session recorded (session events,
        one 'model_run' per call, one 'Node' event per executed node) and
        returns its path; "" when profiling is off or already ended."""
        if not self._profiling_start_ns or self._profiling_ended:
            return ""
        self._profiling_ended = True
        return self._sess.end_profiling()

    def get_profiling_start_time_ns(self) -> int:
        """When profiling started (ns since the epoch), also after end_profiling; 0 when it is off."""
        return self._profiling_start_ns


class AdapterFormat:
    """Reads and writes LoRA adapter files (.onnx_adapter), in onnxruntime's format: files written
    here load in onnxruntime and the other way round."""

    def __init__(self, adapter=None) -> None:
        self._format_version = 1
        self._adapter_version = 0
        self._model_version = 0
        self._parameters: dict[str, OrtValue] = {}
        if adapter is not None:
            if not isinstance(adapter, AdapterFormat):
                raise TypeError(f"AdapterFormat(adapter): expected an AdapterFormat, got {type(adapter).__name__}")
            self.__dict__.update(adapter.__dict__)

    @staticmethod
    def read_adapter(file_path) -> AdapterFormat:
        """The adapter in the file; its parameters are OrtValues over the memory-mapped file."""
        from onyx._adapter import map_adapter_file

        a = AdapterFormat()
        a._format_version, a._adapter_version, a._model_version, params = map_adapter_file(file_path)
        a._parameters = {name: OrtValue.ortvalue_from_numpy(v) for name, v in params.items()}
        return a

    def export_adapter(self, file_path) -> None:
        """Writes the adapter (its versions and parameters) to file_path."""
        from onyx._adapter import write_adapter

        write_adapter(file_path, self._adapter_version, self._model_version,
                      {name: v.numpy() for name, v in self._parameters.items()})

    def get_format_version(self) -> int:
        return self._format_version

    def set_adapter_version(self, adapter_version: int) -> None:
        self._adapter_version = int(adapter_version)

    def get_adapter_version(self) -> int:
        return self._adapter_version

    def set_model_version(self, model_version: int) -> None:
        self._model_version = int(model_version)

    def get_model_version(self) -> int:
        return self._model_version

    def set_parameters(self, params: dict[str, OrtValue]) -> None:
        """The parameters to export, by name (tensors of any numeric type)."""
        for name, value in params.items():
            value = getattr(value, "_ortvalue", value)
            if not isinstance(value, OrtValue) or not value.is_tensor():
                raise TypeError(f"adapter parameter '{name}' must be an OrtValue holding a tensor")
        self._parameters = {str(k): getattr(v, "_ortvalue", v) for k, v in params.items()}

    def get_parameters(self) -> dict[str, OrtValue]:
        return dict(self._parameters)


class InferenceSession(Session):
    """onnxruntime.InferenceSession on Onyx."""

    def __init__(
        self,
        path_or_bytes: str | bytes | os.PathLike,
        sess_options: SessionOptions | None = None,
        providers: Sequence[str | tuple[str, dict[Any, Any]]] | None = None,
        provider_options: Sequence[dict[Any, Any]] | None = None,
        **kwargs,
    ) -> None:
        super().__init__()
        if isinstance(path_or_bytes, (str, os.PathLike)):
            self._model_path = os.fspath(path_or_bytes)
            self._model_bytes = None
            self._model_source = self._model_path
        elif isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            self._model_path = None
            self._model_bytes = bytes(path_or_bytes)
            self._model_source = self._model_bytes
        else:
            raise TypeError(f"Unable to load from type '{type(path_or_bytes)}'")
        self._sess_options = sess_options if sess_options is not None else SessionOptions()
        self._read_config_from_model = os.environ.get("ORT_LOAD_CONFIG_FROM_MODEL") == "1"
        self._model_meta = None
        self._create_inference_session(providers, provider_options)

    def _create_inference_session(self, providers, provider_options):
        available = _AVAILABLE_PROVIDERS
        so = self._sess_options
        if so.has_providers():
            if providers or provider_options:
                warnings.warn(
                    "Specified 'providers'/'provider_options' when creating InferenceSession but SessionOptions has "
                    "already been configured with providers. InferenceSession will only use the providers passed to "
                    "InferenceSession()."
                )
            else:
                providers = self._providers_chosen_by_options()
        names, options = check_and_normalize_provider_args(providers, provider_options, available)
        # Providers this build does not have are dropped (after the warning
        # above); the CPU provider is always the last resort, as in onnxruntime.
        chosen = [(n, o) for n, o in zip(names, options) if n in available]
        if not any(n == "CPUExecutionProvider" for n, _ in chosen):
            chosen.append(("CPUExecutionProvider", {}))
        if so._load_canceled:
            what = self._model_path if self._model_path is not None else "<memory>"
            raise ModelLoadCanceled(
                f"[ONNXRuntimeError] : 12 : MODEL_LOAD_CANCELED : Load model from {what} failed: "
                "loading was canceled by the user (set_load_cancellation_flag)"
            )
        opt_level = _OPT_LEVEL_TO_ONYX.get(int(so.graph_optimization_level), 99)
        self._profiling_start_ns = time.time_ns() if so.enable_profiling else 0
        self._sess = _core.Session(
            self._model_path if self._model_bytes is None else self._model_bytes,
            opt_level,
            int(so.intra_op_num_threads),
            int(so.inter_op_num_threads),
            int(so.execution_mode),
            so._onyx_log_level(),
            [_PROVIDER_TO_ONYX[n] for n, _ in chosen],
            {"session.enable_cpu_mem_arena": "1" if so.enable_cpu_mem_arena else "0",
             "session.enable_mem_pattern": "1" if so.enable_mem_pattern else "0",
             "session.use_per_session_threads": "1" if so.use_per_session_threads else "0", **so._config,
             # provider options, validated by the C++ session (unknown keys and bad values are errors)
             **{f"onyx.provider_option.{n}.{k}": str(v) for n, o in chosen if n != "CPUExecutionProvider"
                for k, v in o.items()}},
            enable_profiling=bool(so.enable_profiling),
            profile_file_prefix=str(so.profile_file_prefix),
            optimized_model_filepath=os.fspath(so.optimized_model_filepath or ""),
            free_dimension_overrides_by_name=dict(so._free_dims_by_name),
            free_dimension_overrides_by_denotation=dict(so._free_dims_by_denotation),
            initializers=dict(so._initializers),
            logid=str(so.logid),
            external_files=dict(so._external_files),
        )
        # The providers in use: a CUDA provider without a device falls back to
        # the CPU with a warning (as onnxruntime), and is not listed then.
        in_use = list(self._sess.providers())
        chosen = [(n, o) for n, o in chosen if n in in_use]
        self._providers = [n for n, _ in chosen]
        # The CPU provider takes no options and reports none (as onnxruntime).
        self._provider_options = [{} if n == "CPUExecutionProvider" else {k: str(v) for k, v in o.items()} for n, o in chosen]
        self._inputs_meta = [NodeArg(*m) for m in self._sess.inputs()]
        self._outputs_meta = [NodeArg(*m) for m in self._sess.outputs()]
        self._overridable_initializers = [NodeArg(*m) for m in self._sess.overridable_initializers()]

    # Devices the selection delegate may pick at most (onnxruntime passes the same number).
    _MAX_EP_SELECTIONS = 8

    def _providers_chosen_by_options(self) -> list:
        """The (provider, options) pairs SessionOptions chose: those added by name or by
        device, else those the selection delegate picks, else the policy's (the CPU's)."""
        so = self._sess_options
        if so._ep_providers:
            return [(name, dict(opts)) for name, opts in so._ep_providers]
        if so._ep_delegate is not None:
            meta = read_model_metadata(self._model_source)
            model_metadata = {
                "doc_string": meta["description"],
                "domain": meta["domain"],
                "graph_description": meta["graph_description"],
                "graph_name": meta["graph_name"],
                "model_version": str(meta["version"]),
                "producer_name": meta["producer_name"],
                "producer_version": meta["producer_version"],
            }
            try:
                selected = list(so._ep_delegate(get_ep_devices(), model_metadata, {}, self._MAX_EP_SELECTIONS))
                for d in selected:
                    if not isinstance(d, OrtEpDevice):
                        raise TypeError(f"it returned a {type(d).__name__}, not an OrtEpDevice")
            except Exception as e:
                raise Fail(f"[ONNXRuntimeError] : 1 : FAIL : EP selection delegate failed: {e}") from e
            if not selected:
                raise Fail("[ONNXRuntimeError] : 1 : FAIL : EP selection delegate did not select anything.")
            if len(selected) > self._MAX_EP_SELECTIONS:
                raise Fail(
                    f"[ONNXRuntimeError] : 1 : FAIL : EP selection delegate selected {len(selected)} devices, "
                    f"more than the maximum of {self._MAX_EP_SELECTIONS}"
                )
            names = []
            for d in selected:
                if d.ep_name not in names:
                    names.append(d.ep_name)
            return [(name, {}) for name in names]
        # A policy: every device Onyx lists is the CPU, so every policy comes to the CPU provider.
        return [("CPUExecutionProvider", {})]


class IOBinding:
    """Binds inputs and outputs of a session to values (onnxruntime.IOBinding).
    Onyx runs on the CPU, so synchronization is a no-op."""

    def __init__(self, session: Session):
        self._session = session
        self._inputs: dict[str, OrtValue] = {}
        self._outputs: dict[str, OrtValue | None] = {}
        self._results: list[OrtValue] = []

    @staticmethod
    def _device(device_type, device_id) -> OrtDevice:
        """The OrtDevice a name ('cpu', 'cuda', ...) or an OrtDevice stands for; an unknown name raises."""
        if isinstance(device_type, OrtDevice):
            return device_type
        return OrtDevice.make(device_type, int(device_id))

    @staticmethod
    def _refuse_device_pointer(device: OrtDevice, what: str) -> None:
        if device.device_type() != OrtDevice.cpu():
            raise InvalidArgument(
                f"[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : {what} a pointer to memory of device "
                f"{device._describe()} "
                "is not supported by Onyx's Python API: bind a numpy array or an OrtValue (host memory)"
            )

    def bind_cpu_input(self, name: str, arr_on_cpu) -> None:
        self._inputs[name] = OrtValue.ortvalue_from_numpy(arr_on_cpu)

    def bind_input(self, name, device_type, device_id, element_type, shape, buffer_ptr) -> None:
        self._refuse_device_pointer(self._device(device_type, device_id), "binding an input to")
        self._inputs[name] = OrtValue._from_pointer(int(buffer_ptr), [int(d) for d in shape], element_type)

    def bind_ortvalue_input(self, name: str, ortvalue: OrtValue) -> None:
        self._inputs[name] = ortvalue._ortvalue

    def synchronize_inputs(self) -> None:
        pass

    def bind_output(self, name, device_type="cpu", device_id=0, element_type=None, shape=None, buffer_ptr=None) -> None:
        device = self._device(device_type, device_id)
        if buffer_ptr is None:
            # The output is allocated at run time in host memory, whichever device is named: Python
            # values live there (onnxruntime's CPU package does the same for a device it lacks).
            self._outputs[name] = None
            return
        if element_type is None or shape is None:
            raise ValueError("bind_output: 'element_type' and 'shape' are required with 'buffer_ptr'")
        self._refuse_device_pointer(device, "binding an output to")
        self._outputs[name] = OrtValue._from_pointer(int(buffer_ptr), [int(d) for d in shape], element_type)

    def bind_ortvalue_output(self, name: str, ortvalue: OrtValue) -> None:
        self._outputs[name] = ortvalue._ortvalue

    def synchronize_outputs(self) -> None:
        pass

    def get_outputs(self) -> list[OrtValue]:
        return list(self._results)

    def get_outputs_as_ortvaluevector(self) -> list[OrtValue]:
        return list(self._results)

    def copy_outputs_to_cpu(self) -> list:
        out = []
        for v in self._results:
            a = v.numpy()
            out.append([x.copy() for x in a] if isinstance(a, list) else (a.copy() if a is not None else None))
        return out

    def clear_binding_inputs(self) -> None:
        self._inputs.clear()

    def clear_binding_outputs(self) -> None:
        self._outputs.clear()
        self._results = []

    def _run(self, run_options) -> None:
        if not self._outputs:
            raise RuntimeError("Error in execution: At least one output should be requested.")
        names = list(self._outputs)
        results = self._session.run_with_ort_values(names, self._inputs, run_options)
        for i, name in enumerate(names):
            bound = self._outputs[name]
            if bound is not None:
                bound._copy_from(results[i])  # the caller's buffer gets the result
                results[i] = bound
        self._results = results
