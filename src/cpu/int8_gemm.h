// Exact 8-bit integer GEMM: int32 results of sum_k (A - a_zp)(B - b_zp) for
// uint8/int8 operands, equal to the plain loop on every CPU. The kernels
// multiply unsigned by signed bytes in groups of 4 (vpdpbusd of AVX-512 VNNI
// or of AVX-VNNI, an exact AVX2 emulation through 16-bit products, or plain
// C++); the shift of
// int8 A / uint8 B into that form and the zero points are added back through
// row and column sums.
#pragma once
#include <cstdint>
#include <vector>

#include "base/thread_pool.h"
#include "cpu/requantize_8bit.h"

namespace onyx {

// In order of speed; AvxVnni (256-bit vpdpbusd) runs as Avx2 where the CPU lacks it.
enum class Int8Isa { Scalar, Avx2, AvxVnni, Avx512Vnni };

// The fastest kernel this CPU runs.
Int8Isa int8_gemm_best_isa();

// B (K x N) as int8 (uint8 shifted down by 128) in panels of up to 64
// columns, each column's 4 consecutive k together, zero padded to whole
// groups; plus its column sums. Pack once when B is a constant.
class PackedInt8B {
 public:
  PackedInt8B() = default;
  // b[k * ldb + n], or b[n * ldb + k] when trans.
  PackedInt8B(const void* b, bool is_signed, int64_t K, int64_t N, int64_t ldb, bool trans);

  int64_t K() const { return K_; }
  int64_t N() const { return N_; }
  int64_t k_groups() const { return (K_ + 3) / 4; }
  int64_t padded_n() const { return (N_ + 15) / 16 * 16; }
  const int8_t* data() const { return data_.data(); }
  const int32_t* col_sums() const { return col_sum_.data(); }
  int32_t shift() const { return shift_; }  // B = packed value + shift

 private:
  int64_t K_ = 0, N_ = 0;
  int32_t shift_ = 0;
  std::vector<int8_t> data_;
  std::vector<int32_t> col_sum_;
};

// The A operand: a[m * lda + k], or a[k * lda + m] when trans. group_padded:
// each row goes on with zero bytes to a whole group of 4 (K rounded up), so
// an unsigned row-major A is used in place whatever K is.
struct Int8A {
  const void* data = nullptr;
  bool is_signed = false;
  int64_t lda = 0;
  bool trans = false;
  bool group_padded = false;
};

// The per-column terms that turn int8_gemm's unsigned x signed dot products
// into the exact sums, for one B, its zero points (1 or N values, empty:
// zero), A's zero points (1 or M values) and an int32 bias added to every sum
// (null: none). A convolution makes them once per run, not per block of pixels.
struct Int8GemmColumns {
  bool a_signed = false;
  std::vector<int32_t> a_zp;
  std::vector<int32_t> add, shift, term;  // padded_n() values each
  bool row_sums = false;                  // some column's shift is non-zero: A's row sums are needed
};
Int8GemmColumns int8_gemm_columns(const PackedInt8B& b, bool a_signed, const std::vector<int32_t>& a_zp,
                                  const std::vector<int32_t>& b_zp, const int32_t* bias);

// y[m * ldy + n] = sum_k (A[m,k] - a_zp[m]) * (B[k,n] - b_zp[n]) with int32
// wrap-around. a_zp holds 1 or M values, b_zp 1 or N values (empty: zero).
void int8_gemm(int64_t M, const Int8A& a, const std::vector<int32_t>& a_zp, const PackedInt8B& b,
               const std::vector<int32_t>& b_zp, int32_t* y, int64_t ldy, ThreadPool* pool);
// The same with a chosen kernel (tests compare all the CPU runs).
void int8_gemm(int64_t M, const Int8A& a, const std::vector<int32_t>& a_zp, const PackedInt8B& b,
               const std::vector<int32_t>& b_zp, int32_t* y, int64_t ldy, ThreadPool* pool, Int8Isa isa);

// The same on the calling thread with precomputed columns (their bias included).
void int8_gemm(int64_t M, const Int8A& a, const Int8GemmColumns& cols, const PackedInt8B& b, int32_t* y,
               int64_t ldy, Int8Isa isa);

// Columns of B per packed panel: column ranges of int8_gemm_requantized start
// and end on multiples of it (or end at N).
constexpr int64_t kInt8GemmPanel = 64;

// The same sums requantized to bytes, y[m * ldy + n] (Int8Requant, per column
// n): on AVX-512 VNNI in the tile's registers, elsewhere from a small block.
// Only columns [col_begin, col_end) when given (panel-aligned; col_end past N
// means N), so callers can split the columns among tasks.
void int8_gemm_requantized(int64_t M, const Int8A& a, const std::vector<int32_t>& a_zp, const PackedInt8B& b,
                           const std::vector<int32_t>& b_zp, const Int8Requant& rq, uint8_t* y, int64_t ldy,
                           ThreadPool* pool, Int8Isa isa, int64_t col_begin = 0, int64_t col_end = INT64_MAX);

// The same on the calling thread with precomputed columns, which hold the
// bias (rq.bias must be null).
void int8_gemm_requantized(int64_t M, const Int8A& a, const Int8GemmColumns& cols, const PackedInt8B& b,
                           const Int8Requant& rq, uint8_t* y, int64_t ldy, Int8Isa isa, int64_t col_begin = 0,
                           int64_t col_end = INT64_MAX);

// y[r * ldy + c] = float(sums[r * lds + c]) * scale[c] + bias[c] (bias may
// be null): the conversion int8_gemm_to_float makes, for sums made elsewhere.
void int32_rows_to_float(const int32_t* sums, int64_t rows, int64_t cols, int64_t lds, const float* scale,
                         const float* bias, float* y, int64_t ldy);

// The same sums as floats, y[m * ldy + n] = float(sum) * scale[n] + bias[n]
// (bias may be null; multiplied, then added): on AVX-512 VNNI in the tile's
// registers, elsewhere from a small block.
void int8_gemm_to_float(int64_t M, const Int8A& a, const std::vector<int32_t>& a_zp, const PackedInt8B& b,
                        const std::vector<int32_t>& b_zp, const float* scale, const float* bias, float* y, int64_t ldy,
                        ThreadPool* pool, Int8Isa isa);

}  // namespace onyx
