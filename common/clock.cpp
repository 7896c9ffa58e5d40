#include "common/clock.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
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

bool sleep_until_by(double t, double deadline) {
  WallClock& clock = wall_clock();
  clock.sleep_until(std::min(t, deadline));
  return clock.now() >= t;
}

std::string shaped_delay_note(double due, double wait_start) {
  char text[96];
  std::snprintf(text, sizeof text, "; the shaped link delivers it %.3g s after the wait began",
                due - wait_start);
  return text;
}

WallClock& wall_clock() {
  static WallClock clock;
  return clock;
}

}  // namespace gradex
