#include "train/rank_time.h"

namespace gradex {

double RankTime::begin() {
  start_ = clock_.now();
  if (is_virtual()) wall_start_ = wall_clock().now();
  return start_;
}

double RankTime::elapsed() const {
  return is_virtual() ? wall_clock().now() - wall_start_ : clock_.now() - start_;
}

double RankTime::end() {
  const double at = start_ + elapsed();
  if (is_virtual()) clock_.sleep_until(at);
  return is_virtual() ? at : clock_.now();
}

}  // namespace gradex
