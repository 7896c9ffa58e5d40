#include "runner/message_limit.h"

#include <algorithm>

#include "train/model.h"

namespace gradex {

std::uint64_t message_limit(const RunPlan& plan, const TrainJob* job) {
  std::uint64_t largest = 0;
  if (job != nullptr) {
    int workers = 1;
    if (!plan.scenario.workers.empty()) workers = plan.scenario.workers.front();
    const auto model = job->source(workers).make_model();
    largest = 2 * static_cast<std::uint64_t>(model->param_count()) * sizeof(float);
  } else {
    for (std::size_t bytes : plan.scenario.sizes) largest = std::max<std::uint64_t>(largest, bytes);
  }
  return std::max(largest, kMessageLimitFloor);
}

}  // namespace gradex
