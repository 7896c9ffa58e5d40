// What each worker of a data-parallel run tells rank 0 once its steps are
// done (step times, parameter hash, bytes on the wire, bucket timings), as
// 64-bit words for the gather, and rank 0's means over the workers; and
// what the exchange declares a step moves, to set beside the count.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "common/comm.h"
#include "train/gradient_exchange.h"
#include "train/trainer.h"

namespace gradex {

// A worker's figures summed over its steps, with its process's peak
// resident bytes; bucket_sums holds each bucket's start and end from the
// start of the step.
std::vector<std::uint64_t> encode_worker(const StepTimes& sum, std::uint64_t params_hash,
                                         const Traffic& traffic, std::size_t peak_resident,
                                         const std::vector<std::pair<double, double>>& bucket_sums);
std::uint64_t params_hash_word(const std::vector<std::uint64_t>& words);

// Every worker's words (worker 0's first) into `result`: the means over
// workers and result.steps, the bytes on the wire, the bucket spans (none
// when the run did not synchronise), and whether the replicas agree.
void decode_workers(TrainResult& result, const std::vector<std::vector<std::uint64_t>>& all,
                    const std::vector<std::size_t>& bucket_bytes, bool synchronised);

// What the exchange declares each worker sends and receives in a step of
// `calls`, mean over the workers; nullopt if it declares nothing.
std::optional<StepTraffic> declared_step(const GradientExchange& exchange,
                                         const std::vector<ExchangeCall>& calls);

// What an endpoint moved between two readings of its Comm::traffic().
Traffic traffic_since(const Traffic& before, const Traffic& now);

}  // namespace gradex
