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

#if defined(__SANITIZE_ADDRESS__)
#define GRADEX_FIBER_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#define GRADEX_FIBER_TSAN 1
#endif

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
  // Asks the cache for the lines a resume() reads first (the registers the
  // fiber saved, its innermost frames) and those just below them, which
  // its next calls write: in a world of thousands of fibers a suspended
  // fiber's stack is out of cache, and the scheduler knows a few events
  // ahead which fiber it will resume.
  void prefetch_stack() const;
  std::exception_ptr error() const { return error_; }

  // The fiber's first frame (internal: called with a pointer to Boost's
  // transfer_t, kept out of this header).
  static void trampoline(void* transfer);

 private:
  // Where the two sides continue (Boost's fcontext_t, a pointer), and the
  // stack. Held in the Fiber itself, first: the scheduler reads these and
  // `finished_` at every switch, and in a world of thousands of fibers a
  // second object would be a second cache miss.
  struct Context {
    void* fiber = nullptr;      // where resume() continues the fiber
    void* scheduler = nullptr;  // where yield() returns to
    void* stack = nullptr;
    std::size_t stack_bytes = 0;
#ifdef GRADEX_FIBER_ASAN
    void* fake_stack = nullptr;
    const void* scheduler_stack_bottom = nullptr;
    std::size_t scheduler_stack_size = 0;
#endif
#ifdef GRADEX_FIBER_TSAN
    void* tsan_fiber = nullptr;
    void* tsan_scheduler = nullptr;
#endif
  };

  Context context_;
  bool finished_ = false;
  std::function<void()> body_;
  std::exception_ptr error_;
};

}  // namespace gradex::sim
