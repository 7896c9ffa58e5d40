#include "train/rank_time.h"

#include "common/errors.h"

namespace gradex {

double RankTime::begin() {
  declared_ = -1;
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
  GRADEX_ENFORCE(!is_virtual(), "a virtual clock's stretch has no waits to leave out");
  start_ += seconds;
}

double RankTime::end() {
  const double at = start_ + elapsed();
  if (is_virtual()) clock_.sleep_until(at);
  return is_virtual() ? at : clock_.now();
}

}  // namespace gradex
