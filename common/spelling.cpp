#include "common/spelling.h"

#include <algorithm>

namespace gradex {

namespace {

// Optimal string alignment distance: Levenshtein plus transpositions of
// adjacent characters ("rnig" is one edit from "ring").
std::size_t edits(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::string closest_spelling(std::string_view typed, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_edits = 3;  // more than 2 edits is not a slip
  for (const std::string& c : candidates) {
    const std::size_t e = edits(typed, c);
    if (e < best_edits && 2 * e < typed.size()) {
      best = c;
      best_edits = e;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view typed, const std::vector<std::string>& candidates) {
  const std::string best = closest_spelling(typed, candidates);
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

}  // namespace gradex
