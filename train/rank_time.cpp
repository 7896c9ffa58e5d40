#include "train/rank_time.h"

#include <algorithm>

#include "common/errors.h"

namespace gradex {

double RankTime::begin() {
  declared_ = -1;
  open_ = true;
  start_ = clock_.now();
  if (is_virtual()) wall_start_ = wall_clock().now();
  return start_;
}

double RankTime::elapsed() const {
  if (is_virtual() && declared_ >= 0) return declared_;
  return is_virtual() ? wall_clock().now() - wall_start_ : clock_.now() - start_;
}

void RankTime::pass_until(double seconds) {
  GRADEX_ENFORCE(seconds >= declared_, "compute passes until ", seconds, " s, before ", declared_,
                 " s");
  declared_ = seconds;
  if (!is_virtual()) clock_.sleep_until(start_ + seconds);
}

void RankTime::exclude(double seconds) {
  if (!open_) return;
  if (is_virtual()) {
    wall_start_ += seconds;
  } else {
    start_ += seconds;
  }
}

double RankTime::stall_until(double at) {
  GRADEX_ENFORCE(is_virtual(), "a wall clock's compute waits in real time");
  if (!open_) return 0;
  const double missing = std::max(0.0, at - position());
  start_ += missing;
  return missing;
}

double RankTime::end() {
  open_ = false;
  const double at = start_ + elapsed();
  if (is_virtual()) clock_.sleep_until(at);
  return is_virtual() ? at : clock_.now();
}

}  // namespace gradex
