// The server role: a summation service for one shard, ps-lite's default
// server handler reduced to its core. One synchronous round: take one push
// from every worker, combine them, answer every worker with the result.
#pragma once

#include <cstddef>

#include "common/comm.h"
#include "common/dtype.h"
#include "common/reduce.h"

namespace gradex {

// Serves one round of server `server`, whose shard has `count` elements of
// `dtype`, to workers 0..workers-1 of `comm` (the host itself may be one of
// them: its messages to itself are local copies). Combines with
// combining_op(op); finishing an average is left to the workers. The
// workers' pull receives must be posted before this blocks on its sends.
void serve_round(Comm& comm, int workers, int server, std::size_t count, DType dtype,
                 ReduceOp op);

}  // namespace gradex
