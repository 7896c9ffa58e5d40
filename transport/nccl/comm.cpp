#include "transport/nccl/comm.h"

#include <sched.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "common/clock.h"
#include "common/errors.h"
#include "gpu/check.h"
#include "gpu/kernels.h"

namespace gradex::nccl {

using gpu::cuda_check;
using gpu::nccl_check;
using transport::OpKind;

void GroupFailure::record(int rank, const std::string& why) noexcept {
  try {
    first.record(rank, why);
  } catch (...) {
  }
  aborted.store(true, std::memory_order_release);
}

namespace {

bool on_device(const void* p) {
  cudaPointerAttributes a{};
  if (p == nullptr || cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

// Stream-ordered device memory: allocated and freed in the stream's order,
// so staging costs no synchronisation.
void* stream_alloc(std::size_t bytes, cudaStream_t stream) {
  void* p = nullptr;
  cuda_check(cudaMallocAsync(&p, bytes, stream), "cudaMallocAsync of " + std::to_string(bytes) + " bytes");
  return p;
}

// Calls done() until it returns true: polling with the core yielded for
// the spin time, then in short sleeps (a GPU transfer's end raises no
// host event to sleep on); health() every 64 polls; timed_out(), which
// throws, at the deadline.
template <class Done, class Health, class TimedOut>
void poll_until(const TransportOptions& options, Done done, Health health, TimedOut timed_out) {
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + options.timeout;
  for (unsigned round = 0;; ++round) {
    if (done()) return;
    if (round % 64 == 0) health();
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) timed_out();
    if (now - start < options.spin) {
      sched_yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
}

}  // namespace

struct NcclOp : transport::Op {
  cudaEvent_t event = nullptr;  // recorded after the op's last step
  cudaStream_t stream = nullptr;
  ncclComm_t comm = nullptr;
  void* staging = nullptr;      // device memory freed when the op finishes
  bool host_side = false;       // the user's buffer is host memory
  Header* got = nullptr;        // receive: the header that arrived (pinned)
  std::size_t* in_flight = nullptr;
  bool finished_on_host = false;

  ~NcclOp() override {
    if (event) cudaEventDestroy(event);
  }
};

NcclComm::NcclComm(Links links, TransportOptions options, std::shared_ptr<GroupFailure> failure,
                   std::unique_ptr<GroupEndpoint> control)
    : links_(std::move(links)), options_(std::move(options)), failure_(std::move(failure)),
      control_(std::move(control)), sends_(static_cast<std::size_t>(links_.size)),
      receives_(static_cast<std::size_t>(links_.size)) {
  cuda_check(cudaSetDevice(links_.device), "cudaSetDevice");
  for (int p = 0; p < links_.size; ++p) {
    if (p == links_.rank) continue;
    for (Direction* d : {&sends_[static_cast<std::size_t>(p)], &receives_[static_cast<std::size_t>(p)]}) {
      cuda_check(cudaMalloc(&d->device_slots, kHeaderSlots * sizeof(Header)), "cudaMalloc (headers)");
      cuda_check(cudaMallocHost(&d->host_slots, kHeaderSlots * sizeof(Header)), "cudaMallocHost (headers)");
    }
  }
}

NcclComm::~NcclComm() {
  cudaSetDevice(links_.device);
  links_.release(aborted_);
  for (auto* dirs : {&sends_, &receives_}) {
    for (Direction& d : *dirs) {
      if (d.device_slots) cudaFree(d.device_slots);
      if (d.host_slots) cudaFreeHost(d.host_slots);
    }
  }
}

Clock& NcclComm::clock() { return wall_clock(); }

std::string NcclComm::address() const { return control_ ? control_->address() : std::string(); }

void NcclComm::connect(const std::vector<std::string>& addresses) {
  if (control_) control_->connect(addresses);
}

void NcclComm::close() {
  // Orderly: this rank's queued work finishes before the group says goodbye.
  cudaSetDevice(links_.device);
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  if (control_) control_->close();
}

void NcclComm::abort(int failed_rank, const std::string& why) noexcept {
  failure_->record(failed_rank, why);
  if (!aborted_) {
    links_.abort();
    aborted_ = true;
  }
  if (control_) control_->abort(failed_rank, why);
}

void NcclComm::set_shaping(const std::optional<Topology>& topology) {
  if (topology) {
    throw ConfigError("/network", "does not apply to \"transport\": \"nccl\": NCCL's links "
                                  "cannot be shaped");
  }
}

Header* NcclComm::slot(Direction& d, bool host) {
  const std::size_t i = d.sequence % kHeaderSlots;
  return (host ? d.host_slots : d.device_slots) + i;
}

std::shared_ptr<RequestState> NcclComm::start_send(int peer, const void* data, std::size_t bytes,
                                                   Tag tag) {
  auto op = transport::make_send<NcclOp>(rank(), peer, data, bytes, tag);
  return post(op);
}

std::shared_ptr<RequestState> NcclComm::start_recv(int peer, void* data, std::size_t bytes,
                                                   Tag tag) {
  auto op = transport::make_recv<NcclOp>(rank(), peer, data, bytes, tag);
  return post(op);
}

std::shared_ptr<RequestState> NcclComm::start_recv_reduce(int peer, Tensor dst, ReduceOp rop,
                                                          Tag tag) {
  auto op = transport::make_recv_reduce<NcclOp>(rank(), peer, dst, rop, tag);
  return post(op);
}

std::shared_ptr<NcclOp> NcclComm::post(const std::shared_ptr<NcclOp>& op) {
  if (aborted_ || failure_->aborted.load(std::memory_order_acquire)) {
    fail("posting to rank " + std::to_string(op->peer), failure_->first.rank(), false);
  }
  if (op->peer == rank()) {
    post_self(op);
    return op;
  }
  cuda_check(cudaSetDevice(links_.device), "cudaSetDevice");
  if (op->kind == OpKind::send) {
    post_send(*op);
  } else {
    post_receive(*op);
  }
  cuda_check(cudaEventCreateWithFlags(&op->event, cudaEventDisableTiming), "cudaEventCreate");
  cuda_check(cudaEventRecord(op->event, op->stream), "cudaEventRecord");
  return op;
}

// A message to this rank itself: matched on the host, copied (or reduced)
// when both sides are posted; transport::deliver does the host cases.
void NcclComm::post_self(const std::shared_ptr<NcclOp>& op) {
  const bool is_send = op->kind == OpKind::send;
  auto match = is_send ? self_.post_arrival(rank(), op->tag, op) : self_.post_receive(rank(), op->tag, op);
  if (!match) return;
  NcclOp& send = is_send ? *op : **match;
  NcclOp& recv = is_send ? **match : *op;
  std::string error;
  void* target = recv.kind == OpKind::recv ? recv.dst : recv.reduce_dst.data;
  if (send.bytes != recv.bytes) {
    error = transport::size_mismatch(rank(), send.bytes, recv);
  } else if (on_device(target) || on_device(send.src)) {
    cuda_check(cudaSetDevice(links_.device), "cudaSetDevice");
    cudaStream_t s = cudaStreamPerThread;
    if (recv.kind == OpKind::recv) {
      cuda_check(cudaMemcpyAsync(recv.dst, send.src, send.bytes, cudaMemcpyDefault, s), "cudaMemcpyAsync");
    } else {
      void* staging = stream_alloc(send.bytes, s);
      cuda_check(cudaMemcpyAsync(staging, send.src, send.bytes, cudaMemcpyDefault, s), "cudaMemcpyAsync");
      gpu::launch_reduce_into(recv.reduce_dst.data, staging, recv.reduce_dst.count,
                              recv.reduce_dst.dtype, recv.rop, s);
      cuda_check(cudaFreeAsync(staging, s), "cudaFreeAsync");
    }
    cuda_check(cudaStreamSynchronize(s), "a copy to this rank itself");
  } else {
    error = transport::deliver(recv, rank(), send.src, send.bytes);
  }
  send.finish(error);
  recv.finish(error);
}

// The direction's next header slot is free only while fewer than
// kHeaderSlots of its operations are unfinished.
void NcclComm::take_slot(Direction& d, NcclOp& op) {
  if (d.in_flight >= kHeaderSlots) {
    throw InvariantError("rank " + std::to_string(rank()) + ": more than " +
                         std::to_string(kHeaderSlots) + " operations in flight with rank " +
                         std::to_string(op.peer));
  }
  ++d.in_flight;
  op.in_flight = &d.in_flight;
}

void NcclComm::post_send(NcclOp& op) {
  const auto p = static_cast<std::size_t>(op.peer);
  Direction& d = sends_[p];
  take_slot(d, op);
  op.stream = links_.to_stream[p];
  op.comm = links_.to[p];
  Header* host = slot(d, true);
  Header* dev = slot(d, false);
  *host = Header{op.tag, op.bytes};
  cuda_check(cudaMemcpyAsync(dev, host, sizeof(Header), cudaMemcpyHostToDevice, op.stream),
             "cudaMemcpyAsync (header)");
  const void* payload = op.src;
  if (op.bytes > 0 && op.src != nullptr && !on_device(op.src)) {
    // Host memory: staged. (The copy from pageable memory is taken before
    // cudaMemcpyAsync returns.)
    op.staging = stream_alloc(op.bytes, op.stream);
    cuda_check(cudaMemcpyAsync(op.staging, op.src, op.bytes, cudaMemcpyHostToDevice, op.stream),
               "cudaMemcpyAsync (send staging)");
    payload = op.staging;
  }
  const int to = links_.pair_rank(op.peer);
  nccl_check(ncclGroupStart(), "ncclGroupStart");
  nccl_check(ncclSend(dev, sizeof(Header), ncclUint8, to, op.comm, op.stream), "ncclSend (header)");
  // A phantom payload (null) has nothing to move: the header alone keeps
  // the order.
  if (op.bytes > 0 && payload != nullptr) {
    nccl_check(ncclSend(payload, op.bytes, ncclUint8, to, op.comm, op.stream), "ncclSend");
  }
  nccl_check(ncclGroupEnd(), "ncclGroupEnd");
  if (op.staging) {
    cuda_check(cudaFreeAsync(op.staging, op.stream), "cudaFreeAsync");
    op.staging = nullptr;
  }
  ++d.sequence;
}

void NcclComm::post_receive(NcclOp& op) {
  const auto p = static_cast<std::size_t>(op.peer);
  Direction& d = receives_[p];
  take_slot(d, op);
  op.stream = links_.from_stream[p];
  op.comm = links_.from[p];
  Header* dev = slot(d, false);
  op.got = slot(d, true);
  const bool reduce = op.kind == OpKind::recv_reduce;
  void* target = reduce ? op.reduce_dst.data : op.dst;
  op.host_side = target != nullptr && !on_device(target);
  void* landing = target;
  if (op.bytes > 0 && target != nullptr && (reduce || op.host_side)) {
    op.staging = stream_alloc(op.bytes, op.stream);
    landing = op.staging;
  }
  const int from = links_.pair_rank(op.peer);
  nccl_check(ncclGroupStart(), "ncclGroupStart");
  nccl_check(ncclRecv(dev, sizeof(Header), ncclUint8, from, op.comm, op.stream), "ncclRecv (header)");
  if (op.bytes > 0 && landing != nullptr) {
    nccl_check(ncclRecv(landing, op.bytes, ncclUint8, from, op.comm, op.stream), "ncclRecv");
  }
  nccl_check(ncclGroupEnd(), "ncclGroupEnd");
  cuda_check(cudaMemcpyAsync(op.got, dev, sizeof(Header), cudaMemcpyDeviceToHost, op.stream),
             "cudaMemcpyAsync (header)");
  if (reduce && !op.host_side && op.staging) {
    gpu::launch_reduce_into(target, op.staging, op.reduce_dst.count, op.reduce_dst.dtype, op.rop,
                            op.stream);
    cuda_check(cudaFreeAsync(op.staging, op.stream), "cudaFreeAsync");
    op.staging = nullptr;
  }
  ++d.sequence;
}

// The host's part of a completed operation: the header against what the
// receive expected, and a host destination's copy or reduction.
void NcclComm::finish(NcclOp& op) {
  op.finished_on_host = true;
  if (op.in_flight) --*op.in_flight;
  std::string error;
  if (op.kind != OpKind::send && op.got != nullptr &&
      (op.got->tag != op.tag || op.got->bytes != op.bytes)) {
    error = "rank " + std::to_string(rank()) + ": the next message from rank " +
            std::to_string(op.peer) + " has tag " + std::to_string(op.got->tag) + " and " +
            std::to_string(op.got->bytes) + " bytes where the receive expects tag " +
            std::to_string(op.tag) + " and " + std::to_string(op.bytes) +
            " bytes (the nccl transport delivers each peer's messages in the order they were "
            "sent)";
  } else if (op.host_side && op.staging) {
    if (op.kind == OpKind::recv) {
      cuda_check(cudaMemcpy(op.dst, op.staging, op.bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
    } else {
      std::vector<std::byte> incoming(op.bytes);
      cuda_check(cudaMemcpy(incoming.data(), op.staging, op.bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
      reduce_into(op.reduce_dst.data, incoming.data(), op.reduce_dst.count, op.reduce_dst.dtype, op.rop);
    }
  }
  if (op.staging) {
    cuda_check(cudaFreeAsync(op.staging, op.stream), "cudaFreeAsync");
    op.staging = nullptr;
  }
  op.finish(error);
  if (!error.empty()) {
    abort(rank(), error);
    throw InvariantError(error);
  }
}

bool NcclComm::poll_done(NcclOp& op) {
  if (op.finished_on_host || (op.event == nullptr && op.finished())) return true;
  if (op.event == nullptr) return false;  // a self message not matched yet
  const cudaError_t code = cudaEventQuery(op.event);
  if (code == cudaErrorNotReady) return false;
  if (code != cudaSuccess) {
    cudaGetLastError();
    fail(transport::waiting_for(op) + ": " + cudaGetErrorString(code), op.peer, false);
  }
  finish(op);
  return true;
}

// A failed peer (in this process) or an NCCL error on `comm` ends the wait.
void NcclComm::check_health(const NcclOp* op, ncclComm_t comm) {
  if (failure_->aborted.load(std::memory_order_acquire) && !aborted_) {
    const int who = failure_->first.rank();
    links_.abort();
    aborted_ = true;
    throw PeerLostError(who, "rank " + std::to_string(rank()) + ": peer rank " +
                                 std::to_string(who) + " failed: " + failure_->first.why());
  }
  ncclResult_t async = ncclSuccess;
  if (comm != nullptr && ncclCommGetAsyncError(comm, &async) == ncclSuccess &&
      async != ncclSuccess && async != ncclInProgress) {
    const std::string what = op ? transport::waiting_for(*op) : std::string("the collective");
    fail(what + ": NCCL reports " + ncclGetErrorString(async), op ? op->peer : -1, false);
  }
}

void NcclComm::fail(const std::string& what, int peer, bool timed_out) {
  const std::string text = "rank " + std::to_string(rank()) + ": " + what;
  abort(rank(), text);
  if (timed_out) throw TimeoutError(text);
  if (peer >= 0 && peer != rank()) throw PeerLostError(peer, text);
  throw InvariantError(text);
}

void NcclComm::wait_state(RequestState& state) {
  RequestState* const one[] = {&state};
  wait_any_state(one);
}

std::size_t NcclComm::wait_any_state(std::span<RequestState* const> states) {
  auto& first = static_cast<NcclOp&>(*states[0]);
  std::size_t done = states.size();
  poll_until(
      options_,
      [&] {
        for (std::size_t i = 0; i < states.size(); ++i) {
          if (poll_done(static_cast<NcclOp&>(*states[i]))) {
            done = i;
            return true;
          }
        }
        return false;
      },
      [&] { check_health(&first, first.comm); },
      [&] {
        fail("timed out after " + std::to_string(options_.timeout.count()) + " ms " +
                 transport::waiting_for(first),
             first.peer, true);
      });
  const auto& op = static_cast<NcclOp&>(*states[done]);
  if (!op.error.empty()) throw InvariantError(op.error);
  return done;
}

void NcclComm::wait_collective(const std::string& what) {
  cuda_check(cudaSetDevice(links_.device), "cudaSetDevice");
  cudaEvent_t event = nullptr;
  cuda_check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate");
  const std::unique_ptr<CUevent_st, void (*)(cudaEvent_t)> owned(
      event, [](cudaEvent_t e) { cudaEventDestroy(e); });
  cuda_check(cudaEventRecord(event, links_.collective_stream), "cudaEventRecord");
  poll_until(
      options_,
      [&] {
        const cudaError_t code = cudaEventQuery(event);
        if (code == cudaErrorNotReady) return false;
        if (code != cudaSuccess) {
          cudaGetLastError();
          fail(what + ": " + cudaGetErrorString(code), -1, false);
        }
        return true;
      },
      [&] { check_health(nullptr, links_.group); },
      [&] {
        fail("timed out after " + std::to_string(options_.timeout.count()) + " ms waiting for " +
                 what,
             -1, true);
      });
}

}  // namespace gradex::nccl
