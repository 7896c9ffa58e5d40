#include "common/errors.h"

namespace gradex::detail {

void throw_invariant(const char* file, int line, const std::string& what) {
  throw InvariantError(concat(file, ":", line, ": ", what));
}

}  // namespace gradex::detail
