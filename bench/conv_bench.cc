// Times Onyx's direct blocked convolution (cpu/nchwc_conv.h) against oneDNN
// (cpu/dnnl_conv.h) on the convolution shapes of SqueezeNet 1.1, MobileNetV2
// and ResNet-50 (batch 1, bias + Relu fused as the optimizer emits them),
// at 1 and 2 threads, and for 3x3 stride-1 shapes also Onyx's Winograd
// kernel (cpu/nchwc_winograd.h). They run alternately (a few calls each,
// many rounds) so a noisy shared machine hurts all alike; medians per call.
// With --cold every call finds other data in the caches, as inside a model
// (closer to in-model times for Winograd, whose weights are 1.8-4x larger).
//
//   cmake -S . -B build -DONYX_BUILD_BENCH=ON && ninja -C build conv_bench
//   build/bench/conv_bench [--rounds N] [--threads 1,2] [--filter TEXT] [--cold]
//   (--filter keeps the rows whose model name or label contains TEXT, e.g.
//   squeezenet or 'g1152')
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cpu/dnnl_conv.h"
#include "cpu/nchwc_conv.h"
#include "cpu/nchwc_winograd.h"

using namespace onyx;

namespace {

struct ConvShape {
  const char* model;
  int64_t C, M, H, W, K, S, P, G;
  bool plain;  // first layer: NCHW input
  int64_t KW = -1, PW = -1;  // a kernel of K x KW with pads P / PW (default square)
};

const ConvShape kShapes[] = {
    // SqueezeNet 1.1
    {"squeezenet", 3, 64, 224, 224, 3, 2, 0, 1, true},
    {"squeezenet", 64, 16, 55, 55, 1, 1, 0, 1, false},
    {"squeezenet", 16, 64, 55, 55, 1, 1, 0, 1, false},
    {"squeezenet", 16, 64, 55, 55, 3, 1, 1, 1, false},
    {"squeezenet", 128, 16, 55, 55, 1, 1, 0, 1, false},
    {"squeezenet", 128, 32, 27, 27, 1, 1, 0, 1, false},
    {"squeezenet", 32, 128, 27, 27, 1, 1, 0, 1, false},
    {"squeezenet", 32, 128, 27, 27, 3, 1, 1, 1, false},
    {"squeezenet", 256, 32, 27, 27, 1, 1, 0, 1, false},
    {"squeezenet", 256, 48, 13, 13, 1, 1, 0, 1, false},
    {"squeezenet", 48, 192, 13, 13, 1, 1, 0, 1, false},
    {"squeezenet", 48, 192, 13, 13, 3, 1, 1, 1, false},
    {"squeezenet", 384, 48, 13, 13, 1, 1, 0, 1, false},
    {"squeezenet", 384, 64, 13, 13, 1, 1, 0, 1, false},
    {"squeezenet", 64, 256, 13, 13, 1, 1, 0, 1, false},
    {"squeezenet", 64, 256, 13, 13, 3, 1, 1, 1, false},
    {"squeezenet", 512, 64, 13, 13, 1, 1, 0, 1, false},
    {"squeezenet", 512, 1000, 13, 13, 1, 1, 0, 1, false},
    // MobileNetV2
    {"mobilenet", 3, 32, 224, 224, 3, 2, 1, 1, true},
    {"mobilenet", 32, 32, 112, 112, 3, 1, 1, 32, false},
    {"mobilenet", 32, 16, 112, 112, 1, 1, 0, 1, false},
    {"mobilenet", 16, 96, 112, 112, 1, 1, 0, 1, false},
    {"mobilenet", 96, 96, 112, 112, 3, 2, 1, 96, false},
    {"mobilenet", 96, 24, 56, 56, 1, 1, 0, 1, false},
    {"mobilenet", 24, 144, 56, 56, 1, 1, 0, 1, false},
    {"mobilenet", 144, 144, 56, 56, 3, 1, 1, 144, false},
    {"mobilenet", 144, 24, 56, 56, 1, 1, 0, 1, false},
    {"mobilenet", 144, 144, 56, 56, 3, 2, 1, 144, false},
    {"mobilenet", 144, 32, 28, 28, 1, 1, 0, 1, false},
    {"mobilenet", 32, 192, 28, 28, 1, 1, 0, 1, false},
    {"mobilenet", 192, 192, 28, 28, 3, 1, 1, 192, false},
    {"mobilenet", 192, 32, 28, 28, 1, 1, 0, 1, false},
    {"mobilenet", 192, 192, 28, 28, 3, 2, 1, 192, false},
    {"mobilenet", 192, 64, 14, 14, 1, 1, 0, 1, false},
    {"mobilenet", 64, 384, 14, 14, 1, 1, 0, 1, false},
    {"mobilenet", 384, 384, 14, 14, 3, 1, 1, 384, false},
    {"mobilenet", 384, 64, 14, 14, 1, 1, 0, 1, false},
    {"mobilenet", 384, 96, 14, 14, 1, 1, 0, 1, false},
    {"mobilenet", 96, 576, 14, 14, 1, 1, 0, 1, false},
    {"mobilenet", 576, 576, 14, 14, 3, 1, 1, 576, false},
    {"mobilenet", 576, 96, 14, 14, 1, 1, 0, 1, false},
    {"mobilenet", 576, 576, 14, 14, 3, 2, 1, 576, false},
    {"mobilenet", 576, 160, 7, 7, 1, 1, 0, 1, false},
    {"mobilenet", 160, 960, 7, 7, 1, 1, 0, 1, false},
    {"mobilenet", 960, 960, 7, 7, 3, 1, 1, 960, false},
    {"mobilenet", 960, 160, 7, 7, 1, 1, 0, 1, false},
    {"mobilenet", 960, 320, 7, 7, 1, 1, 0, 1, false},
    {"mobilenet", 320, 1280, 7, 7, 1, 1, 0, 1, false},
    // ResNet-50
    {"resnet50", 3, 64, 224, 224, 7, 2, 3, 1, true},
    {"resnet50", 64, 64, 56, 56, 1, 1, 0, 1, false},
    {"resnet50", 64, 64, 56, 56, 3, 1, 1, 1, false},
    {"resnet50", 64, 256, 56, 56, 1, 1, 0, 1, false},
    {"resnet50", 256, 64, 56, 56, 1, 1, 0, 1, false},
    {"resnet50", 256, 128, 56, 56, 1, 1, 0, 1, false},
    {"resnet50", 128, 128, 56, 56, 3, 2, 1, 1, false},
    {"resnet50", 128, 512, 28, 28, 1, 1, 0, 1, false},
    {"resnet50", 256, 512, 56, 56, 1, 2, 0, 1, false},
    {"resnet50", 512, 128, 28, 28, 1, 1, 0, 1, false},
    {"resnet50", 128, 128, 28, 28, 3, 1, 1, 1, false},
    {"resnet50", 512, 256, 28, 28, 1, 1, 0, 1, false},
    {"resnet50", 256, 256, 28, 28, 3, 2, 1, 1, false},
    {"resnet50", 256, 1024, 14, 14, 1, 1, 0, 1, false},
    {"resnet50", 512, 1024, 28, 28, 1, 2, 0, 1, false},
    {"resnet50", 1024, 256, 14, 14, 1, 1, 0, 1, false},
    {"resnet50", 256, 256, 14, 14, 3, 1, 1, 1, false},
    {"resnet50", 1024, 512, 14, 14, 1, 1, 0, 1, false},
    {"resnet50", 512, 512, 14, 14, 3, 2, 1, 1, false},
    {"resnet50", 512, 2048, 7, 7, 1, 1, 0, 1, false},
    {"resnet50", 1024, 2048, 14, 14, 1, 2, 0, 1, false},
    {"resnet50", 2048, 512, 7, 7, 1, 1, 0, 1, false},
    {"resnet50", 512, 512, 7, 7, 3, 1, 1, 1, false},
    // Inception-v3's 1x1 convolutions at 35x35, 17x17 and 8x8
    {"inception", 288, 64, 35, 35, 1, 1, 0, 1, false},
    {"inception", 288, 48, 35, 35, 1, 1, 0, 1, false},
    {"inception", 768, 192, 17, 17, 1, 1, 0, 1, false},
    {"inception", 768, 128, 17, 17, 1, 1, 0, 1, false},
    {"inception", 768, 160, 17, 17, 1, 1, 0, 1, false},
    {"inception", 1280, 320, 8, 8, 1, 1, 0, 1, false},
    {"inception", 1280, 448, 8, 8, 1, 1, 0, 1, false},
    {"inception", 2048, 192, 8, 8, 1, 1, 0, 1, false},
    {"inception", 2048, 384, 8, 8, 1, 1, 0, 1, false},
    // and its factorized and strided spatial convolutions
    {"inception", 192, 192, 17, 17, 7, 1, 3, 1, false, 1, 0},
    {"inception", 192, 192, 17, 17, 1, 1, 0, 1, false, 7, 3},
    {"inception", 160, 160, 17, 17, 7, 1, 3, 1, false, 1, 0},
    {"inception", 128, 128, 17, 17, 1, 1, 0, 1, false, 7, 3},
    {"inception", 384, 384, 8, 8, 3, 1, 1, 1, false, 1, 0},
    {"inception", 448, 384, 8, 8, 3, 1, 1, 1, false},
    {"inception", 288, 384, 35, 35, 3, 2, 0, 1, false},
    {"inception", 96, 96, 35, 35, 3, 2, 0, 1, false},
    {"inception", 32, 64, 109, 109, 3, 1, 1, 1, false},
    // the same at a 224x224 input (the spatial ones on 25x25, 12x12 and 5x5 maps)
    {"inception224", 288, 384, 25, 25, 3, 2, 0, 1, false},
    {"inception224", 192, 320, 12, 12, 3, 2, 0, 1, false},
    {"inception224", 192, 192, 12, 12, 7, 1, 3, 1, false, 1, 0},
    {"inception224", 448, 384, 5, 5, 3, 1, 1, 1, false},
    {"inception224", 384, 384, 5, 5, 3, 1, 1, 1, false, 1, 0},
    {"inception224", 1280, 320, 5, 5, 1, 1, 0, 1, false},
    // MnasNet's 7x7 stage: 1152 input channels, 12 or 20 output blocks (at 2
    // threads 1.5-1.6x the 1-thread speed, the split of 3 or 5 tiles uneven)
    {"mnasnet", 1152, 192, 7, 7, 1, 1, 0, 1, false},
    {"mnasnet", 192, 1152, 7, 7, 1, 1, 0, 1, false},
    {"mnasnet", 1152, 320, 7, 7, 1, 1, 0, 1, false},
    // EfficientNet-B0's 5x5 depthwise convolutions
    {"effnet", 144, 144, 56, 56, 5, 2, 2, 144, false},
    {"effnet", 240, 240, 28, 28, 5, 1, 2, 240, false},
    {"effnet", 672, 672, 14, 14, 5, 1, 2, 672, false},
    {"effnet", 672, 672, 14, 14, 5, 2, 2, 672, false},
    {"effnet", 1152, 1152, 7, 7, 5, 1, 2, 1152, false},
    // ConvNeXt-T (7x7 depthwise)
    {"convnext", 96, 96, 56, 56, 7, 1, 3, 96, false},
    {"convnext", 192, 192, 28, 28, 7, 1, 3, 192, false},
    {"convnext", 384, 384, 14, 14, 7, 1, 3, 384, false},
    {"convnext", 768, 768, 7, 7, 7, 1, 3, 768, false},
};

void fill(Tensor& t, int seed) {
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(((i * 37 + seed * 11) % 23) - 11) / 16.0f;
}

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 30, per_round = 4;
  std::vector<int> threads = {1, 2};
  std::string filter;
  bool cold = false;
  auto usage = [](const std::string& why) {
    std::fprintf(stderr, "usage: conv_bench [--rounds N] [--threads T[,T...]] [--filter TEXT] [--cold]\nconv_bench: %s\n",
                 why.c_str());
    std::exit(2);
  };
  auto positive = [&](const char* s) {
    const int v = std::atoi(s);
    if (v <= 0) usage(std::string("'") + s + "' is not a positive count");
    return v;
  };
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--rounds" && has_value) rounds = positive(argv[++i]);
    else if (a == "--threads" && has_value) {
      threads.clear();
      for (const char* s = argv[++i]; *s;) {
        threads.push_back(positive(s));
        while (*s && *s != ',') ++s;
        if (*s) ++s;
      }
    } else if (a == "--filter" && has_value) filter = argv[++i];
    else if (a == "--cold") cold = true;
    else usage("unknown or incomplete argument '" + a + "'");
  }
  // --cold: every timed call starts with the caches holding other data, as a
  // layer inside a model does (its input written a layer or two before).
  std::vector<float> evict(cold ? (64 << 20) / sizeof(float) : 0);
  if (!dnnl_available() || !nchwc_direct_available()) {
    std::fprintf(stderr, "needs oneDNN and an AVX-512 CPU\n");
    return 1;
  }
  std::printf("%-10s %-34s %3s %9s %9s %7s %8s\n", "model", "conv (C->M HxW k s p g)", "thr", "onednn_ms", "direct_ms",
              "speedup", "policy");
  for (int nthr : threads) {
    // as a session whose plan has oneDNN convolutions: the pool runs on OpenMP's team
    ThreadPoolOptions po;
    po.num_threads = nthr;
    po.use_openmp_team = true;
    ThreadPool pool(po);
    for (const ConvShape& s : kShapes) {
      const int64_t KW = s.KW < 0 ? s.K : s.KW, PW = s.PW < 0 ? s.P : s.PW;
      char label[64];
      std::snprintf(label, sizeof label, "%ld->%ld %ldx%ld k%ldx%ld s%ld p%ld g%ld%s", (long)s.C, (long)s.M, (long)s.H,
                    (long)s.W, (long)s.K, (long)KW, (long)s.S, (long)s.P, (long)s.G, s.plain ? " nchw" : "");
      if (!filter.empty() && (std::string(s.model) + " " + label).find(filter) == std::string::npos) continue;
      DnnlConvConfig cfg;
      cfg.attrs.kernel = {s.K, KW};
      cfg.attrs.strides = {s.S, s.S};
      cfg.attrs.pads = {s.P, PW, s.P, PW};
      cfg.group = s.G;
      cfg.activation = "Relu";
      cfg.constant_weights = true;
      DnnlConv dnnl(cfg);
      auto direct = NchwcDirectConv::create(cfg, 16);
      auto winograd = NchwcWinogradConv::create(cfg, 16);
      Tensor w(DataType::Float, {s.M, s.C / s.G, s.K, KW}), b(DataType::Float, {s.M});
      fill(w, 1);
      fill(b, 2);
      Shape xl = {1, s.C, s.H, s.W};
      Shape xs = s.plain ? xl : blocked_shape(xl, 16);
      Tensor x(DataType::Float, xs);
      fill(x, 3);
      Shape ys = blocked_shape(dnnl.output_shape(xl, w.shape()), 16);
      Tensor y(DataType::Float, ys);
      DnnlConv::Io io;
      io.x = x.data<float>();
      io.x_shape = xs;
      io.x_block = s.plain ? 0 : 16;
      io.w = &w;
      io.b = &b;
      io.y_block = 16;
      if (!direct || !direct->supports(io)) continue;
      if (winograd && !winograd->supports(io)) winograd.reset();
      for (int i = 0; i < 3; ++i) {
        dnnl.run(io, y.data<float>(), &pool);
        direct->run(io, y.data<float>(), &pool);
        if (winograd) winograd->run(io, y.data<float>(), &pool);
      }
      // Each round: a pause (the pool's workers and OpenMP's threads stop
      // spinning), one untimed call, then per_round timed calls; oneDNN and
      // the direct kernel alternate.
      std::vector<double> td, tn, tw;
      auto block = [&](int which, std::vector<double>& out) {
        std::this_thread::sleep_for(std::chrono::microseconds(500));
        for (int k = 0; k <= per_round; ++k) {
          for (size_t e = 0; e < evict.size(); e += 16) evict[e] += 1.0f;
          double t0 = now_ms();
          if (which == 1) direct->run(io, y.data<float>(), &pool);
          else if (which == 2) winograd->run(io, y.data<float>(), &pool);
          else dnnl.run(io, y.data<float>(), &pool);
          if (k > 0) out.push_back(now_ms() - t0);
        }
      };
      for (int r = 0; r < rounds; ++r) {
        block(0, td);
        block(1, tn);
        if (winograd) block(2, tw);
      }
      double md = median(td), mn = median(tn), mw = median(tw);
      DirectConvShape ds;
      int64_t OH = ys[2], OW = ys[3];
      ds.C = s.C, ds.M = s.M, ds.H = s.H, ds.W = s.W, ds.OH = OH, ds.OW = OW, ds.KH = s.K, ds.KW = KW, ds.SH = ds.SW = s.S;
      ds.group = s.G, ds.plain_input = s.plain;
      const char* policy = direct_conv_preferred(ds, nthr, pool.uses_openmp_team()) ? "direct" : "onednn";
      if (winograd && winograd_conv_preferred(ds, nthr, pool.uses_openmp_team())) policy = "winograd";
      std::printf("%-10s %-34s %3d %9.4f %9.4f %7.2f %8s", s.model, label, nthr, md, mn, md / mn, policy);
      if (winograd) std::printf("  winograd %.4f ms, %.2fx oneDNN", mw, md / mw);
      std::printf("\n");
      std::fflush(stdout);
    }
  }
  return 0;
}
