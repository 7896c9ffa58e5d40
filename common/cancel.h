// Cancelling a run with SIGINT or SIGTERM. The handler only records the
// signal; the run notices it at its next check point (between iterations,
// between training steps, every few thousand events of the simulator,
// before any file is written) and unwinds with a
// CancelledError, so that a cancelled run ends promptly, aborts its group
// and writes nothing. A rank stuck in a blocking wait leaves it when a peer
// aborts, or by the wait's own timeout.
#pragma once

namespace gradex {

// Installs the INT and TERM handlers (idempotent). Call before the run.
void install_cancel_handlers();

// The signal that cancelled the run, 0 while none has arrived.
int cancel_signal();

// Throws CancelledError once a signal has arrived.
void throw_if_cancelled();

}  // namespace gradex
