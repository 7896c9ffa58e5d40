// The simulator's fixed points. tests/sim_engine/results.csv holds the
// simulated times of tests/sim_engine/scenario.json (every scheme, nodes
// sharing one NIC, protocol costs, a straggler, up to 36 ranks) as the
// simulator produced them; every column of every row must come out the
// same, to the last printed digit. A faster event engine, a bounded
// posting window or a cheaper matcher changes how the simulator computes,
// never what it computes: if this fails, the change moved simulated time.
// Only a deliberate change of the model regenerates the record:
//   gradex simulate tests/sim_engine/scenario.json -q -o tests/sim_engine
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace gradex {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> lines_of(const fs::path& file) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(SimEngine, ReproducesTheRecordedSimulatedTimesExactly) {
  const fs::path source = fs::path(GRADEX_SOURCE_DIR) / "tests" / "sim_engine";
  const fs::path dir = fs::temp_directory_path() / ("gradex_sim_engine_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string cmd = std::string(GRADEX_BINARY) + " simulate " +
                          (source / "scenario.json").string() + " -q -o " +
                          (dir / "out").string() + " > " + (dir / "stdout").string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << std::ifstream(dir / "stdout").rdbuf();
  const std::vector<std::string> recorded = lines_of(source / "results.csv");
  const std::vector<std::string> now = lines_of(dir / "out" / "results.csv");
  // 13 schemes x 3 worker counts x 4 sizes, and the header.
  ASSERT_EQ(recorded.size(), 157u);
  ASSERT_EQ(now.size(), recorded.size());
  for (std::size_t i = 0; i < recorded.size(); ++i) {
    EXPECT_EQ(now[i], recorded[i]) << "row " << i;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gradex
