#include "transport/matching.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "common/errors.h"

namespace gradex::transport {

std::size_t first_delivered(std::span<RequestState* const> states) {
  std::size_t pick = states.size();
  for (std::size_t i = 0; i < states.size(); ++i) {
    const auto& op = static_cast<const Op&>(*states[i]);
    if (op.finished() &&
        (pick == states.size() || op.not_before < static_cast<const Op&>(*states[pick]).not_before)) {
      pick = i;
    }
  }
  return pick;
}


namespace {

// A message may sit anywhere in a transport's buffer (libzmq places
// payloads where it has room), so it may not be aligned for the element
// type: such payloads are combined through an aligned bounce buffer, a
// cache-sized chunk at a time.
void reduce_from_any_alignment(const Tensor& dst, const void* src, ReduceOp op) {
  const std::size_t elem = dtype_size(dst.dtype);
  if (reinterpret_cast<std::uintptr_t>(src) % elem == 0) {
    return reduce_into(dst.data, src, dst.count, dst.dtype, op);
  }
  constexpr std::size_t kChunkElems = 64 * 1024;
  std::vector<std::byte> bounce(std::min(dst.count, kChunkElems) * elem);
  for (std::size_t done = 0; done < dst.count; done += kChunkElems) {
    const std::size_t n = std::min(kChunkElems, dst.count - done);
    std::memcpy(bounce.data(), static_cast<const std::byte*>(src) + done * elem, n * elem);
    reduce_into(static_cast<std::byte*>(dst.data) + done * elem, bounce.data(), n, dst.dtype, op);
  }
}

}  // namespace

std::string size_mismatch(int sender, std::size_t sent, const Op& receive) {
  return detail::concat("message size mismatch: rank ", sender, " sent ", sent, " bytes to rank ",
                        receive.owner, ", whose receive expects ", receive.bytes, " (tag ",
                        receive.tag, ")");
}

std::string deliver(const Op& op, int sender, const void* data, std::size_t bytes) {
  if (op.bytes != bytes) return size_mismatch(sender, bytes, op);
  if (bytes == 0 || data == nullptr) return {};
  if (op.kind == OpKind::recv_reduce) {
    if (op.reduce_dst.data != nullptr) reduce_from_any_alignment(op.reduce_dst, data, op.rop);
  } else if (op.dst != nullptr) {
    std::memcpy(op.dst, data, bytes);
  }
  return {};
}

bool FirstFailure::record(int failed_rank, std::string why) {
  std::lock_guard lock(mutex_);
  if (failed_.load()) return false;
  rank_ = failed_rank;
  why_ = std::move(why);
  failed_.store(true, std::memory_order_release);
  return true;
}

int FirstFailure::rank() const {
  std::lock_guard lock(mutex_);
  return rank_;
}

std::string FirstFailure::why() const {
  std::lock_guard lock(mutex_);
  return why_;
}

std::string waiting_for(const Op& op) {
  return detail::concat("waiting to ", op.kind == OpKind::send ? "send to" : "receive from",
                        " rank ", op.peer, " (tag ", op.tag, ", ", op.bytes, " bytes)");
}

std::string timeout_text(int rank, std::chrono::milliseconds timeout, const Op& op,
                         const std::string& details) {
  return detail::concat("rank ", rank, ": timed out after ", timeout.count(), " ms ",
                        waiting_for(op), details);
}

}  // namespace gradex::transport
