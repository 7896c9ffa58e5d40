// The NCCL communicators and CUDA streams of one rank of the nccl
// transport. NCCL runs the operations of one communicator in the order
// they were issued, and a lone ncclSend or ncclRecv blocks its GPU until
// the peer's matching call runs: with one communicator, two ranks that
// each post a send to the other before the receive (every scheme's
// exchange) would wait on each other for ever. So every ordered pair of
// ranks gets a communicator of its own (two ranks, split off the group's)
// and a stream of its own: a direction's messages flow in their posting
// order, independently of every other direction's.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <vector>

namespace gradex::nccl {

struct Links {
  int rank = 0;
  int size = 0;
  int device = 0;
  ncclComm_t group = nullptr;  // every rank: the baselines' collectives
  cudaStream_t collective_stream = nullptr;
  // Indexed by peer (null at this rank's own index): the two-rank
  // communicators carrying this rank's messages to the peer and the
  // peer's to this rank, and the stream of each.
  std::vector<ncclComm_t> to, from;
  std::vector<cudaStream_t> to_stream, from_stream;

  // The peer's rank within to[peer] and from[peer] (ranks keep their order).
  int pair_rank(int peer) const { return peer < rank ? 0 : 1; }
  // Every communicator ended at once (their operations fail and return);
  // idempotent. After it only release() may be called.
  void abort() noexcept;
  // Frees everything: communicators (destroyed, or aborted if `aborted`)
  // and streams.
  void release(bool aborted) noexcept;
};

// Collective over the `size` ranks (threads or processes) sharing `id`:
// each calls it with its own rank, on its own device. NCCL's communicator
// creation waits for every rank and takes no deadline: one that takes
// longer than `timeout` (a rank that never came, or died) ends the process
// with a message naming the call and this rank (common/watchdog.h).
Links connect_links(int rank, int size, int device, const ncclUniqueId& id,
                    std::chrono::milliseconds timeout);

}  // namespace gradex::nccl
