#include "common/memory_budget.h"

#include <unistd.h>

#include "common/errors.h"
#include "common/units.h"

namespace gradex {

double machine_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<double>(pages) * static_cast<double>(page);
}

void check_memory_fits(double needed, const std::string& field, const std::string& how) {
  const double have = machine_memory_bytes();
  if (have <= 0 || needed <= have) return;
  throw ConfigError(field, "needs about " + format_bytes(needed) + " of memory (" + how +
                               "); this machine has " + format_bytes(have));
}

}  // namespace gradex
