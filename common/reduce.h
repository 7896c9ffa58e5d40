// Reduce operations and the type-erased kernels that apply them.
//
// Kernels work on raw pointers plus a dtype (Gloo's approach): one compiled
// loop per (dtype, op), selected at run time, instead of templates spread
// through every algorithm.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/dtype.h"

namespace gradex {

enum class ReduceOp { sum, avg, min, max };

std::string_view reduce_op_name(ReduceOp op);
ReduceOp parse_reduce_op(std::string_view text, const std::string& field = "op");
inline constexpr ReduceOp kAllReduceOps[] = {ReduceOp::sum, ReduceOp::avg, ReduceOp::min,
                                             ReduceOp::max};

// The op applied while combining contributions: avg combines as a sum and is
// divided once at the end (finish_reduce), as NCCL's ncclAvg does.
ReduceOp combining_op(ReduceOp op);

// dst[i] = dst[i] (op) src[i] for i < count. dst and src must not overlap.
void reduce_into(void* dst, const void* src, std::size_t count, DType dtype, ReduceOp op);
// out[i] = a[i] (op) b[i]; out may alias a or b.
void reduce_pair(void* out, const void* a, const void* b, std::size_t count, DType dtype,
                 ReduceOp op);
// Applies the final step of `op` over `contributors` inputs (divide for avg;
// integer avg truncates toward zero). A no-op for the other ops.
void finish_reduce(Tensor data, ReduceOp op, int contributors);

}  // namespace gradex
