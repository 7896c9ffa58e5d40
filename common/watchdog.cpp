#include "common/watchdog.h"

#include <cstdio>
#include <cstdlib>
#include <utility>

namespace gradex {

namespace {

void end_process(const std::string& what) {
  std::fprintf(stderr, "gradex: %s\n", what.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

}  // namespace

Watchdog::Watchdog() : Watchdog(end_process) {}

Watchdog::Watchdog(Expired expired) : expired_(std::move(expired)), thread_([this] { watch(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::uint64_t Watchdog::arm(Clock::time_point deadline, std::string what) {
  std::lock_guard lock(mutex_);
  const std::uint64_t ticket = next_ticket_++;
  const bool sooner = armed_.empty() || deadline < armed_.begin()->first.first;
  armed_.emplace(std::make_pair(deadline, ticket), std::move(what));
  deadline_of_.emplace(ticket, deadline);
  if (sooner) cv_.notify_all();
  return ticket;
}

void Watchdog::disarm(std::uint64_t ticket) {
  std::lock_guard lock(mutex_);
  const auto it = deadline_of_.find(ticket);
  if (it == deadline_of_.end()) return;  // already expired
  armed_.erase({it->second, ticket});
  deadline_of_.erase(it);
  // The thread may sleep towards this deadline: it wakes there, finds
  // nothing due and sleeps on; no notify needed.
}

Watchdog& Watchdog::process() {
  static Watchdog watchdog;
  return watchdog;
}

void Watchdog::watch() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (armed_.empty()) {
      cv_.wait(lock);
      continue;
    }
    const auto first = armed_.begin();
    // A copy: the entry may be disarmed (erased) while this thread waits.
    const Clock::time_point due = first->first.first;
    if (Clock::now() < due) {
      cv_.wait_until(lock, due);
      continue;  // woken early, or a sooner deadline was armed: look again
    }
    std::string what = std::move(first->second);
    deadline_of_.erase(first->first.second);
    armed_.erase(first);
    lock.unlock();
    expired_(what);
    lock.lock();
  }
}

}  // namespace gradex
