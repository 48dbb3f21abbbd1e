"""onnxruntime.capi.onnxruntime_validation for Onyx: the package's name and
version, and a check that the platform is one Onyx is built for."""

import platform
import warnings


def check_distro_info() -> None:
    """Warns when the operating system is not Linux (the one Onyx is built and tested on)."""
    system = platform.system()
    if system != "Linux":
        warnings.warn(f"Unsupported platform ({system}): Onyx is built and tested on Linux only.")


def get_package_name_and_version_info() -> tuple:
    """(package name, version, CUDA version the package was built with: '' for the CPU package)."""
    from onyx import __version__

    return "onyx", __version__, ""
