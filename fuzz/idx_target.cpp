// The IDX reader (train/idx.h) as training uses it. Plain inputs are parsed
// from memory; gzip inputs go through a ".gz" file, as Debian ships the
// data set, so the decompression path is fuzzed too. An array that loads
// must hold exactly as many bytes as its dimensions say: the data set code
// indexes it by those dimensions.
#include <algorithm>

#include "fuzz/targets.h"
#include "train/idx.h"

namespace gradex::fuzz {

namespace {

void check_loaded(const IdxArray& a) {
  // A zero dimension makes the array empty however large the others are.
  if (std::find(a.dims.begin(), a.dims.end(), 0u) != a.dims.end()) {
    if (!a.data.empty()) throw Finding("an IDX array with a zero dimension holds data");
    return;
  }
  std::uint64_t total = 1;
  for (std::uint32_t d : a.dims) {
    if (total > UINT64_MAX / d) {
      throw Finding("an IDX array loaded although its dimensions overflow 64 bits");
    }
    total *= d;
  }
  if (total != a.data.size()) {
    throw Finding("an IDX array holds " + std::to_string(a.data.size()) +
                  " bytes but its dimensions say " + std::to_string(total));
  }
}

}  // namespace

void idx_input(Input bytes) {
  const bool gzip = bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b;
  try {
    if (gzip) {
      const ScratchFile file("-idx-ubyte.gz", bytes);
      // The rank the data set asks for images; labels are the plain case.
      check_loaded(read_idx_u8(file.path(), 3));
    } else {
      // The rank byte as the expected rank reaches every rank's checks; the
      // rank-mismatch refusal itself is covered by the unit tests.
      const int rank = bytes.size() >= 4 ? bytes[3] : 1;
      check_loaded(parse_idx_u8(bytes, "fuzz-idx-ubyte", rank));
    }
  } catch (const DataError&) {
    // The promised answer to a malformed data file.
  }
}

}  // namespace gradex::fuzz
