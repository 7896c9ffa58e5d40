#include "transport/sim/fiber.h"

#include <sys/mman.h>

#include <atomic>
#include <boost/context/detail/fcontext.hpp>
#include <new>

#include "common/errors.h"

#ifdef GRADEX_FIBER_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef GRADEX_FIBER_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace gradex::sim {

namespace bctx = boost::context::detail;

// Stack tops are spread over this many cache lines (32 KiB).
constexpr std::size_t kColours = 512;

namespace {
// fcontext entry points take a transfer_t by value; this adapter forwards
// it to the Fiber (whose header does not name Boost types).
void entry(bctx::transfer_t t);
}  // namespace

Fiber::Fiber(std::function<void()> body, std::size_t stack_bytes) : body_(std::move(body)) {
  Context& c = context_;
  // Reserved, not committed: untouched stack pages cost no memory, so
  // generous stacks for a thousand ranks are cheap.
  c.stack_bytes = stack_bytes;
  c.stack = mmap(nullptr, stack_bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (c.stack == MAP_FAILED) throw std::bad_alloc();
  // Stacks grow down: fcontext wants the top. The mappings are aligned
  // alike, so every fiber's hottest frames (the top of its stack) would
  // fall in the same cache sets and evict each other at each switch; each
  // fiber's top is shifted by its own multiple of a cache line instead
  // (stack colouring), which spreads a few thousand fibers over the sets.
  static std::atomic<std::size_t> fibers_made{0};
  const std::size_t colour = (fibers_made.fetch_add(1, std::memory_order_relaxed) % kColours) * 64;
  GRADEX_ENFORCE(colour + 4096 < stack_bytes, "fiber stack of ", stack_bytes, " bytes is too small");
  c.fiber = bctx::make_fcontext(static_cast<char*>(c.stack) + stack_bytes - colour,
                                stack_bytes - colour, &entry);
#ifdef GRADEX_FIBER_TSAN
  c.tsan_fiber = __tsan_create_fiber(0);
#endif
}

Fiber::~Fiber() {
#ifdef GRADEX_FIBER_TSAN
  __tsan_destroy_fiber(context_.tsan_fiber);
#endif
#ifdef GRADEX_FIBER_ASAN
  // ASan does not know this mapping was a stack: the poison its frames
  // left (a scope that ended in a fiber suspended for good) would outlive
  // the munmap and fault whoever maps the pages next (libsodium's guarded
  // allocations in ZeroMQ's threads did, in a later test of one process).
  __asan_unpoison_memory_region(context_.stack, context_.stack_bytes);
#endif
  munmap(context_.stack, context_.stack_bytes);
}

namespace {
void entry(bctx::transfer_t t) { Fiber::trampoline(&t); }
}  // namespace

void Fiber::trampoline(void* transfer) {
  const auto& t = *static_cast<bctx::transfer_t*>(transfer);
  auto* self = static_cast<Fiber*>(t.data);
  self->context_.scheduler = t.fctx;
#ifdef GRADEX_FIBER_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &self->context_.scheduler_stack_bottom,
                                  &self->context_.scheduler_stack_size);
#endif
  try {
    self->body_();
  } catch (...) {
    self->error_ = std::current_exception();
  }
  self->finished_ = true;
  self->yield();  // never resumed again; the stack is simply unmapped
}

void Fiber::resume() {
  GRADEX_ENFORCE(!finished_, "resuming a finished fiber");
  Context& c = context_;
#ifdef GRADEX_FIBER_TSAN
  c.tsan_scheduler = __tsan_get_current_fiber();
  __tsan_switch_to_fiber(c.tsan_fiber, 0);
#endif
#ifdef GRADEX_FIBER_ASAN
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, c.stack, c.stack_bytes);
#endif
  // Returns when the fiber yields: it hands back where to continue it.
  c.fiber = bctx::jump_fcontext(c.fiber, this).fctx;
#ifdef GRADEX_FIBER_ASAN
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
}

void Fiber::prefetch_stack() const {
  // fcontext's handle is the address of the saved registers, on the stack.
  const auto* top = static_cast<const char*>(context_.fiber);
  if (top == nullptr || finished_) return;
  // Below: a resumed rank's sends run deeper than its waits did (in a
  // ring, the network's choice of protocol runs about 1 KiB below where the
  // rank yielded), and a stack line that is written cold stalls as a read
  // miss would.
  constexpr int kLinesAbove = 20;
  constexpr int kLinesBelow = 20;
  for (int i = -kLinesBelow; i < kLinesAbove; ++i) __builtin_prefetch(top + 64 * i, 1);
}

void Fiber::yield() {
  Context& c = context_;
#ifdef GRADEX_FIBER_TSAN
  __tsan_switch_to_fiber(c.tsan_scheduler, 0);
#endif
#ifdef GRADEX_FIBER_ASAN
  // A finished fiber's frames are gone for good: passing nullptr lets ASan
  // drop its fake stack.
  __sanitizer_start_switch_fiber(finished_ ? nullptr : &c.fake_stack, c.scheduler_stack_bottom,
                                 c.scheduler_stack_size);
#endif
  // Returns when the scheduler resumes this fiber again.
  c.scheduler = bctx::jump_fcontext(c.scheduler, nullptr).fctx;
#ifdef GRADEX_FIBER_ASAN
  __sanitizer_finish_switch_fiber(c.fake_stack, &c.scheduler_stack_bottom,
                                  &c.scheduler_stack_size);
#endif
}

}  // namespace gradex::sim
