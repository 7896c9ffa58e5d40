// Deadlines for blocking calls that take none: MPI's collectives, NCCL's
// communicator creation (which waits for every rank of the group, and for
// ever if one never comes). Such a call cannot be interrupted, so past its
// deadline the watchdog ends the process with a message that says what
// overran; the launcher (mpirun, gradex launch) then ends the other ranks.
// One thread watches every armed deadline, so guarding a call costs a lock
// and a notify unless it overruns.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace gradex {

class Watchdog {
 public:
  using Clock = std::chrono::steady_clock;
  // What happens when a deadline passes, with the armed text. By default:
  // "gradex: <text>" on stderr, then the process ends with status 1.
  using Expired = std::function<void(const std::string& what)>;

  Watchdog();
  explicit Watchdog(Expired expired);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Watches `deadline`; `what` says what overran and what follows. Returns
  // the ticket that disarms it.
  std::uint64_t arm(Clock::time_point deadline, std::string what);
  void disarm(std::uint64_t ticket);

  // The process's own, for calls made outside any job that keeps one.
  static Watchdog& process();

 private:
  void watch();

  Expired expired_;
  std::mutex mutex_;
  std::condition_variable cv_;
  // By deadline, then ticket: the first entry is the next to expire.
  std::map<std::pair<Clock::time_point, std::uint64_t>, std::string> armed_;
  std::map<std::uint64_t, Clock::time_point> deadline_of_;
  std::uint64_t next_ticket_ = 1;
  bool stopping_ = false;
  std::thread thread_;  // last: started once the rest exists
};

// Arms `watchdog` for `timeout` from now while it lives.
class WatchdogGuard {
 public:
  WatchdogGuard(Watchdog& watchdog, std::chrono::milliseconds timeout, std::string what)
      : watchdog_(watchdog), ticket_(watchdog.arm(Watchdog::Clock::now() + timeout, std::move(what))) {}
  ~WatchdogGuard() { watchdog_.disarm(ticket_); }
  WatchdogGuard(const WatchdogGuard&) = delete;
  WatchdogGuard& operator=(const WatchdogGuard&) = delete;

 private:
  Watchdog& watchdog_;
  std::uint64_t ticket_;
};

}  // namespace gradex
