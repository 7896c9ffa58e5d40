// User-level fibers for simulated ranks: each rank of a SimWorld runs on
// its own small stack and hands control back to the scheduler whenever it
// blocks, so a thousand ranks cost a thousand stacks, not a thousand OS
// threads. Built on Boost.Context's fcontext (a stack switch is a few
// register moves, no system call: ucontext's swapcontext costs a signal-mask
// syscall per switch, which dominated 1,024-rank runs), with the
// AddressSanitizer and ThreadSanitizer fiber annotations so the ASan and
// TSan CI presets understand the stack switches.
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <memory>

namespace gradex::sim {

class Fiber {
 public:
  // `body` runs on a fresh stack of `stack_bytes` the first time the fiber
  // is resumed. An exception escaping `body` is kept in error().
  Fiber(std::function<void()> body, std::size_t stack_bytes);
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  // From the scheduler: runs the fiber until it yields or finishes.
  void resume();
  // From inside the fiber: returns control to the scheduler that resumed it.
  void yield();

  bool finished() const { return finished_; }
  std::exception_ptr error() const { return error_; }

  struct Context;
  // The fiber's first frame (internal: called with a pointer to Boost's
  // transfer_t, kept out of this header).
  static void trampoline(void* transfer);

 private:

  std::function<void()> body_;
  std::unique_ptr<Context> context_;
  bool finished_ = false;
  std::exception_ptr error_;
};

}  // namespace gradex::sim
