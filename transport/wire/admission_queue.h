// The connections an acceptor holds while they authenticate (the mesh and
// the rendezvous store alike): each gets a hello deadline, and beyond
// kMaxPendingConnections the oldest is dropped, so idle or slow sockets can
// neither exhaust descriptors nor keep the real ranks out.
#pragma once

// Boost 1.74's asio/awaitable.hpp uses std::exchange without including it.
#include <utility>

#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <deque>
#include <memory>
#include <string>

#include "transport/wire/auth.h"

namespace gradex::wire {

// `Pending` has `bool settled` (admitted or turned away) and a
// `boost::asio::steady_timer timer` that this queue owns while it is unsettled.
template <typename Pending>
class AdmissionQueue {
 public:
  // Starts `st`'s hello deadline; `drop(st, why)` closes a connection that
  // misses it or is pushed out by newer ones (and must settle it).
  template <typename Drop>
  void watch(const std::shared_ptr<Pending>& st, std::chrono::milliseconds deadline, Drop drop) {
    while (!queue_.empty()) {  // forget the settled ones at the front
      auto front = queue_.front().lock();
      if (front && !front->settled) break;
      queue_.pop_front();
    }
    queue_.push_back(st);
    st->timer.expires_after(deadline);
    st->timer.async_wait([st, drop](boost::system::error_code ec) {
      if (!ec && !st->settled) drop(st, "did not authenticate within its hello deadline");
    });
    std::size_t open = 0;
    for (const auto& w : queue_) {
      if (auto p = w.lock(); p && !p->settled) ++open;
    }
    while (open > kMaxPendingConnections && !queue_.empty()) {
      auto oldest = queue_.front().lock();
      queue_.pop_front();
      if (oldest && !oldest->settled) {
        drop(oldest, "dropped: too many connections waiting to authenticate");
        --open;
      }
    }
  }

  // `st` is admitted or turned away: its deadline no longer matters.
  static void settle(Pending& st) {
    st.settled = true;
    st.timer.cancel();
  }

 private:
  std::deque<std::weak_ptr<Pending>> queue_;  // oldest first
};

}  // namespace gradex::wire
