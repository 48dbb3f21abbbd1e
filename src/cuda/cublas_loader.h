// cuBLAS is opened with dlopen the first time a CUDA provider needs it rather
// than linked: the library (with cuBLASLt, ~600 MB) ran static initializers
// at every process start - 0.1 s and ~215 MB of RSS for a CPU-only run.
// cublas_loader.cc defines the few cuBLAS entry points Onyx calls; each
// forwards to the real one.
#pragma once
#include <string>

namespace onyx {

// Opens cuBLAS (once; later calls return the first result). On failure,
// *error says which library could not be opened and why.
bool load_cublas(std::string* error);

}  // namespace onyx
