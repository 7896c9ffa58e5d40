// Replays the fuzz targets' inputs through the same entry points as the
// libFuzzer programs (fuzz/targets.h), without libFuzzer: the findings kept
// in tests/fuzz_regressions/<target>/ and the seed corpus in
// fuzz/corpus/<target>/. Each must end in success or the code's typed
// error; one test per file, so a failure names its input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <ostream>
#include <string>
#include <typeinfo>
#include <vector>

#include "fuzz/targets.h"

namespace gradex::fuzz {
namespace {

namespace fs = std::filesystem;

struct Case {
  const Target* target;
  fs::path file;
  std::string name;  // gtest-safe: letters, digits, underscores
};

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const char* root : {"tests/fuzz_regressions", "fuzz/corpus"}) {
    for (const Target& t : targets()) {
      const fs::path dir = fs::path(GRADEX_SOURCE_DIR) / root / t.name;
      if (!fs::is_directory(dir)) continue;
      std::vector<fs::path> files;
      for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path());
      std::sort(files.begin(), files.end());
      for (const auto& f : files) {
        std::string name = std::string(root == std::string("fuzz/corpus") ? "seed" : "kept") +
                           "_" + std::string(t.name) + "_" + f.filename().string();
        std::replace_if(name.begin(), name.end(),
                        [](unsigned char c) { return std::isalnum(c) == 0; }, '_');
        cases.push_back({&t, f, name});
      }
    }
  }
  return cases;
}

// Names the file when gtest prints a failing case's parameter.
void PrintTo(const Case& c, std::ostream* out) { *out << c.file; }

class Replay : public ::testing::TestWithParam<Case> {};

TEST_P(Replay, EndsInSuccessOrTypedError) {
  const Case& c = GetParam();
  std::ifstream in(c.file, std::ios::binary);
  ASSERT_TRUE(in) << c.file;
  const std::vector<std::uint8_t> bytes{std::istreambuf_iterator<char>(in),
                                        std::istreambuf_iterator<char>()};
  try {
    c.target->run(bytes);
  } catch (const std::exception& e) {
    FAIL() << c.file << ": " << typeid(e).name() << ": " << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Fuzz, Replay, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.name;
                         });

// The folders exist and hold something: a typo in a path would otherwise
// turn the replay into no test at all.
TEST(FuzzReplay, FindsInputs) {
  const auto cases = all_cases();
  for (const Target& t : targets()) {
    EXPECT_TRUE(std::any_of(cases.begin(), cases.end(),
                            [&](const Case& c) { return c.target == &t; }))
        << "no input for " << t.name;
  }
}

}  // namespace
}  // namespace gradex::fuzz
