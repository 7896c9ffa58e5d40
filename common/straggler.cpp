#include "common/straggler.h"

namespace gradex {

void straggle(Comm& comm, int workers, double ms) {
  if (ms <= 0 || comm.rank() != workers - 1) return;
  Clock& clock = comm.clock();
  clock.sleep_until(clock.now() + ms / 1e3);
}

}  // namespace gradex
