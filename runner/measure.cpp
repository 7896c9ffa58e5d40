#include "runner/measure.h"

#include <algorithm>
#include <utility>

#include "common/cancel.h"
#include "common/straggler.h"
#include "common/errors.h"
#include "common/verify.h"
#include "gpu/cuda.h"
#include "runner/measure_group.h"

namespace gradex {

double Measurement::median() const {
  if (seconds.empty()) return 0;
  std::vector<double> s = seconds;
  std::sort(s.begin(), s.end());
  const std::size_t n = s.size();
  return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

double Measurement::min() const {
  return seconds.empty() ? 0 : *std::min_element(seconds.begin(), seconds.end());
}

double Measurement::max() const {
  return seconds.empty() ? 0 : *std::max_element(seconds.begin(), seconds.end());
}

Measurement measure(Scheme& scheme, const MeasureRequest& request) {
  const auto world = make_world(request.transport, scheme.endpoints(), request.options);
  return measure(*world, scheme, request);
}

Measurement measure(World& world, Scheme& scheme, const MeasureRequest& request) {
  Measurement result;
  world.run([&](Comm& comm) {
    Measurement m = measure_group(comm, scheme, request);
    if (comm.rank() == 0) result = std::move(m);
  });
  return result;
}

RankMeasurement measure_rank(Comm& comm, Scheme& scheme, const MeasureRequest& request) {
  GRADEX_ENFORCE(request.iters >= 1 && request.warmup_iters >= 0, "bad iteration counts");
  const int r = comm.rank();
  const int workers = scheme.workers();
  const bool is_worker = r < workers;
  // Each rank allocates (and first touches) its own buffer, as a separate
  // process or device would: on its GPU with device buffers.
  const std::size_t bytes = is_worker ? request.count * dtype_size(request.dtype) : 0;
  std::vector<std::byte> storage(request.device_buffers ? 0 : bytes);
  const std::shared_ptr<void> device_storage =
      request.device_buffers && is_worker ? device_allocate(bytes) : nullptr;
  void* buffer = request.device_buffers ? device_storage.get() : storage.data();
  Tensor data{is_worker ? buffer : nullptr, request.count, request.dtype};
  const auto fill = request.device_buffers ? &device_fill_collective_input : &fill_collective_input;
  const auto count_wrong =
      request.device_buffers ? &device_count_wrong_collective : &count_wrong_collective;
  RankMeasurement mine;
  mine.seconds.assign(static_cast<std::size_t>(request.iters), 0.0);
  for (int it = -request.warmup_iters; it < request.iters; ++it) {
    // A cancelled run stops within one iteration; the rank that throws
    // aborts the group, which wakes the others from their waits.
    throw_if_cancelled();
    if (is_worker) fill(request.collective, data, r, workers);
    comm.barrier();
    comm.reset_traffic();
    const double t0 = comm.clock().now();
    straggle(comm, workers, request.straggler_ms);
    scheme.run(comm, request.collective, data, request.op);
    const double t1 = comm.clock().now();
    mine.traffic = comm.traffic();
    // Nobody checks results while a slower rank is still being timed:
    // the check would compete with it for the CPU.
    comm.barrier();
    if (it >= 0 && is_worker) {
      mine.seconds[static_cast<std::size_t>(it)] = t1 - t0;
      mine.wrong += count_wrong(request.collective, data, r, workers, request.op);
    }
  }
  return mine;
}

}  // namespace gradex
