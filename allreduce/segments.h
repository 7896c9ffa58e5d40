// Cutting a block of elements into pipelining segments.
#pragma once

#include <algorithm>
#include <cstddef>

#include "common/dtype.h"

namespace gradex {

// Segments of at most `segment_bytes` (at least one element) over blocks of
// up to `max_block` elements. Every rank computes the same segmentation, so
// a segment that is empty on one side is skipped on both.
struct Segmentation {
  std::size_t per_segment;  // elements
  std::size_t count;        // segments per block (of the largest block)

  Segmentation(std::size_t max_block, std::size_t segment_bytes, DType dtype)
      : per_segment(std::max<std::size_t>(1, segment_bytes / dtype_size(dtype))),
        count((max_block + per_segment - 1) / per_segment) {}

  // Segment j of `block` (possibly empty).
  Tensor of(const Tensor& block, std::size_t j) const {
    const std::size_t begin = std::min(block.count, j * per_segment);
    const std::size_t end = std::min(block.count, begin + per_segment);
    return block.slice(begin, end - begin);
  }
  // Non-empty segments of a block of n elements.
  std::size_t nonempty(std::size_t n) const { return (n + per_segment - 1) / per_segment; }
};

}  // namespace gradex
