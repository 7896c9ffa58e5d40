// "Did you mean ...?" for names people type: scenario keys, scheme names.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gradex {

// The candidate closest to `typed` by edit distance (insertions, deletions,
// substitutions and swaps of neighbours), when it is close enough to be a
// slip: at most 2 edits and fewer than half the typed length. Empty
// otherwise.
std::string closest_spelling(std::string_view typed, const std::vector<std::string>& candidates);

// " (did you mean 'ring'?)" or "".
std::string did_you_mean(std::string_view typed, const std::vector<std::string>& candidates);

}  // namespace gradex
