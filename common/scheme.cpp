#include "common/scheme.h"

namespace gradex {

double Scheme::bus_factor() const {
  const double n = workers();
  return n > 1 ? 2.0 * (n - 1) / n : 0.0;
}

}  // namespace gradex
