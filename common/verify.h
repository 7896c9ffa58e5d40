// Inputs whose reduction is known in closed form, and the check against it
// (nccl-tests' #wrong column). Values are small integers, so sums are exact
// in every dtype and in any order of combination, and a block landing in
// the wrong place shows up as wrong values.
#pragma once

#include <cstddef>

#include "common/dtype.h"
#include "common/reduce.h"

namespace gradex {

// Element i of rank r's input: ((7 r + i) mod 13) - 6, in [-6, 6].
double input_value(int rank, std::size_t i);
void fill_input(Tensor data, int rank);

// Elements of `result` that differ from op over the inputs of `workers`
// ranks (exact for sum/min/max; avg within one rounding of the dtype).
std::size_t count_wrong(const Tensor& result, int workers, ReduceOp op);

}  // namespace gradex
