// Output paths are checked before a run starts: a results folder or a trace
// file that cannot be written is bad input (exit 2, the field or flag
// named) and nothing is written, instead of a failure found after the whole
// run. `gradex validate` refuses the same paths.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/errors.h"
#include "process_fixture.h"
#include "runner/output_paths.h"

namespace gradex {
namespace {

namespace fs = std::filesystem;
using testing::Outcome;

class OutputPaths : public testing::ProcessTest {
 protected:
  // A short all-reduce run writing into `output` (a JSON string value).
  fs::path allreduce(const std::string& output, const std::string& transport = "inproc") {
    return write("a.json", R"({"name": "a", "transport": ")" + transport +
                               R"(", "workers": 2, "sizes": [4096],
        "iters": 2, "warmup_iters": 0, "schemes": ["ring"], "timeout_ms": 10000,
        "output": ")" + output + R"("})");
  }
  // A short training run on the tiny data set, with a trace.
  fs::path training(const std::string& trace) {
    write_tiny_fashion_mnist();
    return write("t.json", R"({"name": "t", "workers": 2, "schemes": ["ring"],
        "timeout_ms": 10000, "output": ")" + (dir_ / "out").string() + R"(",
        "workload": {"kind": "train", "layers": "8", "batch": 10, "epochs": 1,
                     "data_dir": ")" + dir_.string() + R"(", "trace": ")" + trace + R"("}})");
  }
  void expect_refused(const Outcome& o, const std::string& field) {
    EXPECT_EQ(o.code, 2) << o.output();
    // A scenario field is named with its file: "x.json#/output".
    const std::string named = field[0] == '/' ? ".json#" + field : "gradex: error: " + field;
    EXPECT_NE(o.err.find(named + ": "), std::string::npos) << o.err;
    EXPECT_FALSE(fs::exists(dir_ / "out" / "results.csv"));
    EXPECT_FALSE(fs::exists(dir_ / "out" / "results.json"));
  }
};

TEST_F(OutputPaths, ATraceInAMissingFolderIsRefusedBeforeTheRun) {
  const fs::path sc = training((dir_ / "missing" / "trace.json").string());
  const Outcome o = gradex("run " + sc.string());
  expect_refused(o, "/workload/trace");
  EXPECT_EQ(o.out.find("epoch"), std::string::npos) << "the run should not have started";
  expect_refused(gradex("validate " + sc.string()), "/workload/trace");
}

TEST_F(OutputPaths, AnOutputFlagNamingAFileIsRefused) {
  const fs::path file = write("taken", "a file, not a folder");
  const fs::path sc = allreduce((dir_ / "out").string());
  for (const std::string cmd : {"run", "simulate", "launch -n 2 --transport tcp"}) {
    SCOPED_TRACE(cmd);
    const Outcome o = gradex(cmd + " " + sc.string() + " -o " + file.string());
    expect_refused(o, "-o");
    EXPECT_EQ(o.out.find("#wrong"), std::string::npos) << "the run should not have started";
  }
  EXPECT_EQ(slurp(file), "a file, not a folder");
}

TEST_F(OutputPaths, AnOutputFolderUnderAFileIsRefused) {
  write("taken", "x");
  const fs::path sc = allreduce((dir_ / "taken" / "out").string());
  expect_refused(gradex("run " + sc.string()), "/output");
  expect_refused(gradex("validate " + sc.string()), "/output");
}

TEST_F(OutputPaths, TrainChecksItsOutputAndTraceFlags) {
  write_tiny_fashion_mnist();
  const std::string base = "train --data-dir " + dir_.string() + " -w 2 -b 10 -e 1 --layers 8 ";
  expect_refused(gradex(base + "-o " + (dir_ / "out").string() + " --trace " +
                        (dir_ / "missing" / "t.json").string()),
                 "--trace");
  expect_refused(gradex(base + "-o " + write("taken", "x").string()), "-o");
}

TEST(OutputPathChecks, NameTheFieldAndLeaveNothingBehind) {
  const fs::path dir = fs::temp_directory_path() / ("gradex_paths_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "file") << "x";
  // A folder that does not exist yet is fine: it is made when the run ends.
  EXPECT_NO_THROW(check_output_folder(dir / "new" / "deeper", "/output"));
  EXPECT_FALSE(fs::exists(dir / "new"));
  EXPECT_NO_THROW(check_output_file(dir / "trace.json", "--trace"));
  auto field = [](auto check) {
    try {
      check();
    } catch (const ConfigError& e) {
      return e.field();
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(field([&] { check_output_folder(dir / "file", "-o"); }), "-o");
  EXPECT_EQ(field([&] { check_output_folder(dir / "file" / "sub", "/output"); }), "/output");
  EXPECT_EQ(field([&] { check_output_file(dir / "missing" / "t.json", "--trace"); }), "--trace");
  EXPECT_EQ(field([&] { check_output_file(dir / "file" / "t.json", "--trace"); }), "--trace");
  EXPECT_EQ(field([&] { check_output_file(dir, "/workload/trace"); }), "/workload/trace");
  // The probes are gone: only the file the test made is left.
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 1);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gradex
