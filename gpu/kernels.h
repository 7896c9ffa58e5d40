// The CUDA kernels (gpu/kernels.cu) as host functions that launch them on
// a stream and return at once. Buffers are device memory of the stream's
// device; any alignment (the vector path takes over where both sides are
// 16-byte aligned).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "common/dtype.h"
#include "common/reduce.h"
#include "common/verify.h"

namespace gradex::gpu {

// dst[i] = dst[i] (op) src[i]; avg combines as sum (common/reduce.h).
void launch_reduce_into(void* dst, const void* src, std::size_t count, DType dtype, ReduceOp op,
                        cudaStream_t stream);
// avg's division over `contributors`; a no-op for the other ops.
void launch_finish_reduce(Tensor data, ReduceOp op, int contributors, cudaStream_t stream);
// The span of `data` filled with its periodic values (common/verify.h).
void launch_fill_span(Tensor data, const PeriodicSpan& span, cudaStream_t stream);
// Adds the span's wrong elements to *counter (device memory).
void launch_count_span_wrong(const Tensor& data, const PeriodicSpan& span,
                             unsigned long long* counter, cudaStream_t stream);

}  // namespace gradex::gpu
