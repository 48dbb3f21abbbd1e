// com.microsoft MatMulBnb4: a float matrix times weights quantized the way
// bitsandbytes does (4-bit FP4 or NF4 codes scaled by one absmax per block),
// as ONNX Runtime's CPU provider computes it: the weights are expanded to a
// float [N, K] matrix and multiplied in float.
#include <string>
#include <vector>

#include "cpu/cpu_provider.h"
#include "cpu/gemm.h"

namespace onyx {
namespace {

const char* const kMsDomain = "com.microsoft";

// bitsandbytes' code books (ORT's tables): FP4 is a sign bit and a 3-bit
// float with bias 3, divided by its largest value 12; NF4 holds the normal
// distribution's quantiles.
constexpr float kFp4Values[16] = {
    0.0f,  5.208333333e-03f,  0.66666667f,  1.0f,  0.33333333f,  0.5f,  0.16666667f,  0.25f,
    -0.0f, -5.208333333e-03f, -0.66666667f, -1.0f, -0.33333333f, -0.5f, -0.16666667f, -0.25f};
constexpr float kNf4Values[16] = {-1.0f,
                                  -0.6961928009986877f,
                                  -0.5250730514526367f,
                                  -0.39491748809814453f,
                                  -0.28444138169288635f,
                                  -0.18477343022823334f,
                                  -0.09105003625154495f,
                                  0.0f,
                                  0.07958029955625534f,
                                  0.16093020141124725f,
                                  0.24611230194568634f,
                                  0.33791524171829224f,
                                  0.44070982933044434f,
                                  0.5626170039176941f,
                                  0.7229568362236023f,
                                  1.0f};

struct Bnb4Attrs {
  int64_t K, N, block_size;
  bool nf4, trans_b;
};

// The N * K weights in their stored order: code e is the high nibble of byte
// e / 2 when e is even, the low one when odd, times its block's absmax.
std::vector<float> dequantize_bnb4(const Tensor& B, const Tensor& absmax, const Bnb4Attrs& a) {
  if (B.dtype() != DataType::UInt8) kernel_fail("MatMulBnb4: B must be uint8, got " + dtype_name(B.dtype()));
  if (absmax.dtype() != DataType::Float)
    kernel_fail("MatMulBnb4: absmax must be float, got " + dtype_name(absmax.dtype()));
  const int64_t count = a.N * a.K, blocks = (count + a.block_size - 1) / a.block_size;
  if (B.numel() < (count + 1) / 2)
    kernel_fail("MatMulBnb4: B holds " + std::to_string(B.numel()) + " bytes, N * K = " + std::to_string(count) +
                " codes need " + std::to_string((count + 1) / 2));
  if (absmax.numel() < blocks)
    kernel_fail("MatMulBnb4: absmax holds " + std::to_string(absmax.numel()) + " values, " + std::to_string(blocks) +
                " blocks of " + std::to_string(a.block_size) + " need one each");
  const float* table = a.nf4 ? kNf4Values : kFp4Values;
  const uint8_t* codes = B.data<uint8_t>();
  const float* scale = absmax.data<float>();
  std::vector<float> w(static_cast<size_t>(count));
  for (int64_t e = 0; e < count; ++e) {
    const uint8_t byte = codes[e / 2];
    w[e] = table[(e % 2 == 0 ? byte >> 4 : byte) & 15] * scale[e / a.block_size];
  }
  return w;
}

void run_matmul_bnb4(KernelContext& ctx, const Bnb4Attrs& a, const std::vector<float>* prepared) {
  const Tensor& A = ctx.input(0);
  if (A.dtype() != DataType::Float) kernel_fail("MatMulBnb4: A must be float, got " + dtype_name(A.dtype()));
  std::vector<float> local;
  if (!prepared) local = dequantize_bnb4(ctx.input(1), ctx.input(2), a);
  const std::vector<float>& w = prepared ? *prepared : local;
  // ORT multiplies A by B = the [N, K] matrix, transposed when transB (the
  // default). Without transB its GEMM still reads the buffer transposed, with
  // a row stride of K: Y[m, j] = sum_k A[m, k] W[j * K + k] for j < K, k < N.
  const int64_t inner = a.trans_b ? a.K : a.N, cols = a.trans_b ? a.N : a.K;
  ONYX_KERNEL_CHECK(
      A.rank() >= 1 && A.dim(-1) == inner,
      "MatMulBnb4: A's last dimension must be " + std::to_string(inner) + ", got " + shape_to_string(A.shape()));
  if (!a.trans_b && (a.K - 1) * a.K + a.N > a.N * a.K)
    kernel_fail("MatMulBnb4: with transB = 0 and K > N the weights are read past their end (as ORT does)");
  Shape out = A.shape();
  out.back() = cols;
  Tensor& Y = ctx.allocate_output(0, DataType::Float, out);
  const int64_t rows = inner == 0 ? 0 : A.numel() / inner;
  if (Y.numel() == 0) return;
  if (a.trans_b)
    gemm_f32(false, true, rows, cols, inner, 1.f, A.data<float>(), inner, w.data(), a.K, 0.f, Y.data<float>(), cols,
             ctx.thread_pool());
  else
    gemm_ref<float>(false, true, rows, cols, inner, 1.f, A.data<float>(), inner, w.data(), a.K, 0.f, Y.data<float>(),
                    cols);
}

}  // namespace

void register_contrib_matmul_bnb4(KernelRegistry& r) {
  r.add("MatMulBnb4", 1, kMaxOpset, lambda_factory([](const KernelInitContext& ic) {
          Bnb4Attrs a{ic.get_int("K"), ic.get_int("N"), ic.get_int("block_size"), false, ic.get_int("transB", 1) != 0};
          const int64_t quant_type = ic.get_int("quant_type");
          if (quant_type != 0 && quant_type != 1)
            kernel_fail("MatMulBnb4: quant_type must be 0 (FP4) or 1 (NF4), got " + std::to_string(quant_type));
          a.nf4 = quant_type == 1;
          if (a.K <= 0 || a.N <= 0)
            kernel_fail("MatMulBnb4: K and N must be positive, got " + std::to_string(a.K) + " and " +
                        std::to_string(a.N));
          const int64_t bs = a.block_size;
          if (bs != 16 && bs != 32 && bs != 64 && bs != 128 && bs != 256)
            kernel_fail("MatMulBnb4: block_size must be 16, 32, 64, 128 or 256 (as in ORT), got " + std::to_string(bs));
          // training_mode only matters to ORT's gradient builder.
          std::shared_ptr<std::vector<float>> prepared;
          if (ic.constant_input(1) && ic.constant_input(2))
            prepared =
                std::make_shared<std::vector<float>>(dequantize_bnb4(*ic.constant_input(1), *ic.constant_input(2), a));
          return [a, prepared](KernelContext& ctx) { run_matmul_bnb4(ctx, a, prepared.get()); };
        }),
        kMsDomain);
}

}  // namespace onyx
