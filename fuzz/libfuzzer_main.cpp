// One libFuzzer program per target: GRADEX_FUZZ_TARGET names the entry
// point in fuzz/targets.cpp (fuzz/CMakeLists.txt builds one per name).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "fuzz/targets.h"

namespace {
const gradex::fuzz::Target* target = nullptr;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  target = gradex::fuzz::find_target(GRADEX_FUZZ_TARGET);
  if (target == nullptr) {
    std::fprintf(stderr, "no fuzz target named %s\n", GRADEX_FUZZ_TARGET);
    std::abort();
  }
  return 0;
}

// An exception escaping here ends in std::terminate, which libFuzzer
// reports as a crash and saves the input.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  target->run({data, size});
  return 0;
}
