#include "ps/consistency.h"

#include <iterator>
#include <vector>

#include "common/errors.h"
#include "common/spelling.h"

namespace gradex {

Consistency parse_consistency(const std::string& text, const std::string& field) {
  for (std::size_t i = 0; i < std::size(kConsistencyNames); ++i) {
    if (text == kConsistencyNames[i]) return static_cast<Consistency>(i);
  }
  const std::vector<std::string> names(std::begin(kConsistencyNames), std::end(kConsistencyNames));
  std::string known;
  for (const std::string& name : names) {
    if (!known.empty()) known += ", ";
    known += name;
  }
  throw ConfigError(field, "unknown consistency model '" + text + "'" + did_you_mean(text, names) +
                               " (known: " + known + ")");
}

std::string consistency_name(Consistency c) {
  return kConsistencyNames[static_cast<std::size_t>(c)];
}

std::string consistency_label(Consistency c, int staleness) {
  if (c != Consistency::ssp) return consistency_name(c);
  return "ssp(s=" + std::to_string(staleness) + ")";
}

}  // namespace gradex
