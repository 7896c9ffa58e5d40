// Lists whose entries each make runs of their own (a scenario's workers,
// sizes and schemes, a sweep's values): an entry that repeats an earlier
// one would run the same thing twice and write its rows twice, so it is
// refused, named by its index.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>

#include "common/errors.h"

namespace gradex {

// The indexes of the first entry equal to an earlier one and of that
// earlier one, or nullopt. Lists are short (at most a few dozen entries).
template <class List>
std::optional<std::pair<std::size_t, std::size_t>> first_repeat(const List& items) {
  for (std::size_t j = 1; j < items.size(); ++j) {
    for (std::size_t i = 0; i < j; ++i) {
      if (items[i] == items[j]) return std::make_pair(j, i);
    }
  }
  return std::nullopt;
}

// Throws ConfigError at `pointer`/j when entry j repeats entry i.
template <class List>
void refuse_repeats(const List& items, const std::string& pointer) {
  if (const auto r = first_repeat(items)) {
    throw ConfigError(pointer + "/" + std::to_string(r->first),
                      "repeats " + pointer + "/" + std::to_string(r->second) +
                          ": each entry makes runs of its own, once");
  }
}

}  // namespace gradex
