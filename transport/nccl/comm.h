// One rank of the nccl transport: Comm's tagged non-blocking messages as
// ncclSend/ncclRecv on a communicator and a stream per ordered pair of
// ranks (transport/nccl/links.h).
//
// Matching: NCCL delivers one direction's messages in the order they were
// sent, so a receive takes the next message from its peer whatever its
// tag. Every message travels with a 16-byte header (its tag and size, in
// the same NCCL group as the payload), and a receive that meets a message
// of another tag or size fails naming both instead of delivering the
// wrong bytes. gradex's schemes post each peer's receives in the order
// the peer sends (Comm's FIFO rule per tag then holds).
//
// Buffers may be device memory (the benchmark's, with "device": "cuda")
// or host memory (gradex's own gathers, a scheme's host scratch): host
// sides are staged through stream-ordered device memory. A receive-reduce
// lands in staging and the reduce kernel (gpu/kernels.cu) combines it into
// the destination on the direction's stream. Messages to this rank itself
// are copies.
//
// Waits poll the operation's CUDA event (yielding, then sleeping briefly)
// until the transport's deadline; on timeout, an NCCL error or a failed
// peer every communicator of this rank is aborted (ncclCommAbort) and the
// wait throws, naming the peer.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "gpu/nccl_access.h"
#include "transport/group_endpoint.h"
#include "transport/matching.h"
#include "transport/nccl/links.h"
#include "transport/options.h"

namespace gradex::nccl {

// The failure every rank of one in-process group sees (a process's own
// when its ranks are processes).
struct GroupFailure {
  transport::FirstFailure first;
  std::atomic<bool> aborted{false};
  void record(int rank, const std::string& why) noexcept;
};

struct Header {
  std::uint64_t tag = 0;
  std::uint64_t bytes = 0;
};

// Header slots per direction: the messages one direction may have in
// flight at once.
inline constexpr std::size_t kHeaderSlots = 4096;

struct NcclOp;

class NcclComm final : public GroupEndpoint, public gpu::NcclAccess {
 public:
  // `control`: the process group this rank joined first (null in one
  // process, where `failure` is shared by the group's threads).
  NcclComm(Links links, TransportOptions options, std::shared_ptr<GroupFailure> failure,
           std::unique_ptr<GroupEndpoint> control);
  ~NcclComm() override;
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  int rank() const override { return links_.rank; }
  int size() const override { return links_.size; }
  Clock& clock() override;
  std::chrono::milliseconds timeout() const override { return options_.timeout; }
  int device() const { return links_.device; }

  // GroupEndpoint (the control group's, where there is one).
  std::string address() const override;
  void connect(const std::vector<std::string>& addresses) override;
  void close() override;
  void abort(int failed_rank, const std::string& why) noexcept override;
  void set_shaping(const std::optional<Topology>& topology) override;

  // gpu::NcclAccess
  ncclComm_t group_comm() override { return links_.group; }
  cudaStream_t collective_stream() override { return links_.collective_stream; }
  void wait_collective(const std::string& what) override;

 protected:
  std::shared_ptr<RequestState> start_send(int peer, const void* data, std::size_t bytes,
                                           Tag tag) override;
  std::shared_ptr<RequestState> start_recv(int peer, void* data, std::size_t bytes,
                                           Tag tag) override;
  std::shared_ptr<RequestState> start_recv_reduce(int peer, Tensor dst, ReduceOp op,
                                                  Tag tag) override;
  void wait_state(RequestState& state) override;
  std::size_t wait_any_state(std::span<RequestState* const> states) override;

 private:
  struct Direction {
    Header* device_slots = nullptr;  // kHeaderSlots headers in device memory
    Header* host_slots = nullptr;    // and their pinned host mirror
    std::uint64_t sequence = 0;
    std::size_t in_flight = 0;
  };

  std::shared_ptr<NcclOp> post(const std::shared_ptr<NcclOp>& op);
  void post_self(const std::shared_ptr<NcclOp>& op);
  void post_send(NcclOp& op);
  void post_receive(NcclOp& op);
  // True once `op` completed; runs its host-side finish (header check,
  // host copies) the first time.
  bool poll_done(NcclOp& op);
  void finish(NcclOp& op);
  void check_health(const NcclOp* op, ncclComm_t comm);
  [[noreturn]] void fail(const std::string& what, int peer, bool timed_out);
  Header* slot(Direction& d, bool host);
  void take_slot(Direction& d, NcclOp& op);

  Links links_;
  TransportOptions options_;
  std::shared_ptr<GroupFailure> failure_;
  std::unique_ptr<GroupEndpoint> control_;
  std::vector<Direction> sends_, receives_;
  transport::Matcher<std::shared_ptr<NcclOp>, std::shared_ptr<NcclOp>> self_;
  bool aborted_ = false;
};

}  // namespace gradex::nccl
