#include "runner/measure_group.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

#include "common/errors.h"
#include "common/verify.h"

namespace gradex {

Measurement measure_group(Comm& comm, Scheme& scheme, const MeasureRequest& request) {
  const int endpoints = scheme.endpoints();
  const int workers = scheme.workers();
  GRADEX_ENFORCE_EQ(comm.size(), endpoints, "group size vs the scheme's endpoints");
  GRADEX_ENFORCE(request.iters >= 1 && request.warmup_iters >= 0, "bad iteration counts");
  const int r = comm.rank();
  const bool is_worker = r < workers;
  const auto iters = static_cast<std::size_t>(request.iters);
  const RankMeasurement own = measure_rank(comm, scheme, request);
  const std::vector<double>& mine = own.seconds;
  const std::uint64_t wrong = own.wrong;
  const Traffic& last = own.traffic;

  // One record per rank: its timings (0 for servers, which are not timed),
  // its wrong count and its traffic, all as 64-bit words.
  std::vector<std::uint64_t> record;
  for (double s : mine) record.push_back(std::bit_cast<std::uint64_t>(is_worker ? s : 0.0));
  record.insert(record.end(), {wrong, last.bytes_sent, last.bytes_received, last.messages_sent,
                               last.messages_received});
  const std::size_t record_bytes = record.size() * sizeof(std::uint64_t);

  Measurement m;
  m.seconds.assign(iters, 0.0);
  m.traffic.resize(static_cast<std::size_t>(endpoints));
  if (r != 0) {
    comm.send(0, record.data(), record_bytes, kMeasureGatherTag);
    m.seconds = is_worker ? mine : m.seconds;
    m.wrong = wrong;
    m.traffic[static_cast<std::size_t>(r)] = last;
    return m;
  }
  std::vector<std::vector<std::uint64_t>> all(static_cast<std::size_t>(endpoints), record);
  std::vector<Request> pending;
  for (int p = 1; p < endpoints; ++p) {
    pending.push_back(comm.irecv(p, all[static_cast<std::size_t>(p)].data(), record_bytes,
                                 kMeasureGatherTag));
  }
  comm.wait_all(pending);
  for (int p = 0; p < endpoints; ++p) {
    const auto& rec = all[static_cast<std::size_t>(p)];
    for (std::size_t i = 0; i < iters; ++i) {
      m.seconds[i] = std::max(m.seconds[i], std::bit_cast<double>(rec[i]));
    }
    m.wrong += rec[iters];
    m.traffic[static_cast<std::size_t>(p)] = {rec[iters + 1], rec[iters + 2], rec[iters + 3],
                                              rec[iters + 4]};
  }
  return m;
}

}  // namespace gradex
