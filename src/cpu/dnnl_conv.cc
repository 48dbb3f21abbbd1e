// oneDNN-backed convolution and pooling; see dnnl_conv.h.
#include "cpu/dnnl_conv.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>

#include "base/cpu_features.h"
#include "cpu/block_transpose_avx512.h"
#include "kernels/kernel.h"

#ifdef ONYX_WITH_DNNL
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace onyx {

Shape blocked_shape(const Shape& plain, int block) {
  Shape s = {plain[0], (plain[1] + block - 1) / block};
  for (size_t i = 2; i < plain.size(); ++i) s.push_back(plain[i]);
  s.push_back(block);
  return s;
}

namespace {

// Positions per channel plane of a plain shape [N, C, spatial...].
int64_t plane_positions(const Shape& plain) {
  int64_t S = 1;
  for (size_t i = 2; i < plain.size(); ++i) S *= plain[i];
  return S;
}

}  // namespace

void reorder_depth_planes_to_blocked(const float* x, int64_t N, int64_t C, int64_t D, int64_t S, int64_t depth_stride,
                                     int64_t OD, int block, float* y, ThreadPool* pool) {
  const int64_t CB = (C + block - 1) / block, ld = D * S;  // ld: one channel's planes
  const bool fast = block == 16 && nchwc::block_transpose_available();
  parallel_for(N * OD * CB * S * block > (1 << 15) ? pool : nullptr, N * OD * CB, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t cb = r % CB, od = (r / CB) % OD, n = r / (CB * OD);
      const int64_t cn = std::min<int64_t>(block, C - cb * block);
      const float* src = x + ((n * C + cb * block) * D + od * depth_stride) * S;
      float* dst = y + r * S * block;
      if (fast) {
        nchwc::planes_to_block16(src, S, cn, dst, ld);
        continue;
      }
      for (int64_t s = 0; s < S; ++s) {
        float* d = dst + s * block;
        for (int64_t j = 0; j < cn; ++j) d[j] = src[j * ld + s];
        for (int64_t j = cn; j < block; ++j) d[j] = 0.0f;
      }
    }
  });
}

void reorder_blocked_to_depth_planes(const float* x, int64_t N, int64_t C, int64_t OD, int64_t S, int block, float* y,
                                     ThreadPool* pool) {
  const int64_t CB = (C + block - 1) / block, ld = OD * S;
  const bool fast = block == 16 && nchwc::block_transpose_available();
  parallel_for(N * OD * CB * S * block > (1 << 15) ? pool : nullptr, N * OD * CB, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t cb = r % CB, od = (r / CB) % OD, n = r / (CB * OD);
      const int64_t cn = std::min<int64_t>(block, C - cb * block);
      const float* src = x + r * S * block;
      float* dst = y + ((n * C + cb * block) * OD + od) * S;
      if (fast) {
        nchwc::block_to_planes16(src, S, cn, dst, ld);
        continue;
      }
      for (int64_t j = 0; j < cn; ++j) {
        float* d = dst + j * ld;
        for (int64_t s = 0; s < S; ++s) d[s] = src[s * block + j];
      }
    }
  });
}

void reorder_to_blocked(const float* x, const Shape& plain, int block, float* y, ThreadPool* pool) {
  reorder_depth_planes_to_blocked(x, plain[0], plain[1], 1, plane_positions(plain), 1, 1, block, y, pool);
}

void reorder_from_blocked(const float* x, const Shape& plain, int block, float* y, ThreadPool* pool) {
  reorder_blocked_to_depth_planes(x, plain[0], plain[1], 1, plane_positions(plain), block, y, pool);
}

namespace {

// Calls fn(n, s, S, cb, cn) for every batch n, position s < S and channel
// block cb (cn channels of it are real), split over the pool by positions.
template <class Fn>
void for_each_position_block(const Shape& nhwc, int block, ThreadPool* pool, Fn fn) {
  const int64_t N = nhwc[0], C = nhwc.back(), CB = (C + block - 1) / block;
  int64_t S = 1;
  for (size_t i = 1; i + 1 < nhwc.size(); ++i) S *= nhwc[i];
  parallel_for(N * S * CB * block > (1 << 15) ? pool : nullptr, N * S, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t cb = 0; cb < CB; ++cb) fn(r / S, r % S, S, cb, std::min<int64_t>(block, C - cb * block));
  });
}

}  // namespace

void reorder_channels_last_to_blocked(const float* x, const Shape& nhwc, int block, float* y, ThreadPool* pool) {
  const int64_t C = nhwc.back(), CB = (C + block - 1) / block;
  for_each_position_block(nhwc, block, pool, [&](int64_t n, int64_t s, int64_t S, int64_t cb, int64_t cn) {
    float* d = y + ((n * CB + cb) * S + s) * block;
    std::memcpy(d, x + (n * S + s) * C + cb * block, cn * sizeof(float));
    std::fill(d + cn, d + block, 0.0f);
  });
}

void reorder_blocked_to_channels_last(const float* x, const Shape& nhwc, int block, float* y, ThreadPool* pool) {
  const int64_t C = nhwc.back(), CB = (C + block - 1) / block;
  for_each_position_block(nhwc, block, pool, [&](int64_t n, int64_t s, int64_t S, int64_t cb, int64_t cn) {
    std::memcpy(y + (n * S + s) * C + cb * block, x + ((n * CB + cb) * S + s) * block, cn * sizeof(float));
  });
}

bool runs_dnnl_convolutions(const std::string& op_type) {
  // Conv, FusedConv (com.onyx and com.microsoft) and the blocked-layout ops
  // (cpu/dnnl_kernels.cc) keep a DnnlConv; every other kernel runs on the pool.
  static const std::set<std::string> ops = {"Conv", "ConvTranspose", "FusedConv", "NchwcConv",
                                            "NchwcPointwiseDepthwise"};
  return dnnl_available() && ops.count(op_type) > 0;
}

#ifndef ONYX_WITH_DNNL

bool dnnl_available() { return false; }
int dnnl_preferred_block() { return 8; }
struct DnnlConv::Impl {};
DnnlConv::DnnlConv(DnnlConvConfig) { kernel_fail("this build has no oneDNN"); }
DnnlConv::~DnnlConv() = default;
bool DnnlConv::supports(const DnnlConvConfig&, int) { return false; }
Shape DnnlConv::output_shape(const Shape&, const Shape&) const { return {}; }
bool DnnlConv::run(const Io&, float*, ThreadPool*) const { return true; }
struct DnnlPool::Impl {};
DnnlPool::DnnlPool(DnnlPoolConfig) { kernel_fail("this build has no oneDNN"); }
DnnlPool::~DnnlPool() = default;
Shape DnnlPool::output_shape(const Shape&) const { return {}; }
void DnnlPool::run(const float*, const Shape&, int, float*, ThreadPool*) const {}

#else

using dnnl::algorithm;
using dnnl::memory;
using tag = dnnl::memory::format_tag;

namespace {

// oneDNN fixes its instruction set at its first use: ONYX_MAX_ISA
// (base/cpu_features.h) must cap it before then, or the blocked layouts
// (16 channels with AVX-512, 8 without) and oneDNN's kernels disagree.
void cap_dnnl_isa() {
  static const bool capped = [] {
    const CpuFeatures& f = cpu_features();
    if (f.avx512f) return false;
    try {
      dnnl::set_max_cpu_isa(f.avx2 ? dnnl::cpu_isa::avx2 : dnnl::cpu_isa::sse41);
    } catch (const dnnl::error&) {
      return false;  // already fixed by an earlier use: the features it detected stand
    }
    return true;
  }();
  (void)capped;
}

dnnl::engine& engine() {
  static dnnl::engine e = [] {
    cap_dnnl_isa();
    return dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return e;
}

dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

int threads_of(ThreadPool* pool) { return pool ? pool->num_threads() : 1; }

// Convolutions under this many multiply-adds (a few microseconds of work) run on the
// calling thread: opening a parallel region costs about as much, and on a loaded machine
// it waits a scheduler slice (milliseconds) for a worker another process holds.
constexpr int64_t kSerialConvMacs = int64_t{1} << 18;

// Multiply-adds of a convolution, from the input's logical dims, the weights and the strides.
int64_t conv_macs(const Shape& x, const Shape& w, const SpatialAttrs& attrs) {
  int64_t macs = x[0];
  for (int64_t d : w) macs *= d;
  for (size_t i = 2; i < x.size(); ++i) {
    const int64_t stride = i - 2 < attrs.strides.size() ? std::max<int64_t>(attrs.strides[i - 2], 1) : 1;
    macs *= (x[i] + stride - 1) / stride;
  }
  return macs;
}

// Per-thread scratch buffers for layout conversions (grown, never shrunk).
float* scratch(int slot, size_t floats) {
  thread_local std::vector<float> bufs[4];
  auto& b = bufs[slot];
  if (b.size() < floats) b.resize(floats);
  return b.data();
}

tag plain_tag(int nd) { return nd == 1 ? tag::ncw : nd == 2 ? tag::nchw : tag::ncdhw; }
tag blocked_tag(int nd, int block) {
  if (block == 16) return nd == 1 ? tag::nCw16c : nd == 2 ? tag::nChw16c : tag::nCdhw16c;
  return nd == 1 ? tag::nCw8c : nd == 2 ? tag::nChw8c : tag::nCdhw8c;
}
tag weights_tag(int nd, bool grouped) {
  if (grouped) return nd == 1 ? tag::goiw : nd == 2 ? tag::goihw : tag::goidhw;
  return nd == 1 ? tag::oiw : nd == 2 ? tag::oihw : tag::oidhw;
}

memory::desc act_desc(const memory::dims& dims, int block) {
  int nd = static_cast<int>(dims.size()) - 2;
  return memory::desc(dims, memory::data_type::f32, block ? blocked_tag(nd, block) : plain_tag(nd));
}

// Winograd policy: ONYX_CONV_WINOGRAD=0 never, 1 whenever oneDNN has it,
// unset: for 3x3 stride-1 convolutions where it measured faster (below).
int winograd_policy() {
  static int p = [] {
    const char* e = std::getenv("ONYX_CONV_WINOGRAD");
    return e ? std::atoi(e) : -1;
  }();
  return p;
}

bool activation_post_ops(const std::string& act, const std::vector<float>& p, dnnl::post_ops* ops) {
  auto param = [&](size_t i, float def) { return i < p.size() ? p[i] : def; };
  auto add = [&](algorithm a, float alpha, float beta) {
    if (ops) ops->append_eltwise(1.0f, a, alpha, beta);
  };
  if (act.empty()) return true;
  if (act == "Relu") add(algorithm::eltwise_relu, 0.0f, 0.0f);
  else if (act == "LeakyRelu") add(algorithm::eltwise_relu, param(0, 0.01f), 0.0f);
  else if (act == "Clip") add(algorithm::eltwise_clip, param(0, -3.4e38f), param(1, 3.4e38f));
  else if (act == "Sigmoid") add(algorithm::eltwise_logistic, 0.0f, 0.0f);
  else if (act == "Tanh") add(algorithm::eltwise_tanh, 0.0f, 0.0f);
  else if (act == "Swish") add(algorithm::eltwise_swish, param(0, 1.0f), 0.0f);
  else if (act == "HardSigmoid") {
    add(algorithm::eltwise_linear, param(0, 0.2f), param(1, 0.5f));
    add(algorithm::eltwise_clip, 0.0f, 1.0f);
  } else if (act == "HardSwish") {
    // oneDNN 2.6's hardswish is x * clip(x / 6 + 1/2): x * clip(a x + 1/2) is that of 6 a x, scaled back.
    float a = param(0, 1.0f / 6), b = param(1, 0.5f);
    if (b != 0.5f || !(a > 0)) return false;
    if (a != 1.0f / 6) add(algorithm::eltwise_linear, 6 * a, 0.0f);
    add(algorithm::eltwise_hardswish, 0.0f, 0.0f);
    if (a != 1.0f / 6) add(algorithm::eltwise_linear, 1 / (6 * a), 0.0f);
  }
  else if (act == "Gelu") add(algorithm::eltwise_gelu_erf, 0.0f, 0.0f);
  else if (act == "GeluTanh") add(algorithm::eltwise_gelu_tanh, 0.0f, 0.0f);
  else return false;
  return true;
}

bool is_ref_impl(const dnnl::primitive_desc_base& pd) {
  std::string s = pd.impl_info_str();
  return s.rfind("ref", 0) == 0;
}

// oneDNN's im2col + GEMM convolution ("x64:gemm:jit", "gemm:jit").
bool is_gemm_impl(const dnnl::primitive_desc_base& pd) {
  return std::string(pd.impl_info_str()).find("gemm:") != std::string::npos;
}

}  // namespace

bool dnnl_available() { return true; }

int dnnl_preferred_block() {
  static int b = [] {
    cap_dnnl_isa();
    auto isa = dnnl::get_effective_cpu_isa();
    return (isa >= dnnl::cpu_isa::avx512_core) ? 16 : 8;
  }();
  return b;
}

// ---------------------------------------------------------------- conv

struct DnnlConv::Impl {
  DnnlConvConfig cfg;
  struct Entry {
    dnnl::convolution_forward prim;
    memory::desc src_md, dst_md, wei_md;  // the primitive's
    memory::desc user_src_md, user_dst_md, user_wei_md;
    bool src_reorder = false, dst_reorder = false;
    dnnl::reorder src_rd, dst_rd, z_rd;
    std::shared_ptr<memory> packed_w;  // for constant weights
    const void* packed_from = nullptr;
    bool activation_left = false;  // the primitive stops before cfg.activation: the caller applies it
  };
  mutable std::mutex mu;
  mutable std::map<std::vector<int64_t>, std::shared_ptr<Entry>> cache;

  std::shared_ptr<Entry> make_entry(const memory::dims& xd, const Shape& ws, const SpatialGeometry& g, int x_block,
                                    int y_block, bool has_z, bool has_b) const {
    const int nd = g.nd;
    const int64_t M = ws[0], G = cfg.group;
    memory::dims yd = {xd[0], M};
    for (auto o : g.out) yd.push_back(o);
    memory::dims wd;
    if (G > 1) wd = {G, M / G, ws[1]};
    else wd = {M, ws[1]};
    for (int i = 0; i < nd; ++i) wd.push_back(ws[2 + i]);
    memory::dims strides(g.strides.begin(), g.strides.end()), dil(nd), pl(nd), pr(nd);
    for (int i = 0; i < nd; ++i) {
      dil[i] = g.dilations[i] - 1;
      pl[i] = g.pad_begin[i];
      pr[i] = g.pad_end[i];
    }
    auto e = std::make_shared<Entry>();
    e->user_src_md = act_desc(xd, x_block);
    e->user_dst_md = act_desc(yd, y_block);
    e->user_wei_md = memory::desc(wd, memory::data_type::f32, weights_tag(nd, G > 1));
    memory::desc any_src(xd, memory::data_type::f32, tag::any), any_dst(yd, memory::data_type::f32, tag::any);
    memory::desc any_wei(wd, memory::data_type::f32, tag::any);
    memory::desc bias_md = has_b ? memory::desc({M}, memory::data_type::f32, tag::x) : memory::desc();

    dnnl::primitive_attr attr;
    dnnl::post_ops ops;
    if (has_z) ops.append_sum(1.0f);
    activation_post_ops(cfg.activation, cfg.activation_params, &ops);
    attr.set_post_ops(ops);

    bool wino_shape = nd == 2 && G == 1 && g.kernel[0] == 3 && g.kernel[1] == 3 && g.strides[0] == 1 &&
                      g.strides[1] == 1 && g.dilations[0] == 1 && g.dilations[1] == 1;
    int policy = winograd_policy();
    // Measured (oneDNN 2.6, Zen 5, 1 thread): Winograd won 1.6-1.7x on ResNet-50's
    // 3x3 layers (64ch@56x56 ... 512ch@7x7) and 1.4x on 32ch@27x27, tied or lost
    // on 16-64ch at 13x13 and 16ch at 55x55.
    const int64_t out_px = g.out[0] * g.out[1], C = ws[1];
    // Weights that change per run (graph inputs, overridable initializers) would pay the
    // Winograd weight transform every run: 25 ms for a 512x512x3x3 layer, 10x the conv.
    bool want_wino = wino_shape && cfg.constant_weights &&
                     (policy == 1 || (policy < 0 && C >= 32 && M >= 32 &&
                                      (out_px >= 27 * 27 || (C >= 128 && out_px >= 7 * 7))));

    auto try_make = [&](algorithm alg, const memory::desc& s, const memory::desc& d) {
      dnnl::convolution_forward::primitive_desc pd;
      try {
        dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, alg, s, any_wei, bias_md, d, strides,
                                             dil, pl, pr);
        pd = dnnl::convolution_forward::primitive_desc(desc, attr, engine(), true);
      } catch (const dnnl::error&) {
        return dnnl::convolution_forward::primitive_desc();
      }
      return pd;
    };
    dnnl::convolution_forward::primitive_desc pd;
    // Blocked activations: ask for exactly the caller's layouts first (no
    // conversions); plain ones: let oneDNN pick and convert around it.
    const memory::desc& s_try = x_block ? e->user_src_md : any_src;
    const memory::desc& d_try = y_block ? e->user_dst_md : any_dst;
    if (want_wino) pd = try_make(algorithm::convolution_winograd, s_try, d_try);
    if (!pd) pd = try_make(algorithm::convolution_direct, s_try, d_try);
    if (pd && is_ref_impl(pd)) pd = {};
    if (!pd && want_wino) pd = try_make(algorithm::convolution_winograd, any_src, any_dst);
    if (!pd) pd = try_make(algorithm::convolution_direct, any_src, any_dst);
    if (!pd) kernel_fail("oneDNN has no convolution for this configuration");
    // oneDNN's im2col + GEMM convolution, its choice where no direct kernel fits (one input
    // channel without AVX-512, say), applied a GELU post-op value by value: 10x the 1-D stem
    // convolution it followed. A plain output then leaves the activation to the caller.
    if (!y_block && !cfg.activation.empty() && is_gemm_impl(pd)) {
      attr = dnnl::primitive_attr();  // here an empty set_post_ops left the old operations in place
      if (has_z) {
        dnnl::post_ops sum_only;
        sum_only.append_sum(1.0f);
        attr.set_post_ops(sum_only);
      }
      if (auto bare = try_make(algorithm::convolution_direct, pd.src_desc(), pd.dst_desc())) {
        pd = bare;
        e->activation_left = true;
      }
    }
    e->prim = dnnl::convolution_forward(pd);
    e->src_md = pd.src_desc();
    e->dst_md = pd.dst_desc();
    e->wei_md = pd.weights_desc();
    if (e->src_md != e->user_src_md) {
      e->src_reorder = true;
      e->src_rd = dnnl::reorder(dnnl::reorder::primitive_desc(engine(), e->user_src_md, engine(), e->src_md));
    }
    if (e->dst_md != e->user_dst_md) {
      e->dst_reorder = true;
      e->dst_rd = dnnl::reorder(dnnl::reorder::primitive_desc(engine(), e->dst_md, engine(), e->user_dst_md));
      if (has_z) e->z_rd = dnnl::reorder(dnnl::reorder::primitive_desc(engine(), e->user_dst_md, engine(), e->dst_md));
    }
    return e;
  }
};

DnnlConv::DnnlConv(DnnlConvConfig cfg) : impl_(std::make_unique<Impl>()) {
  impl_->cfg = std::move(cfg);
  impl_->cfg.attrs.ceil_mode = false;
}
DnnlConv::~DnnlConv() = default;

bool DnnlConv::supports(const DnnlConvConfig& cfg, int weight_rank) {
  if (weight_rank < 3 || weight_rank > 5) return false;
  if (cfg.group < 1) return false;
  return activation_post_ops(cfg.activation, cfg.activation_params, nullptr);
}

Shape DnnlConv::output_shape(const Shape& xs, const Shape& ws) const {
  std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
  SpatialGeometry g = compute_geometry(std::vector<int64_t>(xs.begin() + 2, xs.end()), impl_->cfg.attrs, kernel);
  Shape out = {xs[0], ws[0]};
  for (auto o : g.out) out.push_back(o);
  return out;
}

bool DnnlConv::run(const Io& io, float* y, ThreadPool* pool) const {
  const Impl& im = *impl_;
  const Shape& ws = io.w->shape();
  const int nd = static_cast<int>(ws.size()) - 2;
  // logical input dims
  Shape xl;
  if (io.x_block) {
    ONYX_KERNEL_CHECK(static_cast<int>(io.x_shape.size()) == nd + 3 && io.x_shape.back() == io.x_block,
                      "blocked conv input has shape " + shape_to_string(io.x_shape));
    int64_t C = ws[1] * im.cfg.group;
    ONYX_KERNEL_CHECK(io.x_shape[1] == (C + io.x_block - 1) / io.x_block,
                      "blocked conv input " + shape_to_string(io.x_shape) + " does not have " + std::to_string(C) +
                          " channels");
    xl = {io.x_shape[0], C};
    for (int i = 0; i < nd; ++i) xl.push_back(io.x_shape[2 + i]);
  } else {
    xl = io.x_shape;
  }
  ONYX_KERNEL_CHECK(static_cast<int>(xl.size()) == nd + 2, "Conv input " + shape_to_string(xl) +
                                                              " does not match weights " + shape_to_string(ws));
  ONYX_KERNEL_CHECK(xl[1] == ws[1] * im.cfg.group && ws[0] % im.cfg.group == 0,
                    "Conv input " + shape_to_string(xl) + " does not match weights " + shape_to_string(ws) +
                        " with group " + std::to_string(im.cfg.group));
  const int nthr = conv_macs(xl, ws, im.cfg.attrs) < kSerialConvMacs ? 1 : threads_of(pool);
  std::vector<int64_t> key(xl.begin(), xl.end());
  key.insert(key.end(), ws.begin(), ws.end());
  key.push_back(io.x_block);
  key.push_back(io.y_block);
  key.push_back(io.z ? 1 : 0);
  key.push_back(io.b ? 1 : 0);
  key.push_back(nthr);
  omp_set_num_threads(nthr);
  std::shared_ptr<Impl::Entry> e;
  {
    std::lock_guard<std::mutex> lock(im.mu);
    auto it = im.cache.find(key);
    if (it != im.cache.end()) e = it->second;
  }
  if (!e) {
    std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
    SpatialGeometry g = compute_geometry(std::vector<int64_t>(xl.begin() + 2, xl.end()), im.cfg.attrs, kernel);
    memory::dims xd(xl.begin(), xl.end());
    e = im.make_entry(xd, ws, g, io.x_block, io.y_block, io.z != nullptr, io.b != nullptr);
    std::lock_guard<std::mutex> lock(im.mu);
    auto [it, inserted] = im.cache.emplace(key, e);
    e = it->second;
  }
  dnnl::stream& s = stream();
  const float* wdata = io.w->data<float>();
  // weights: reorder into the primitive's layout (once, when constant)
  memory wmem;
  if (e->wei_md == e->user_wei_md) {
    wmem = memory(e->wei_md, engine(), const_cast<float*>(wdata));
  } else if (!im.cfg.constant_weights) {
    wmem = memory(e->wei_md, engine(), scratch(2, e->wei_md.get_size() / sizeof(float) + 16));
    memory user(e->user_wei_md, engine(), const_cast<float*>(wdata));
    dnnl::reorder(user, wmem).execute(s, user, wmem);
  } else {
    std::shared_ptr<memory> packed;
    {
      std::lock_guard<std::mutex> lock(im.mu);
      if (e->packed_w && e->packed_from == wdata) packed = e->packed_w;
    }
    if (packed) {
      wmem = *packed;
    } else {
      auto m = std::make_shared<memory>(e->wei_md, engine());
      memory user(e->user_wei_md, engine(), const_cast<float*>(wdata));
      dnnl::reorder(user, *m).execute(s, user, *m);
      s.wait();
      wmem = *m;
      std::lock_guard<std::mutex> lock(im.mu);
      e->packed_w = m;
      e->packed_from = wdata;
    }
  }
  memory xmem(e->user_src_md, engine(), const_cast<float*>(io.x));
  memory src = xmem;
  if (e->src_reorder) {
    src = memory(e->src_md, engine(), scratch(0, e->src_md.get_size() / sizeof(float) + 16));
    e->src_rd.execute(s, xmem, src);
  }
  memory ymem(e->user_dst_md, engine(), y);
  memory dst = ymem;
  if (e->dst_reorder) {
    dst = memory(e->dst_md, engine(), scratch(1, e->dst_md.get_size() / sizeof(float) + 16));
    if (io.z) {
      memory zmem(e->user_dst_md, engine(), const_cast<float*>(io.z));
      e->z_rd.execute(s, zmem, dst);
    }
  } else if (io.z && io.z != y) {
    std::memcpy(y, io.z, e->user_dst_md.get_size());
  }
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wmem}, {DNNL_ARG_DST, dst}};
  if (io.b) args[DNNL_ARG_BIAS] = memory(memory::desc({ws[0]}, memory::data_type::f32, tag::x), engine(),
                                        const_cast<float*>(io.b->data<float>()));
  e->prim.execute(s, args);
  if (e->dst_reorder) e->dst_rd.execute(s, dst, ymem);
  s.wait();
  return !e->activation_left;
}

// ---------------------------------------------------------------- pooling

struct DnnlPool::Impl {
  DnnlPoolConfig cfg;
  mutable std::mutex mu;
  mutable std::map<std::vector<int64_t>, std::shared_ptr<dnnl::pooling_forward>> cache;

  SpatialGeometry geometry(const Shape& xl) const {
    std::vector<int64_t> in(xl.begin() + 2, xl.end());
    if (cfg.kind == DnnlPoolConfig::GlobalAverage) {
      SpatialAttrs a;
      return compute_geometry(in, a, in);
    }
    if (cfg.attrs.kernel.empty()) kernel_fail("pooling needs kernel_shape");
    return compute_geometry(in, cfg.attrs, cfg.attrs.kernel);
  }
};

DnnlPool::DnnlPool(DnnlPoolConfig cfg) : impl_(std::make_unique<Impl>()) { impl_->cfg = std::move(cfg); }
DnnlPool::~DnnlPool() = default;

Shape DnnlPool::output_shape(const Shape& xl) const {
  SpatialGeometry g = impl_->geometry(xl);
  Shape out = {xl[0], xl[1]};
  for (auto o : g.out) out.push_back(o);
  return out;
}

void DnnlPool::run(const float* x, const Shape& xl, int block, float* y, ThreadPool* pool) const {
  const Impl& im = *impl_;
  int64_t work = shape_numel(xl);  // inputs read, times the window (the serial cut-off as for convolutions)
  for (int64_t k : im.cfg.attrs.kernel) work *= k;
  const int nthr = work < kSerialConvMacs ? 1 : threads_of(pool);
  std::vector<int64_t> key(xl.begin(), xl.end());
  key.push_back(block);
  key.push_back(nthr);
  omp_set_num_threads(nthr);
  SpatialGeometry g = im.geometry(xl);
  memory::dims xd(xl.begin(), xl.end()), yd = {xl[0], xl[1]};
  for (auto o : g.out) yd.push_back(o);
  memory::desc src_md = act_desc(xd, block), dst_md = act_desc(yd, block);
  std::shared_ptr<dnnl::pooling_forward> prim;
  {
    std::lock_guard<std::mutex> lock(im.mu);
    auto it = im.cache.find(key);
    if (it != im.cache.end()) prim = it->second;
  }
  if (!prim) {
    const int nd = g.nd;
    memory::dims strides(g.strides.begin(), g.strides.end()), kernel(g.kernel.begin(), g.kernel.end()), pl(nd), pr(nd);
    for (int i = 0; i < nd; ++i) {
      pl[i] = g.pad_begin[i];
      // ceil_mode: extend the end padding so oneDNN produces the same count
      pr[i] = (g.out[i] - 1) * g.strides[i] + g.kernel[i] - g.in[i] - g.pad_begin[i];
    }
    algorithm alg = im.cfg.kind == DnnlPoolConfig::Max ? algorithm::pooling_max
                    : im.cfg.count_include_pad      ? algorithm::pooling_avg_include_padding
                                                    : algorithm::pooling_avg_exclude_padding;
    dnnl::pooling_forward::desc desc(dnnl::prop_kind::forward_inference, alg, src_md, dst_md, strides, kernel, pl, pr);
    prim = std::make_shared<dnnl::pooling_forward>(dnnl::pooling_forward::primitive_desc(desc, engine()));
    std::lock_guard<std::mutex> lock(im.mu);
    im.cache.emplace(key, prim);
  }
  dnnl::stream& s = stream();
  memory src(src_md, engine(), const_cast<float*>(x)), dst(dst_md, engine(), y);
  prim->execute(s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
  s.wait();
}

#endif  // ONYX_WITH_DNNL

}  // namespace onyx
