"""Devices, memory descriptions and execution-provider devices, as onnxruntime's
Python API names them (OrtDevice, OrtMemoryInfo, OrtEpDevice, ...).

Onyx runs on the CPU (and, in a CUDA build, on an NVIDIA GPU through the
session's CUDA provider; Python values stay in host memory). These classes
describe devices the way onnxruntime does so that code written against it
keeps working; a device Onyx cannot use is refused with an error naming it.
"""

from __future__ import annotations

import enum
import platform

from onyx import _core
from onyx.capi._enum import _OrtEnum


def _invalid_argument(message: str) -> Exception:
    return _core.InvalidArgument(f"[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : {message}")


def _fail(message: str) -> Exception:
    return _core.Fail(f"[ONNXRuntimeError] : 1 : FAIL : {message}")


class OrtMemoryInfoDeviceType(_OrtEnum):
    # In onnxruntime's order (not the values').
    CPU = 0
    GPU = 1
    NPU = 3
    FPGA = 2


class OrtDeviceMemoryType(_OrtEnum):
    DEFAULT = 0
    HOST_ACCESSIBLE = 5


class OrtHardwareDeviceType(_OrtEnum):
    CPU = 0
    GPU = 1
    NPU = 2


class OrtExecutionProviderDevicePolicy(_OrtEnum):
    DEFAULT = 0
    PREFER_CPU = 1
    PREFER_NPU = 2
    PREFER_GPU = 3
    MAX_PERFORMANCE = 4
    MAX_EFFICIENCY = 5
    MIN_OVERALL_POWER = 6


class OrtSparseFormat(_OrtEnum):
    ORT_SPARSE_UNDEFINED = 0
    ORT_SPARSE_COO = 1
    ORT_SPARSE_CSRC = 2
    ORT_SPARSE_BLOCK_SPARSE = 4


class OrtDeviceVendorId(enum.IntEnum):
    """PCI vendor ids of device makers (a plain IntEnum, as onnxruntime's)."""

    NONE = 0x0000
    AMD = 0x1002
    NVIDIA = 0x10DE
    ARM = 0x13B5
    MICROSOFT = 0x1414
    HUAWEI = 0x19E5
    QUALCOMM = 0x5143
    INTEL = 0x8086


class DeviceNotAvailable(_core.InvalidArgument, RuntimeError):
    """A device this build of Onyx cannot place values on. An InvalidArgument, as Onyx's other
    argument errors, and a RuntimeError, which onnxruntime raises in this case."""


def _cuda_available() -> bool:
    return "CUDAExecutionProvider" in _core.available_providers()


# ---------------------------------------------------------------- OrtDevice

# Device type numbers (onnxruntime's OrtDevice::DeviceType): several names share one type.
_CPU, _GPU, _FPGA, _NPU, _DML = 0, 1, 2, 3, 4
_DEVICE_TYPE_BY_NAME = {"cpu": _CPU, "cuda": _GPU, "gpu": _GPU, "webgpu": _GPU, "cann": _NPU, "npu": _NPU, "dml": _DML}
# The vendor a name implies when none is given (the others get vendor 0).
_ALIAS_VENDOR = {
    "cuda": OrtDeviceVendorId.NVIDIA,
    "dml": OrtDeviceVendorId.MICROSOFT,
    "cann": OrtDeviceVendorId.HUAWEI,
    "webgpu": OrtDeviceVendorId.NONE,
}
_TYPE_NAMES = {_CPU: "cpu", _GPU: "gpu", _FPGA: "fpga", _NPU: "npu", _DML: "dml"}


class OrtDevice:
    """A device: type (OrtDevice.cpu(), .gpu(), ...), memory type, vendor id and device id.

    Both of onnxruntime's spellings work: the native constructor
    ``OrtDevice(device_type, mem_type, vendor_id, device_id)`` (or without
    vendor_id) with ``vendor_id()`` / ``mem_type()``, and the Python wrapper's
    ``OrtDevice.make("cuda", 0)`` with ``device_vendor_id()`` / ``device_mem_type()``.
    """

    __slots__ = ("_type", "_mem_type", "_vendor_id", "_device_id")

    def __init__(self, *args):
        if len(args) == 1 and isinstance(args[0], OrtDevice):  # the Python wrapper's constructor
            other = args[0]
            args = (other._type, other._mem_type, other._vendor_id, other._device_id)
        if len(args) == 3:
            args = (args[0], args[1], 0, args[2])
        if len(args) != 4:
            raise TypeError(
                "OrtDevice(device_type, mem_type, vendor_id, device_id) or OrtDevice(device_type, mem_type, device_id)"
                f" takes 3 or 4 ints, got {len(args)} arguments"
            )
        self._type, self._mem_type, self._vendor_id, self._device_id = (int(a) for a in args)
        if self._type == _DML:  # onnxruntime describes DirectML as a Microsoft GPU
            self._type, self._vendor_id = _GPU, int(OrtDeviceVendorId.MICROSOFT)

    # Device type numbers, as onnxruntime's native OrtDevice gives them.
    @staticmethod
    def cpu() -> int:
        return _CPU

    @staticmethod
    def gpu() -> int:
        return _GPU

    @staticmethod
    def cuda() -> int:
        return _GPU

    @staticmethod
    def webgpu() -> int:
        return _GPU

    @staticmethod
    def fpga() -> int:
        return _FPGA

    @staticmethod
    def npu() -> int:
        return _NPU

    @staticmethod
    def cann() -> int:
        return _NPU

    @staticmethod
    def dml() -> int:
        return _DML

    @staticmethod
    def default_memory() -> int:
        return 0

    @staticmethod
    def make(ort_device_name: str, device_id: int, vendor_id: int = -1) -> OrtDevice:
        """The device named 'cpu', 'cuda', 'gpu', 'npu', 'cann', 'dml' or 'webgpu' (lower case, as onnxruntime)."""
        if ort_device_name not in _DEVICE_TYPE_BY_NAME:
            raise ValueError(f"Unsupported device type: {ort_device_name}")
        device_type = _DEVICE_TYPE_BY_NAME[ort_device_name]
        if vendor_id < 0:
            vendor_id = _ALIAS_VENDOR.get(ort_device_name, 0)
        return OrtDevice(device_type, OrtDevice.default_memory(), int(vendor_id), int(device_id))

    def _get_c_device(self) -> OrtDevice:
        return self

    def device_id(self) -> int:
        return self._device_id

    def device_type(self) -> int:
        return self._type

    def vendor_id(self) -> int:
        return self._vendor_id

    def mem_type(self) -> int:
        return self._mem_type

    device_vendor_id = vendor_id
    device_mem_type = mem_type

    def __eq__(self, other):
        if not isinstance(other, OrtDevice):
            return NotImplemented
        return (self._type, self._mem_type, self._vendor_id, self._device_id) == (
            other._type,
            other._mem_type,
            other._vendor_id,
            other._device_id,
        )

    def __hash__(self):
        return hash((self._type, self._mem_type, self._vendor_id, self._device_id))

    def __repr__(self):
        return (
            f"OrtDevice(type={_TYPE_NAMES.get(self._type, self._type)}, mem_type={self._mem_type}, "
            f"vendor_id={self._vendor_id:#x}, device_id={self._device_id})"
        )

    def _describe(self) -> str:
        """For messages: 'cuda' (device 0), 'gpu' (vendor 0x1002, device 0), ..."""
        name = _VENDOR_DEVICE_NAMES.get((self._type, self._vendor_id))
        if name:
            return f"'{name}' (device {self._device_id})"
        vendor = f"vendor {self._vendor_id:#x}, " if self._vendor_id else ""
        return f"'{_TYPE_NAMES.get(self._type, self._type)}' ({vendor}device {self._device_id})"


_VENDOR_DEVICE_NAMES = {
    (_GPU, OrtDeviceVendorId.NVIDIA): "cuda",
    (_GPU, OrtDeviceVendorId.MICROSOFT): "dml",
    (_NPU, OrtDeviceVendorId.HUAWEI): "cann",
}


def _core_device_name(device_type, device_id=0, vendor_id=-1) -> str:
    """The device Onyx's native module places a value on ('cpu' or 'cuda') for a
    device name or an OrtDevice; InvalidArgument for a device Onyx cannot use."""
    device = device_type if isinstance(device_type, OrtDevice) else OrtDevice.make(device_type, device_id, vendor_id)
    if device.device_type() == _CPU:
        return "cpu"
    if device.device_type() == _GPU and device.vendor_id() == OrtDeviceVendorId.NVIDIA and _cuda_available():
        return "cuda"
    raise DeviceNotAvailable(
        f"[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : device {device._describe()} is not available in this build "
        "of Onyx (only 'cpu')"
    )


# ---------------------------------------------------------------- OrtMemoryInfo

# Names onnxruntime's OrtMemoryInfo(name, ...) knows: name -> (device type, vendor, memory type).
_MEMORY_NAMES = {
    "Cpu": (OrtMemoryInfoDeviceType.CPU, 0, OrtDeviceMemoryType.DEFAULT),
    "Cuda": (OrtMemoryInfoDeviceType.GPU, OrtDeviceVendorId.NVIDIA, OrtDeviceMemoryType.DEFAULT),
    "CudaPinned": (OrtMemoryInfoDeviceType.GPU, OrtDeviceVendorId.NVIDIA, OrtDeviceMemoryType.HOST_ACCESSIBLE),
    "DML": (OrtMemoryInfoDeviceType.GPU, OrtDeviceVendorId.MICROSOFT, OrtDeviceMemoryType.DEFAULT),
    "WebGPU_Buffer": (OrtMemoryInfoDeviceType.GPU, 0, OrtDeviceMemoryType.DEFAULT),
}


class OrtMemoryInfo:
    """Where an allocator's memory lives: name, device, memory and allocator types."""

    __slots__ = (
        "_name",
        "_allocator_type",
        "_device_id",
        "_mem_type",
        "_device_type",
        "_vendor_id",
        "_device_mem_type",
    )

    def __init__(self, name: str, allocator_type, device_id: int, mem_type):
        from onyx.capi.onnxruntime_pybind11_state import OrtAllocatorType, OrtMemType

        if name not in _MEMORY_NAMES:
            raise RuntimeError(
                f"OrtMemoryInfo: unknown memory name '{name}' (known: {', '.join(_MEMORY_NAMES)}); "
                "describe other devices with OrtMemoryInfo.create_v2"
            )
        device_type, vendor_id, device_mem_type = _MEMORY_NAMES[name]
        self._name = name
        self._allocator_type = OrtAllocatorType(int(allocator_type))
        self._mem_type = OrtMemType(int(mem_type))
        # Host memory has one device, number 0, whatever was asked (as onnxruntime).
        self._device_id = 0 if device_type == OrtMemoryInfoDeviceType.CPU else int(device_id)
        self._device_type = device_type
        self._vendor_id = int(vendor_id)
        self._device_mem_type = device_mem_type

    @staticmethod
    def create_v2(
        name: str, device_type, vendor_id: int, device_id: int, device_mem_type, alignment: int, allocator_type
    ) -> OrtMemoryInfo:
        """Any device: OrtMemoryInfo.create_v2(name, OrtMemoryInfoDeviceType, vendor_id, device_id,
        OrtDeviceMemoryType, alignment, OrtAllocatorType)."""
        from onyx.capi.onnxruntime_pybind11_state import OrtAllocatorType, OrtMemType

        info = object.__new__(OrtMemoryInfo)
        info._name = str(name)
        info._device_type = OrtMemoryInfoDeviceType(int(device_type))
        info._vendor_id = int(vendor_id)
        info._device_id = int(device_id)
        info._device_mem_type = OrtDeviceMemoryType(int(device_mem_type))
        info._allocator_type = OrtAllocatorType(int(allocator_type))
        # Host-accessible memory is what onnxruntime's CPU_OUTPUT memory type names.
        host = info._device_mem_type == OrtDeviceMemoryType.HOST_ACCESSIBLE
        info._mem_type = OrtMemType.CPU_OUTPUT if host else OrtMemType.DEFAULT
        if int(alignment) < 0:
            raise ValueError(f"OrtMemoryInfo.create_v2: alignment must be >= 0, got {alignment}")
        return info

    name = property(lambda self: self._name, doc="The memory's name ('Cpu', 'Cuda', ...).")
    device_id = property(lambda self: self._device_id)
    mem_type = property(lambda self: self._mem_type)
    allocator_type = property(lambda self: self._allocator_type)
    device_mem_type = property(lambda self: self._device_mem_type)
    device_vendor_id = property(lambda self: self._vendor_id)

    def _is_cpu(self) -> bool:
        return self._device_type == OrtMemoryInfoDeviceType.CPU

    def __repr__(self):
        return (
            f"OrtMemoryInfo(name={self._name!r}, device={self._device_type.name}, device_id={self._device_id}, "
            f"mem_type={self._mem_type}, allocator_type={self._allocator_type}, "
            f"device_mem_type={self._device_mem_type})"
        )


def _cpu_memory_info() -> OrtMemoryInfo:
    from onyx.capi.onnxruntime_pybind11_state import OrtAllocatorType, OrtMemType

    return OrtMemoryInfo("Cpu", OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, OrtMemType.DEFAULT)


# ---------------------------------------------------------------- allocators

_ARENA_FIELDS = (
    "max_mem",
    "arena_extend_strategy",
    "initial_chunk_size_bytes",
    "max_dead_bytes_per_chunk",
    "initial_growth_chunk_size_bytes",
    "max_power_of_two_extend_bytes",
)


class OrtArenaCfg:
    """Arena settings: OrtArenaCfg(max_mem, arena_extend_strategy, initial_chunk_size_bytes,
    max_dead_bytes_per_chunk) or OrtArenaCfg({name: value}); -1 (0 for max_mem) means the default."""

    __slots__ = _ARENA_FIELDS

    def __init__(self, *args):
        for field in _ARENA_FIELDS:
            setattr(self, field, 0 if field == "max_mem" else -1)
        if len(args) == 1 and isinstance(args[0], dict):
            for key, value in args[0].items():
                if key not in _ARENA_FIELDS:
                    raise RuntimeError(f"Invalid OrtArenaCfg option: {key} (known: {', '.join(_ARENA_FIELDS)})")
                if isinstance(value, bool) or not isinstance(value, int):
                    raise TypeError(f"OrtArenaCfg option {key} must be an int, got {type(value).__name__}")
                setattr(self, key, value)
        elif len(args) == 4:
            for field, value in zip(_ARENA_FIELDS, args):
                setattr(self, field, int(value))
        else:
            raise TypeError(
                "OrtArenaCfg(max_mem, arena_extend_strategy, initial_chunk_size_bytes, max_dead_bytes_per_chunk) "
                f"or OrtArenaCfg(dict), got {len(args)} arguments"
            )

    def __repr__(self):
        return "OrtArenaCfg(" + ", ".join(f"{f}={getattr(self, f)}" for f in _ARENA_FIELDS) + ")"


# The allocators registered in the process's environment: device kind -> (memory info, arena settings).
_registered_allocators: dict[str, tuple[OrtMemoryInfo, OrtArenaCfg | None]] = {}


def create_and_register_allocator(mem_info: OrtMemoryInfo, arena_cfg: OrtArenaCfg | None) -> None:
    """Registers the CPU allocator that sessions with the config entry
    'session.use_env_allocators' = '1' share (Onyx's environment arena: one
    arena for all those sessions instead of one each). The settings are
    recorded; Onyx's arena sizes its regions itself."""
    if not isinstance(mem_info, OrtMemoryInfo):
        raise TypeError(f"create_and_register_allocator: expected an OrtMemoryInfo, got {type(mem_info).__name__}")
    if arena_cfg is not None and not isinstance(arena_cfg, OrtArenaCfg):
        raise TypeError(
            f"create_and_register_allocator: expected an OrtArenaCfg or None, got {type(arena_cfg).__name__}"
        )
    if not mem_info._is_cpu():
        raise RuntimeError(
            f"Error when creating and registering allocator: Onyx shares CPU allocators only, not '{mem_info.name}'"
        )
    _registered_allocators["cpu"] = (mem_info, arena_cfg)


def create_and_register_allocator_v2(provider_type: str, mem_info: OrtMemoryInfo, provider_options, arena_cfg) -> None:
    """create_and_register_allocator for a provider: only CPUExecutionProvider has one to share."""
    if provider_type != "CPUExecutionProvider":
        raise RuntimeError(
            "Error when creating and registering allocator in create_and_register_allocator_v2: "
            f"{provider_type} has no shareable allocator in Onyx (only CPUExecutionProvider)"
        )
    dict(provider_options)  # must be a mapping, as onnxruntime's
    create_and_register_allocator(mem_info, arena_cfg)


# ---------------------------------------------------------------- EP devices


def _no_constructor(cls):
    def __init__(self, *args, **kwargs):
        raise TypeError(f"{cls.__module__}.{cls.__name__}: No constructor defined!")

    cls.__init__ = __init__
    return cls


def _make(cls, **fields):
    obj = object.__new__(cls)
    for name, value in fields.items():
        object.__setattr__(obj, "_" + name, value)
    return obj


@_no_constructor
class OrtHardwareDevice:
    """A piece of hardware an execution provider can use (see get_ep_devices())."""

    __slots__ = ("_type", "_vendor_id", "_vendor", "_device_id", "_metadata")
    type = property(lambda self: self._type, doc="OrtHardwareDeviceType of the device.")
    vendor_id = property(lambda self: self._vendor_id, doc="The vendor's PCI id (0x1022 AMD, 0x8086 Intel, ...).")
    vendor = property(lambda self: self._vendor, doc="The vendor's name.")
    device_id = property(lambda self: self._device_id, doc="The device's id (0 for a CPU).")
    metadata = property(lambda self: dict(self._metadata), doc="Further facts as str -> str.")

    def __repr__(self):
        return f"<OrtHardwareDevice {self._type.name} {self._vendor} vendor_id={self._vendor_id:#x}>"


@_no_constructor
class OrtEpDevice:
    """An execution provider paired with a hardware device it runs on (see get_ep_devices())."""

    __slots__ = ("_ep_name", "_ep_vendor", "_ep_metadata", "_ep_options", "_device")
    ep_name = property(lambda self: self._ep_name, doc="The execution provider's name.")
    ep_vendor = property(lambda self: self._ep_vendor, doc="Who makes the execution provider.")
    ep_metadata = property(lambda self: dict(self._ep_metadata), doc="The provider's metadata (str -> str).")
    ep_options = property(lambda self: dict(self._ep_options), doc="The provider options this device implies.")
    device = property(lambda self: self._device, doc="The OrtHardwareDevice.")

    def memory_info(self, memory_type) -> OrtMemoryInfo | None:
        """The memory of a non-CPU device; None for the CPU provider, whose memory is the host's (as onnxruntime)."""
        OrtDeviceMemoryType(int(memory_type))
        return None

    def create_sync_stream(self):
        raise RuntimeError(f"OrtEpDevice.create_sync_stream: {self._ep_name} runs on the host and has no streams")

    def __repr__(self):
        return f"<OrtEpDevice {self._ep_name} on {self._device!r}>"


# x86 vendor strings (cpuid) -> (vendor name, PCI vendor id), as onnxruntime reports CPUs.
_CPU_VENDORS = {"AuthenticAMD": ("AMD", 0x1022), "GenuineIntel": ("Intel", 0x8086)}
# ARM implementer codes (/proc/cpuinfo "CPU implementer").
_ARM_IMPLEMENTERS = {"0x41": ("ARM", OrtDeviceVendorId.ARM), "0x51": ("Qualcomm", OrtDeviceVendorId.QUALCOMM)}


def _cpu_vendor() -> tuple[str, int]:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                key, value = key.strip(), value.strip()
                if key == "vendor_id" and value in _CPU_VENDORS:
                    return _CPU_VENDORS[value]
                if key == "CPU implementer" and value in _ARM_IMPLEMENTERS:
                    name, vid = _ARM_IMPLEMENTERS[value]
                    return name, int(vid)
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown", 0


_ep_devices_cache: list[OrtEpDevice] | None = None


def get_ep_devices() -> list[OrtEpDevice]:
    """The (execution provider, device) pairs sessions can be given with
    SessionOptions.add_provider_for_devices: Onyx's CPU provider on the host CPU.
    The same objects are returned at every call (as onnxruntime)."""
    global _ep_devices_cache
    if _ep_devices_cache is None:
        from onyx import __version__

        vendor, vendor_id = _cpu_vendor()
        cpu = _make(
            OrtHardwareDevice,
            type=OrtHardwareDeviceType.CPU,
            vendor_id=vendor_id,
            vendor=vendor,
            device_id=0,
            metadata={},
        )
        _ep_devices_cache = [
            _make(
                OrtEpDevice,
                ep_name="CPUExecutionProvider",
                ep_vendor="Onyx",
                ep_metadata={"version": __version__},
                ep_options={},
                device=cpu,
            )
        ]
    return list(_ep_devices_cache)


def register_execution_provider_library(registration_name: str, path_to_library) -> None:
    raise _fail(
        f"cannot register execution provider library '{registration_name}' from '{path_to_library}': "
        "Onyx has no plugin execution providers (its providers are built in: "
        + ", ".join(_core.available_providers())
        + ")"
    )


def unregister_execution_provider_library(registration_name: str) -> None:
    # Nothing can be registered (see above), so no name ever is.
    raise _fail(f"Execution provider library: {registration_name} was not registered.")


# ---------------------------------------------------------------- graph assignment


@_no_constructor
class OrtEpAssignedNode:
    """A node of the optimized graph and the provider that runs it."""

    __slots__ = ("_name", "_domain", "_op_type")
    name = property(lambda self: self._name, doc="The node's name")
    domain = property(lambda self: self._domain, doc="The node's domain")
    op_type = property(lambda self: self._op_type, doc="The node's operator type")

    def __repr__(self):
        return f"<OrtEpAssignedNode {self._name!r} {self._domain + '.' if self._domain else ''}{self._op_type}>"


@_no_constructor
class OrtEpAssignedSubgraph:
    """Nodes an execution provider runs (one node per subgraph: Onyx's providers
    claim nodes one by one, as onnxruntime's CPU and CUDA providers do)."""

    __slots__ = ("_ep_name", "_nodes")
    ep_name = property(lambda self: self._ep_name, doc="The provider the subgraph is assigned to.")

    def get_nodes(self) -> list[OrtEpAssignedNode]:
        return list(self._nodes)

    def __repr__(self):
        return f"<OrtEpAssignedSubgraph {self._ep_name} {[n.name for n in self._nodes]}>"


def _assigned_subgraphs(assignment) -> list[OrtEpAssignedSubgraph]:
    return [
        _make(
            OrtEpAssignedSubgraph,
            ep_name=provider,
            nodes=[_make(OrtEpAssignedNode, name=name, domain=domain, op_type=op_type)],
        )
        for name, domain, op_type, provider in assignment
    ]


class OrtExternalInitializerInfo:
    """Where an initializer's data lies in an external file (onnxruntime's
    ModelCompiler API, which Onyx does not have, takes these; kept as data)."""

    __slots__ = ("filepath", "file_offset", "byte_size")

    def __init__(self, filepath: str, file_offset: int, byte_size: int):
        self.filepath = str(filepath)
        self.file_offset = int(file_offset)
        self.byte_size = int(byte_size)

    def __repr__(self):
        return f"OrtExternalInitializerInfo({self.filepath!r}, {self.file_offset}, {self.byte_size})"
