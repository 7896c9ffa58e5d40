#include "transport/nccl/links.h"

#include <string>

#include "common/watchdog.h"
#include "gpu/check.h"

namespace gradex::nccl {

namespace {

// Round `round` of a round-robin tournament over `slots` (even) players:
// every player meets every other once in slots - 1 rounds, so every pair
// of ranks is split off in parallel with the others of its round.
int partner(int me, int round, int slots) {
  if (me == slots - 1) return round;
  if (me == round) return slots - 1;
  return ((2 * round - me) % (slots - 1) + (slots - 1)) % (slots - 1);
}

cudaStream_t new_stream() {
  cudaStream_t s = nullptr;
  // Non-blocking: independent of the legacy default stream's work.
  gpu::cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  return s;
}

}  // namespace

Links connect_links(int rank, int size, int device, const ncclUniqueId& id,
                    std::chrono::milliseconds timeout) {
  Links l;
  l.rank = rank;
  l.size = size;
  l.device = device;
  const auto n = static_cast<std::size_t>(size);
  l.to.assign(n, nullptr);
  l.from.assign(n, nullptr);
  l.to_stream.assign(n, nullptr);
  l.from_stream.assign(n, nullptr);
  try {
    gpu::cuda_check(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
    // Each a blocking call of every rank together, each within `timeout`.
    const auto guarded = [&](const char* what, auto call) {
      const WatchdogGuard deadline(
          Watchdog::process(), timeout,
          "rank " + std::to_string(rank) + ": " + what + " over " + std::to_string(size) +
              " ranks did not return within " + std::to_string(timeout.count()) +
              " ms: a rank never joined, or was lost. Ending this process.");
      gpu::nccl_check(call(), what);
    };
    guarded("ncclCommInitRank", [&] { return ncclCommInitRank(&l.group, size, id, rank); });
    l.collective_stream = new_stream();
    const int slots = size + size % 2;
    for (int round = 0; round + 1 < slots; ++round) {
      const int p = partner(rank, round, slots);
      const bool paired = p < size;
      const int color = paired ? std::min(rank, p) : NCCL_SPLIT_NOCOLOR;
      // Split twice: the first carries the lower rank's messages to the
      // higher, the second the other way.
      ncclComm_t up = nullptr, down = nullptr;
      guarded("ncclCommSplit", [&] { return ncclCommSplit(l.group, color, rank, &up, nullptr); });
      guarded("ncclCommSplit", [&] { return ncclCommSplit(l.group, color, rank, &down, nullptr); });
      if (!paired) continue;
      const auto i = static_cast<std::size_t>(p);
      l.to[i] = rank < p ? up : down;
      l.from[i] = rank < p ? down : up;
      l.to_stream[i] = new_stream();
      l.from_stream[i] = new_stream();
    }
  } catch (...) {
    l.abort();
    l.release(true);
    throw;
  }
  return l;
}

void Links::abort() noexcept {
  for (ncclComm_t c : to) {
    if (c) ncclCommAbort(c);
  }
  for (ncclComm_t c : from) {
    if (c) ncclCommAbort(c);
  }
  if (group) ncclCommAbort(group);
  to.assign(to.size(), nullptr);
  from.assign(from.size(), nullptr);
  group = nullptr;
}

void Links::release(bool aborted) noexcept {
  if (aborted) abort();
  cudaSetDevice(device);
  for (ncclComm_t& c : to) {
    if (c) ncclCommDestroy(c);
    c = nullptr;
  }
  for (ncclComm_t& c : from) {
    if (c) ncclCommDestroy(c);
    c = nullptr;
  }
  if (group) ncclCommDestroy(group);
  group = nullptr;
  for (cudaStream_t s : to_stream) {
    if (s) cudaStreamDestroy(s);
  }
  for (cudaStream_t s : from_stream) {
    if (s) cudaStreamDestroy(s);
  }
  if (collective_stream) cudaStreamDestroy(collective_stream);
  to_stream.clear();
  from_stream.clear();
  collective_stream = nullptr;
}

}  // namespace gradex::nccl
