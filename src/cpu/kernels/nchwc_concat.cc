// com.onyx NchwcConcat: the channel concatenation of blocked tensors
// [N, ceil(C_k / B), spatial..., B] whose channel counts C_k (attribute
// `channels`) are not all whole blocks (GhostNet's 40 + 40), so block b of the
// output mixes lanes of two inputs. Each output block is a few runs of lanes,
// copied pixel by pixel; padding lanes stay zero.
#include <cstring>

#include "base/cpu_features.h"
#include "base/element_copy.h"
#include "cpu/cpu_provider.h"
#include "cpu/kernel_families.h"
#include "kernels/kernel.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define ONYX_CONCAT_X86 1
#endif

namespace onyx {
namespace {

// Lanes [out_lane, out_lane + count) of an output block come from input
// `input`, block `in_block`, lanes from `in_lane`.
struct LaneRun {
  int64_t out_lane, count, input, in_block, in_lane;
};

// The runs of every output block, in lane order.
std::vector<std::vector<LaneRun>> lane_runs(const std::vector<int64_t>& channels, int64_t B) {
  int64_t total = 0;
  for (int64_t c : channels) total += c;
  std::vector<std::vector<LaneRun>> runs(static_cast<size_t>((total + B - 1) / B));
  int64_t c = 0;  // output channel
  for (size_t k = 0; k < channels.size(); ++k)
    for (int64_t ck = 0; ck < channels[k];) {
      const int64_t lane = c % B, in_lane = ck % B;
      const int64_t count = std::min({B - lane, B - in_lane, channels[k] - ck});
      runs[c / B].push_back({lane, count, static_cast<int64_t>(k), ck / B, in_lane});
      c += count;
      ck += count;
    }
  return runs;
}

// dst[p * B + i] = src[p * B + i] for i < count, over `pixels` pixels (src and
// dst already offset to their runs' first lanes).
void copy_run(const float* src, float* dst, int64_t pixels, int64_t B, int64_t count) {
  const int64_t stride = B * static_cast<int64_t>(sizeof(float));
  copy_rows(reinterpret_cast<const char*>(src), stride, reinterpret_cast<char*>(dst), stride, pixels,
            static_cast<size_t>(count) * sizeof(float));
}

#ifdef ONYX_CONCAT_X86
// The same as one masked load and store per pixel: the runs are a few lanes
// each, where a memcpy call per pixel cost more than the copy.
__attribute__((target("avx512f"))) void copy_run_avx512(const float* src, float* dst, int64_t pixels, int64_t B,
                                                        int64_t count) {
  const __mmask16 mask = static_cast<__mmask16>((1u << count) - 1);
  for (int64_t p = 0; p < pixels; ++p)
    _mm512_mask_storeu_ps(dst + p * B, mask, _mm512_maskz_loadu_ps(mask, src + p * B));
}
#endif

class NchwcConcatKernel final : public Kernel {
 public:
  explicit NchwcConcatKernel(const KernelInitContext& init) : channels_(init.get_ints("channels", {})) {
    ONYX_KERNEL_CHECK(!channels_.empty(), "NchwcConcat: attribute 'channels' must list each input's channels");
    for (int64_t c : channels_) ONYX_KERNEL_CHECK(c > 0, "NchwcConcat: channel counts must be positive");
  }

  void run(KernelContext& ctx) const override {
    ONYX_KERNEL_CHECK(ctx.num_inputs() == channels_.size(), "NchwcConcat: " + std::to_string(ctx.num_inputs()) +
                                                                " inputs for " + std::to_string(channels_.size()) +
                                                                " channel counts");
    const Tensor& first = ctx.input(0);
    const int rank = first.rank();
    ONYX_KERNEL_CHECK(rank >= 3 && first.dtype() == DataType::Float,
                      "NchwcConcat: inputs must be blocked float tensors, got " + shape_to_string(first.shape()));
    const int64_t N = first.dim(0), B = first.dim(-1);
    int64_t pixels = 1, total = 0;
    for (int d = 2; d < rank - 1; ++d) pixels *= first.dim(d);
    for (size_t k = 0; k < channels_.size(); ++k) {
      const Tensor& x = ctx.input(k);
      bool ok = x.dtype() == DataType::Float && x.rank() == rank && x.dim(1) == (channels_[k] + B - 1) / B;
      for (int d = 0; ok && d < rank; ++d) ok = d == 1 || x.dim(d) == first.dim(d);
      ONYX_KERNEL_CHECK(ok, "NchwcConcat: input " + std::to_string(k) + " " + shape_to_string(x.shape()) +
                                " is not a blocked tensor of " + std::to_string(channels_[k]) + " channels like " +
                                shape_to_string(first.shape()));
      total += channels_[k];
    }
    const auto runs = lane_runs(channels_, B);
    const int64_t out_blocks = static_cast<int64_t>(runs.size());
    Shape shape = first.shape();
    shape[1] = out_blocks;
    Tensor& y = ctx.allocate_output(0, DataType::Float, shape);
    float* out = y.data<float>();
    const int64_t tail = total - (out_blocks - 1) * B;  // real lanes of the last block
    auto copy = copy_run;
#ifdef ONYX_CONCAT_X86
    if (B <= 16 && cpu_features().avx512f) copy = copy_run_avx512;
#endif
    parallel_for(y.numel() > (1 << 15) ? ctx.thread_pool() : nullptr, N * out_blocks, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t n = t / out_blocks, b = t % out_blocks;
        float* dst = out + t * pixels * B;
        if (b == out_blocks - 1 && tail < B) std::memset(dst, 0, static_cast<size_t>(pixels * B) * sizeof(float));
        for (const LaneRun& r : runs[b]) {
          const Tensor& x = ctx.input(r.input);
          const float* src = x.data<float>() + ((n * x.dim(1) + r.in_block) * pixels) * B + r.in_lane;
          copy(src, dst + r.out_lane, pixels, B, r.count);
        }
      }
    });
  }

 private:
  std::vector<int64_t> channels_;
};

}  // namespace

void register_nchwc_concat(KernelRegistry& r) {
  r.add("NchwcConcat", 1, kMaxOpset,
        [](const KernelInitContext& init) -> std::unique_ptr<Kernel> {
          return std::make_unique<NchwcConcatKernel>(init);
        },
        "com.onyx");
}

}  // namespace onyx
