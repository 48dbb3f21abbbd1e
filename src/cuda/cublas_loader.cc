// The cuBLAS entry points Onyx calls, forwarding to the library opened on
// first use (see cublas_loader.h). Their signatures are the header's: a
// mismatch fails to compile.
#include "cuda/cublas_loader.h"

#include <cublas_v2.h>
#include <dlfcn.h>

namespace onyx {

namespace {

struct Library {
  void* handle = nullptr;
  std::string error;
};

const Library& cublas_library() {
  static const Library lib = [] {
    Library l;
    // the loader's search path first (LD_LIBRARY_PATH, RUNPATH, ld.so.conf),
    // then the toolkit directory the build found
    l.handle = dlopen(ONYX_CUBLAS_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (l.handle) return l;
    const char* e = dlerror();
    l.error = std::string("cannot open ") + ONYX_CUBLAS_LIBRARY + ": " + (e ? e : "unknown error");
    const std::string in_toolkit = std::string(ONYX_CUBLAS_DIR) + "/" + ONYX_CUBLAS_LIBRARY;
    l.handle = dlopen(in_toolkit.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (l.handle) {
      l.error.clear();
    } else {
      e = dlerror();
      l.error += std::string("; nor ") + in_toolkit + ": " + (e ? e : "unknown error");
    }
    return l;
  }();
  return lib;
}

template <class Fn>
Fn resolve(const char* name) {
  const Library& lib = cublas_library();
  return lib.handle ? reinterpret_cast<Fn>(dlsym(lib.handle, name)) : nullptr;
}

}  // namespace

bool load_cublas(std::string* error) {
  const Library& lib = cublas_library();
  if (!lib.handle && error) *error = lib.error;
  return lib.handle != nullptr;
}

}  // namespace onyx

// Each entry point looks its target up once; without the library it reports
// CUBLAS_STATUS_NOT_INITIALIZED, as cuBLAS does without a usable device.
// FnType: the entry point's pointer type (spelled out where the header
// overloads the name for C++).
#define ONYX_CUBLAS_FORWARD_AS(FnType, name, ...)                                 \
  static const auto real = ::onyx::resolve<FnType>(#name);                       \
  return real ? real(__VA_ARGS__) : CUBLAS_STATUS_NOT_INITIALIZED
#define ONYX_CUBLAS_FORWARD(name, ...) ONYX_CUBLAS_FORWARD_AS(decltype(&name), name, __VA_ARGS__)

namespace {
using GemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                    const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                                    cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
using GemmStridedBatchedExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                                  const void*, const void*, cudaDataType, int, long long int,
                                                  const void*, cudaDataType, int, long long int, const void*, void*,
                                                  cudaDataType, int, long long int, int, cublasComputeType_t,
                                                  cublasGemmAlgo_t);
}  // namespace

extern "C" {

cublasStatus_t CUBLASWINAPI cublasCreate_v2(cublasHandle_t* handle) {
  ONYX_CUBLAS_FORWARD(cublasCreate_v2, handle);
}

cublasStatus_t CUBLASWINAPI cublasDestroy_v2(cublasHandle_t handle) {
  ONYX_CUBLAS_FORWARD(cublasDestroy_v2, handle);
}

cublasStatus_t CUBLASWINAPI cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  ONYX_CUBLAS_FORWARD(cublasSetStream_v2, handle, stream);
}

cublasStatus_t CUBLASWINAPI cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace, size_t bytes) {
  ONYX_CUBLAS_FORWARD(cublasSetWorkspace_v2, handle, workspace, bytes);
}

cublasStatus_t CUBLASWINAPI cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  ONYX_CUBLAS_FORWARD(cublasSetMathMode, handle, mode);
}

cublasStatus_t CUBLASWINAPI cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                         int m, int n, int k, const void* alpha, const void* A, cudaDataType Atype,
                                         int lda, const void* B, cudaDataType Btype, int ldb, const void* beta,
                                         void* C, cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                                         cublasGemmAlgo_t algo) {
  ONYX_CUBLAS_FORWARD_AS(GemmExFn, cublasGemmEx, handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C,
                         Ctype, ldc, computeType, algo);
}

cublasStatus_t CUBLASWINAPI cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                                                       cublasOperation_t transb, int m, int n, int k,
                                                       const void* alpha, const void* A, cudaDataType Atype, int lda,
                                                       long long int strideA, const void* B, cudaDataType Btype,
                                                       int ldb, long long int strideB, const void* beta, void* C,
                                                       cudaDataType Ctype, int ldc, long long int strideC,
                                                       int batchCount, cublasComputeType_t computeType,
                                                       cublasGemmAlgo_t algo) {
  ONYX_CUBLAS_FORWARD_AS(GemmStridedBatchedExFn, cublasGemmStridedBatchedEx, handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B,
                         Btype, ldb, strideB, beta, C, Ctype, ldc, strideC, batchCount, computeType, algo);
}

}  // extern "C"
