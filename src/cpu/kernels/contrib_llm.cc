// The com.microsoft ops of LLM exports (onnxruntime-genai's model builder,
// ORT's MatMulNBitsQuantizer). MatMulNBits lives in contrib_matmul_nbits.cc.
#include "cpu/cpu_provider.h"

namespace onyx {

void register_contrib_matmul_nbits(KernelRegistry& r);  // contrib_matmul_nbits.cc

void register_contrib_llm(KernelRegistry& r) {
  register_contrib_matmul_nbits(r);
}

}  // namespace onyx
