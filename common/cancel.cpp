#include "common/cancel.h"

#include <signal.h>

#include <atomic>

#include "common/errors.h"

namespace gradex {

namespace {

// Written by the signal handler: only a lock-free atomic is safe there.
std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void record_signal(int sig) {
  int none = 0;
  g_signal.compare_exchange_strong(none, sig);  // the first signal names the cancel
}

}  // namespace

void install_cancel_handlers() {
  struct sigaction sa {};
  sa.sa_handler = record_signal;
  sigemptyset(&sa.sa_mask);
  // Restart interrupted system calls: the run's own check points notice
  // the signal, no read or write should fail because of it.
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGINT, SIGTERM}) {
    if (::sigaction(sig, &sa, nullptr) != 0) throw Error("cannot install the signal handlers");
  }
}

int cancel_signal() { return g_signal.load(); }

void throw_if_cancelled() {
  if (const int sig = cancel_signal(); sig != 0) throw CancelledError(sig);
}

}  // namespace gradex
