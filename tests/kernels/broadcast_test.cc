// The broadcast walkers against index arithmetic done the long way.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/broadcast.h"

namespace onyx {
namespace {

// The element of `in` (left-padded to out's rank) that output index `i` reads.
int64_t reference_offset(const Shape& in, const Shape& out, int64_t i) {
  Shape padded(out.size() - in.size(), 1);
  padded.insert(padded.end(), in.begin(), in.end());
  int64_t offset = 0, in_stride = 1;
  for (int d = static_cast<int>(out.size()) - 1; d >= 0; --d) {
    int64_t coord = i % out[d];
    i /= out[d];
    if (padded[d] != 1) offset += coord * in_stride;
    in_stride *= padded[d];
  }
  return offset;
}

TEST(Broadcast, WalkersMatchIndexArithmetic) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{3, 1}, {4, 1, 1}},       // lower rank, a trailing unit dimension the output keeps
      {{2, 5, 7, 9}, {5, 1, 1}}, // per channel
      {{3, 1, 5}, {1, 4, 1}},    // both broadcast
      {{4, 1, 13}, {6, 1}},
      {{2, 3}, {1, 2, 3}},       // same size, different rank
      {{}, {5, 2}},              // scalar
      {{7}, {7}},
      {{2, 1, 3, 1}, {1, 4, 1, 1}},
  };
  for (const auto& [a, b] : cases) {
    const Shape out = broadcast_shapes({a, b});
    const int64_t n = shape_numel(out);
    std::vector<int> seen(static_cast<size_t>(n), 0);
    for_each_broadcast2(a, b, out, [&](int64_t i, int64_t oa, int64_t ob) {
      ++seen[i];
      EXPECT_EQ(oa, reference_offset(a, out, i)) << shape_to_string(a) << " x " << shape_to_string(b) << " at " << i;
      EXPECT_EQ(ob, reference_offset(b, out, i)) << shape_to_string(a) << " x " << shape_to_string(b) << " at " << i;
    });
    for_each_broadcast_run(a, b, out, [&](int64_t oa, int64_t sa, int64_t ob, int64_t sb, int64_t oy, int64_t count) {
      for (int64_t k = 0; k < count; ++k) {
        ++seen[oy + k];
        EXPECT_EQ(oa + k * sa, reference_offset(a, out, oy + k)) << shape_to_string(a) << " x " << shape_to_string(b);
        EXPECT_EQ(ob + k * sb, reference_offset(b, out, oy + k)) << shape_to_string(a) << " x " << shape_to_string(b);
      }
    });
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(seen[i], 2) << "output " << i << " visited " << seen[i] << " times";
  }
}

}  // namespace
}  // namespace onyx
