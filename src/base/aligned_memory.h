// Large aligned buffers for weights and activations.
#pragma once
#include <cstddef>
#include <cstdlib>
#include <memory>

namespace onyx {

// 64-byte aligned memory (never null: throws on exhaustion), freed with
// std::free. Ordinary pages, not transparent huge pages: on these VMs the
// guest reports free 2 MiB blocks to the host, so a huge page is usually one
// the host must fault in and zero again. Loading BERT-base right after an
// onnxruntime process had run it took 1204 ms with huge pages for the packed
// weights and 523 ms without (medians of 5, ORT 751 ms); run times did not
// change measurably.
void* allocate_aligned(size_t bytes);

struct AlignedFree {
  void operator()(float* p) const { std::free(p); }
};
// An owned 64-byte aligned float array.
using AlignedFloats = std::unique_ptr<float[], AlignedFree>;
// n floats (at least one), all zero up to the end of the last 64-byte line.
AlignedFloats allocate_zeroed_floats(size_t n);

// A 64-byte aligned float buffer that only grows: kernels keep one per thread
// (thread_local) for intermediates, so steady-state runs allocate nothing.
// Contents are not preserved across a growth.
class AlignedScratch {
 public:
  float* get(size_t floats) {
    if (floats > size_) {
      data_.reset(static_cast<float*>(allocate_aligned(floats * sizeof(float))));
      size_ = floats;
    }
    return data_.get();
  }

 private:
  AlignedFloats data_;
  size_t size_ = 0;
};

}  // namespace onyx
