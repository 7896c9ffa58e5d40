// Inputs whose reduction is known in closed form, and the check against it
// (nccl-tests' #wrong column). Values are small integers, so sums are exact
// in every dtype and in any order of combination, and a block landing in
// the wrong place shows up as wrong values.
#pragma once

#include <array>
#include <cstddef>
#include <vector>

#include "common/collective.h"
#include "common/dtype.h"
#include "common/reduce.h"

namespace gradex {

// Element i of rank r's input: ((7 r + i) mod 13) - 6, in [-6, 6].
double input_value(int rank, std::size_t i);
void fill_input(Tensor data, int rank);

// Elements of `result` that differ from op over the inputs of `workers`
// ranks (exact for sum/min/max; avg within one rounding of the dtype).
std::size_t count_wrong(const Tensor& result, int workers, ReduceOp op);

// The same for any collective, on worker `rank` of `workers`:
//   all_reduce, reduce_scatter: fill_input; the check covers the whole
//     buffer, or block `rank` only (the others hold partial sums);
//   all_gather: block `rank` holds the rank's input at those indices, the
//     other blocks a marker no input has; every block b must end as
//     worker b's input;
//   broadcast: the root holds its input, the others the marker; every
//     worker must end with the root's input.
void fill_collective_input(Collective c, Tensor data, int rank, int workers);
std::size_t count_wrong_collective(Collective c, const Tensor& result, int rank, int workers,
                                   ReduceOp op);

// The same fills and checks as stretches of a buffer whose element i is
// (or must be) values[(first + i) mod kVerifyPeriod]: what the CPU
// functions above do, and what the CUDA kernels (gpu/) do on a device.
inline constexpr int kVerifyPeriod = 13;
struct PeriodicSpan {
  std::size_t offset = 0;  // elements into the buffer
  std::size_t count = 0;
  std::size_t first = 0;  // the index whose value the span starts with
  std::array<double, kVerifyPeriod> values{};
  double tolerance = 0;  // relative, against max(1, |value|); 0: exact
};
std::vector<PeriodicSpan> collective_fill_spans(Collective c, std::size_t count, int rank,
                                                int workers);
std::vector<PeriodicSpan> collective_check_spans(Collective c, std::size_t count, DType dtype,
                                                 int rank, int workers, ReduceOp op);

}  // namespace gradex
