// Conv and com.onyx FusedConv through cuDNN (1-D, 2-D and 3-D; 1-D as 2-D,
// [N,C,1,W] with cudnn_conv1d_pad_to_nc1d, else [N,C,W,1]). The algorithm is
// chosen per input shape by cudnn_conv_algo_search (EXHAUSTIVE: cuDNN runs
// them all; HEURISTIC: cuDNN's guess; DEFAULT: implicit precomputed GEMM) and
// kept in the provider's ConvAlgoCache (persisted with conv_algo_cache_file).
// Bias, the residual Z and the activation run in one epilogue kernel.
#include <map>
#include <mutex>

#include "cuda/kernels/act.cuh"

namespace onyx {
namespace cuda {

namespace {

struct TensorDesc {
  cudnnTensorDescriptor_t d = nullptr;
  TensorDesc() { ONYX_CUDNN(cudnnCreateTensorDescriptor(&d)); }
  ~TensorDesc() { cudnnDestroyTensorDescriptor(d); }
  void set(cudnnDataType_t t, const std::vector<int>& dims) {
    std::vector<int> strides(dims.size());
    int s = 1;
    for (size_t i = dims.size(); i-- > 0;) {
      strides[i] = s;
      s *= dims[i];
    }
    ONYX_CUDNN(cudnnSetTensorNdDescriptor(d, t, static_cast<int>(dims.size()), dims.data(), strides.data()));
  }
};
struct FilterDesc {
  cudnnFilterDescriptor_t d = nullptr;
  FilterDesc() { ONYX_CUDNN(cudnnCreateFilterDescriptor(&d)); }
  ~FilterDesc() { cudnnDestroyFilterDescriptor(d); }
};
struct ConvDesc {
  cudnnConvolutionDescriptor_t d = nullptr;
  ConvDesc() { ONYX_CUDNN(cudnnCreateConvolutionDescriptor(&d)); }
  ~ConvDesc() { cudnnDestroyConvolutionDescriptor(d); }
};

// Everything a run needs for one input shape.
struct ConvPlan {
  TensorDesc x, y;
  FilterDesc w;
  ConvDesc conv;
  Shape out_shape;
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  size_t workspace = 0;
};

std::string join(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "x" : "") + std::to_string(v[i]);
  return s;
}

class Conv final : public CudaKernel {
 public:
  Conv(const KernelInitContext& ctx, bool fused) : CudaKernel(ctx), fused_(fused) {
    auto_pad_ = ctx.get_string("auto_pad", "NOTSET");
    dilations_ = ctx.get_ints("dilations");
    group_ = ctx.get_int("group", 1);
    kernel_shape_ = ctx.get_ints("kernel_shape");
    pads_ = ctx.get_ints("pads");
    strides_ = ctx.get_ints("strides");
    if (fused_) act_ = fused_activation(ctx);
  }

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    if (x.rank() < 3 || x.rank() > 5 || w.rank() != x.rank())
      kernel_fail("CUDA Conv: expected 3-D to 5-D X and W of the same rank, got " + shape_to_string(x.shape()) + " and " +
                  shape_to_string(w.shape()));
    if (x.dtype() != w.dtype()) kernel_fail("CUDA Conv: X and W types differ");
    std::shared_ptr<ConvPlan> plan = plan_for(x, w);
    Tensor& y = ctx.allocate_output(0, x.dtype(), plan->out_shape);
    if (y.numel() == 0) return;
    Tensor ws;
    if (plan->workspace) ws = p_->make_tensor(DataType::UInt8, {static_cast<int64_t>(plan->workspace)});
    const float one = 1.f, zero = 0.f;
    ONYX_CUDNN(cudnnConvolutionForward(p_->cudnn(), &one, plan->x.d, x.raw(), plan->w.d, w.raw(), plan->conv.d, plan->algo,
                                       plan->workspace ? ws.raw() : nullptr, plan->workspace, &zero, plan->y.d, y.raw()));
    const Tensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    const Tensor* z = fused_ && ctx.has_input(3) ? &ctx.input(3) : nullptr;
    if (z && z->shape() != y.shape())
      kernel_fail("FusedConv: Z has shape " + shape_to_string(z->shape()) + ", expected " + shape_to_string(y.shape()));
    if (b || z || act_.act != Act::None) {
      const int64_t channels = y.dim(1);
      const int64_t inner = channels ? y.numel() / (y.dim(0) * channels) : 1;
      dispatch_fp(y.dtype(), "Conv", [&](auto tag) {
        using T = decltype(tag);
        bias_act<T>(y.data<T>(), b ? b->data<T>() : nullptr, z ? z->data<T>() : nullptr, y.data<T>(), y.numel(), inner,
                    channels, act_, stream());
      });
    }
  }

 private:
  std::shared_ptr<ConvPlan> plan_for(const Tensor& x, const Tensor& w) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = plans_.find(x.shape());
    if (it != plans_.end() && it->second.first == w.shape()) return it->second.second;
    auto plan = make_plan(x, w);
    plans_[x.shape()] = {w.shape(), plan};
    return plan;
  }

  std::shared_ptr<ConvPlan> make_plan(const Tensor& x, const Tensor& w) const {
    const int k = x.rank() - 2;
    std::vector<int64_t> dil = dilations_.empty() ? std::vector<int64_t>(k, 1) : dilations_;
    std::vector<int64_t> str = strides_.empty() ? std::vector<int64_t>(k, 1) : strides_;
    std::vector<int64_t> kshape(w.shape().begin() + 2, w.shape().end());
    if (!kernel_shape_.empty() && kernel_shape_ != kshape) kernel_fail("CUDA Conv: kernel_shape does not match W");
    if (static_cast<int>(dil.size()) != k || static_cast<int>(str.size()) != k) kernel_fail("CUDA Conv: bad strides/dilations");
    if (x.dim(1) != w.dim(1) * group_) kernel_fail("CUDA Conv: X channels " + std::to_string(x.dim(1)) + " != W channels x group");
    std::vector<int64_t> pb(k, 0), pe(k, 0);
    Shape out = {x.dim(0), w.dim(0)};
    for (int i = 0; i < k; ++i) {
      const int64_t in = x.dim(2 + i), ek = dil[i] * (kshape[i] - 1) + 1;
      if (auto_pad_ == "SAME_UPPER" || auto_pad_ == "SAME_LOWER") {
        const int64_t o = (in + str[i] - 1) / str[i];
        const int64_t total = std::max<int64_t>(0, (o - 1) * str[i] + ek - in);
        pb[i] = auto_pad_ == "SAME_UPPER" ? total / 2 : total - total / 2;
        pe[i] = total - pb[i];
      } else if (auto_pad_ != "VALID" && !pads_.empty()) {
        pb[i] = pads_[i];
        pe[i] = pads_[i + k];
      }
      if (pb[i] != pe[i]) kernel_fail("CUDA Conv: asymmetric padding is not supported on the CUDA provider");
      const int64_t o = (in + pb[i] + pe[i] - ek) / str[i] + 1;
      if (o <= 0) kernel_fail("CUDA Conv: the output would be empty for input " + shape_to_string(x.shape()));
      out.push_back(o);
    }
    auto plan = std::make_shared<ConvPlan>();
    plan->out_shape = out;
    // cuDNN wants at least 4-D: 1-D convolutions become 2-D.
    auto dims = [&](const Shape& s) {
      std::vector<int> d(s.begin(), s.end());
      if (k == 1) d.insert(p_->options().cudnn_conv1d_pad_to_nc1d ? d.begin() + 2 : d.end(), 1);
      return d;
    };
    std::vector<int> pad(pb.begin(), pb.end()), stride(str.begin(), str.end()), dilation(dil.begin(), dil.end());
    if (k == 1) {
      bool nc1d = p_->options().cudnn_conv1d_pad_to_nc1d;
      pad.insert(nc1d ? pad.begin() : pad.end(), 0);
      stride.insert(nc1d ? stride.begin() : stride.end(), 1);
      dilation.insert(nc1d ? dilation.begin() : dilation.end(), 1);
    }
    const bool f16 = x.dtype() == DataType::Float16;
    const cudnnDataType_t dt = f16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
    std::vector<int> xd = dims(x.shape()), wd = dims(w.shape()), yd = dims(out);
    plan->x.set(dt, xd);
    plan->y.set(dt, yd);
    ONYX_CUDNN(cudnnSetFilterNdDescriptor(plan->w.d, dt, CUDNN_TENSOR_NCHW, static_cast<int>(wd.size()), wd.data()));
    ONYX_CUDNN(cudnnSetConvolutionNdDescriptor(plan->conv.d, static_cast<int>(pad.size()), pad.data(), stride.data(),
                                               dilation.data(), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    ONYX_CUDNN(cudnnSetConvolutionGroupCount(plan->conv.d, static_cast<int>(group_)));
    // float: no TF32 unless use_tf32 (results stay within 1e-3 of the CPU); float16: tensor cores.
    const bool tf32 = p_->options().use_tf32;
    cudnnMathType_t math = f16 ? CUDNN_TENSOR_OP_MATH : tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
    ONYX_CUDNN(cudnnSetConvolutionMathType(plan->conv.d, math));

    const CudaProviderOptions& o = p_->options();
    const char* mode = o.cudnn_conv_algo_search == ConvAlgoSearch::Exhaustive ? "E"
                       : o.cudnn_conv_algo_search == ConvAlgoSearch::Heuristic ? "H" : "D";
    std::string key = p_->device_name() + "|cudnn" + std::to_string(cudnnGetVersion()) + "|" + (f16 ? "f16" : "f32") +
                      "|x" + join(xd) + "|w" + join(wd) + "|p" + join(pad) + "|s" + join(stride) + "|d" + join(dilation) +
                      "|g" + std::to_string(group_) + "|" + mode + (o.cudnn_conv_use_max_workspace ? "|maxws" : "|ws32m") +
                      (tf32 && !f16 ? "|tf32" : "");
    if (auto hit = p_->conv_cache().find(key)) {
      plan->algo = static_cast<cudnnConvolutionFwdAlgo_t>(hit->algo);
      plan->workspace = hit->workspace;
      ONYX_CUDNN(cudnnSetConvolutionMathType(plan->conv.d, static_cast<cudnnMathType_t>(hit->math_type)));
      return plan;
    }
    const size_t ws_limit = o.cudnn_conv_use_max_workspace
                                ? std::min<size_t>(p_->free_memory_hint() / 2, size_t{4} << 30)
                                : size_t{32} << 20;
    ConvAlgoChoice choice;
    choice.math_type = math;
    choice.algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
    if (o.cudnn_conv_algo_search == ConvAlgoSearch::Exhaustive) {
      // cuDNN times every algorithm on scratch buffers (x and w are real data).
      void* scratch_ws = nullptr;
      size_t ws_bytes = ws_limit;
      while (ws_bytes && cudaMalloc(&scratch_ws, ws_bytes) != cudaSuccess) {
        cudaGetLastError();
        ws_bytes /= 2;
      }
      void* scratch_y = nullptr;
      size_t y_bytes = static_cast<size_t>(shape_numel(out)) * dtype_size(x.dtype());
      ONYX_CUDA(cudaMalloc(&scratch_y, y_bytes ? y_bytes : 1));
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      int returned = 0;
      cudnnStatus_t st = cudnnFindConvolutionForwardAlgorithmEx(p_->cudnn(), plan->x.d, x.raw(), plan->w.d, w.raw(),
                                                                plan->conv.d, plan->y.d, scratch_y,
                                                                CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf,
                                                                scratch_ws, ws_bytes);
      cudaStreamSynchronize(stream());
      cudaFree(scratch_y);
      if (scratch_ws) cudaFree(scratch_ws);
      ONYX_CUDNN(st);
      bool found = false;
      for (int i = 0; i < returned && !found; ++i)
        if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= ws_bytes) {
          choice = {static_cast<int>(perf[i].algo), perf[i].memory, static_cast<int>(perf[i].mathType)};
          found = true;
        }
      if (!found) kernel_fail("CUDA Conv: cuDNN found no algorithm for input " + shape_to_string(x.shape()));
    } else if (o.cudnn_conv_algo_search == ConvAlgoSearch::Heuristic) {
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      int returned = 0;
      ONYX_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(p_->cudnn(), plan->x.d, plan->w.d, plan->conv.d, plan->y.d,
                                                        CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf));
      bool found = false;
      for (int i = 0; i < returned && !found; ++i)
        if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= ws_limit) {
          choice = {static_cast<int>(perf[i].algo), perf[i].memory, static_cast<int>(perf[i].mathType)};
          found = true;
        }
      if (!found) kernel_fail("CUDA Conv: cuDNN suggested no algorithm for input " + shape_to_string(x.shape()));
    }
    ONYX_CUDNN(cudnnSetConvolutionMathType(plan->conv.d, static_cast<cudnnMathType_t>(choice.math_type)));
    size_t ws = 0;
    ONYX_CUDNN(cudnnGetConvolutionForwardWorkspaceSize(p_->cudnn(), plan->x.d, plan->w.d, plan->conv.d, plan->y.d,
                                                       static_cast<cudnnConvolutionFwdAlgo_t>(choice.algo), &ws));
    choice.workspace = std::max(choice.workspace, ws);
    plan->algo = static_cast<cudnnConvolutionFwdAlgo_t>(choice.algo);
    plan->workspace = choice.workspace;
    p_->conv_cache().put(key, choice);
    return plan;
  }

  bool fused_;
  std::string auto_pad_;
  std::vector<int64_t> dilations_, kernel_shape_, pads_, strides_;
  int64_t group_ = 1;
  ActParams act_;
  mutable std::mutex mutex_;
  mutable std::map<Shape, std::pair<Shape, std::shared_ptr<ConvPlan>>> plans_;
};

bool conv_supported(const Node& n) {
  AttributeReader a(n);
  std::string auto_pad = a.get_string("auto_pad", "NOTSET");
  std::vector<int64_t> pads = a.get_ints("pads");
  for (size_t i = 0; i < pads.size() / 2; ++i)
    if (pads[i] != pads[i + pads.size() / 2]) return false;  // cuDNN pads symmetrically
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    std::vector<int64_t> s = a.get_ints("strides"), d = a.get_ints("dilations"), k = a.get_ints("kernel_shape");
    for (int64_t v : s)
      if (v != 1) return false;
    if (k.empty()) return false;
    for (size_t i = 0; i < k.size(); ++i)
      if (((i < d.size() ? d[i] : 1) * (k[i] - 1)) % 2) return false;  // would pad asymmetrically
  }
  return true;
}

}  // namespace
}  // namespace cuda

void register_cuda_conv(KernelRegistry& r) {
  using namespace cuda;
  for (int fused = 0; fused < 2; ++fused) {
    KernelDef d;
    d.domain = fused ? "com.onyx" : "";
    d.op_type = fused ? "FusedConv" : "Conv";
    d.since_version = 1;
    d.factory = [fused](const KernelInitContext& ctx) -> std::unique_ptr<Kernel> {
      return std::make_unique<Conv>(ctx, fused != 0);
    };
    d.supports_types = float_inputs(2);
    if (fused) d.supports = [](const Node& n) { return conv_supported(n) && fused_activation_supported(n); };
    else d.supports = conv_supported;
    r.add(std::move(d));
  }
}

}  // namespace onyx
