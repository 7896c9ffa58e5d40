// The largest data frame a launched participant accepts, from its plan, so
// a peer announcing more is refused before anything is allocated
// (TransportOptions::max_message_bytes).
#pragma once

#include <cstdint>

#include "runner/plan.h"
#include "train/train_job.h"

namespace gradex {

// Floor for the runner's own small messages (barriers, the gathers of
// timings and parameter hashes), whatever the plan.
inline constexpr std::uint64_t kMessageLimitFloor = std::uint64_t{1} << 20;

// A scheme sends at most the whole buffer in one message: the largest of
// the scenario's sizes, or for training the model's parameters (twice
// their bytes: a compressed gradient carries an index next to each value).
std::uint64_t message_limit(const RunPlan& plan, const TrainJob* job);

}  // namespace gradex
