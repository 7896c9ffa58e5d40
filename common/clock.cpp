#include "common/clock.h"

#include <chrono>
#include <thread>

namespace gradex {

double WallClock::now() const {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

void WallClock::sleep_until(double t) {
  using namespace std::chrono;
  const double remaining = t - now();
  if (remaining > 0) std::this_thread::sleep_for(duration<double>(remaining));
}

WallClock& wall_clock() {
  static WallClock clock;
  return clock;
}

}  // namespace gradex
