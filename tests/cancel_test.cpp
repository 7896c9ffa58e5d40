// Cancelling runs with signals: `gradex launch` passes INT and TERM on to
// its ranks, waits for them and exits 128 + signal; no rank outlives its
// launcher, even one killed by SIGKILL; `gradex run`, `gradex train` and
// `gradex simulate` stop promptly on INT and TERM; a cancelled run writes
// no result files and no trace.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "process_fixture.h"

namespace gradex {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;
using testing::kGradex;

class Cancel : public testing::ProcessTest {
 protected:
  void TearDown() override {
    // Whatever a failed test left running is killed, so nothing outlives it.
    if (started_ > 0) {
      for (pid_t p : leftovers()) ::kill(p, SIGKILL);
      ::kill(started_, SIGKILL);
      wait_exit(started_, 5s);  // reaped, unless the test already did
    }
    ProcessTest::TearDown();
  }

  // Starts gradex with `args`, stdout and stderr into dir_.
  pid_t start(const std::vector<std::string>& args) {
    std::vector<std::string> all = {kGradex};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    const std::string o = (dir_ / "stdout").string(), e = (dir_ / "stderr").string();
    const pid_t pid = ::fork();
    if (pid == 0) {
      const int fo = ::open(o.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int fe = ::open(e.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fo < 0 || fe < 0 || ::dup2(fo, 1) < 0 || ::dup2(fe, 2) < 0) ::_exit(126);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    started_ = pid;
    return pid;
  }

  // Waits (bounded) until the process's stdout shows `text`.
  bool wait_for_output(const std::string& text, std::chrono::milliseconds limit) {
    const auto end = clock_type::now() + limit;
    while (clock_type::now() < end) {
      if (slurp(dir_ / "stdout").find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }

  // Waits (bounded) until `pid` runs at least `threads` threads: its ranks
  // (threads of an in-process run) have started.
  static bool wait_for_threads(pid_t pid, int threads, std::chrono::milliseconds limit) {
    const auto end = clock_type::now() + limit;
    while (clock_type::now() < end) {
      const std::string status = slurp("/proc/" + std::to_string(pid) + "/status");
      const auto at = status.find("Threads:");
      if (at != std::string::npos && std::atoi(status.c_str() + at + 8) >= threads) return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }

  // The wait status of `pid` once it ends, nullopt if it runs past `limit`.
  static std::optional<int> wait_exit(pid_t pid, std::chrono::milliseconds limit) {
    const auto end = clock_type::now() + limit;
    int status = 0;
    while (clock_type::now() < end) {
      const pid_t r = ::waitpid(pid, &status, WNOHANG);
      if (r == pid) return status;
      if (r < 0) return std::nullopt;  // already reaped
      std::this_thread::sleep_for(10ms);
    }
    return std::nullopt;
  }

  // Live processes started by the test's gradex: children of it, or any
  // process whose command line names this test's folder (an orphaned rank
  // is re-parented, but its command line still carries the scenario path).
  std::vector<pid_t> leftovers() const {
    std::vector<pid_t> found;
    for (const auto& entry : fs::directory_iterator("/proc")) {
      const std::string name = entry.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      const pid_t pid = std::stoi(name);
      if (pid == ::getpid() || pid == started_) continue;
      std::string stat = slurp(entry.path() / "stat");
      const auto paren = stat.rfind(')');
      if (paren == std::string::npos) continue;  // gone meanwhile
      char state = 0;
      int ppid = 0;
      if (std::sscanf(stat.c_str() + paren + 1, " %c %d", &state, &ppid) != 2) continue;
      if (state == 'Z') continue;  // dead, waiting to be reaped
      std::string cmdline = slurp(entry.path() / "cmdline");
      for (char& c : cmdline) c = c == '\0' ? ' ' : c;
      if (ppid == started_ || cmdline.find(dir_.string()) != std::string::npos) {
        found.push_back(pid);
      }
    }
    return found;
  }

  // Polls the process table until nothing is left (bounded).
  std::vector<pid_t> leftovers_after(std::chrono::milliseconds limit) const {
    const auto end = clock_type::now() + limit;
    std::vector<pid_t> left = leftovers();
    while (!left.empty() && clock_type::now() < end) {
      std::this_thread::sleep_for(20ms);
      left = leftovers();
    }
    return left;
  }

  fs::path long_scenario(const std::string& transport) {
    // Long enough to be cancelled mid-run; bounded by the iteration count.
    return write("long.json", R"({"name": "long", "transport": ")" + transport +
                                  R"(", "workers": 4, "sizes": ["1MiB"], "iters": 100000,
        "warmup_iters": 0, "schemes": ["ring"], "timeout_ms": 8000,
        "output": ")" + (dir_ / "out").string() + R"("})");
  }

  void expect_no_results() {
    EXPECT_FALSE(fs::exists(dir_ / "out" / "results.csv"));
    EXPECT_FALSE(fs::exists(dir_ / "out" / "results.json"));
  }

  void cancel_launch(int sig);
  void expect_cancelled_within(pid_t pid, int sig, std::chrono::milliseconds limit);
  void cancel_in_process(int sig, const std::vector<std::string>& args, int ranks);

  pid_t started_ = -1;
};

void Cancel::cancel_launch(int sig) {
  const fs::path sc = long_scenario("tcp");
  const pid_t launcher = start({"launch", "-n", "4", sc.string()});
  ASSERT_TRUE(wait_for_output("# launched", 20s)) << slurp(dir_ / "stderr");
  std::this_thread::sleep_for(300ms);  // the run is under way
  const auto t0 = clock_type::now();
  ::kill(launcher, sig);
  const std::optional<int> status = wait_exit(launcher, 15s);
  ASSERT_TRUE(status) << "the launcher did not end";
  std::cerr << "launcher ended " << std::chrono::duration<double>(clock_type::now() - t0).count()
            << " s after the signal\n";
  if (sig == SIGKILL) {
    EXPECT_TRUE(WIFSIGNALED(*status) && WTERMSIG(*status) == SIGKILL);
  } else {
    ASSERT_TRUE(WIFEXITED(*status)) << "killed by signal " << WTERMSIG(*status);
    EXPECT_EQ(WEXITSTATUS(*status), 128 + sig) << slurp(dir_ / "stderr");
  }
  const std::vector<pid_t> left = leftovers_after(5s);
  EXPECT_TRUE(left.empty()) << left.size() << " processes of the run are left, e.g. pid "
                            << left.front();
  expect_no_results();
}

TEST_F(Cancel, SigintToTheLauncherStopsEveryRankAndWritesNothing) { cancel_launch(SIGINT); }
TEST_F(Cancel, SigtermToTheLauncherStopsEveryRankAndWritesNothing) { cancel_launch(SIGTERM); }
TEST_F(Cancel, SigkillToTheLauncherTakesEveryRankWithIt) { cancel_launch(SIGKILL); }

// A rank signalled on its own (by a batch system, say) stops, aborts its
// group and exits 128 + signal; rank 0 then writes nothing.
TEST_F(Cancel, ASignalledRankAbortsItsGroupAndRankZeroWritesNothing) {
  const fs::path sc = long_scenario("tcp");
  const pid_t launcher = start({"launch", "-n", "4", sc.string()});
  ASSERT_TRUE(wait_for_output("# launched", 20s)) << slurp(dir_ / "stderr");
  std::this_thread::sleep_for(300ms);
  std::ifstream in("/proc/" + std::to_string(launcher) + "/task/" + std::to_string(launcher) +
                   "/children");
  pid_t rank0 = -1;
  ASSERT_TRUE(in >> rank0);  // the launcher starts rank 0 first
  ::kill(rank0, SIGTERM);
  const std::optional<int> status = wait_exit(launcher, 15s);
  ASSERT_TRUE(status) << "the launcher did not end";
  ASSERT_TRUE(WIFEXITED(*status));
  EXPECT_NE(WEXITSTATUS(*status), 0);
  const std::string err = slurp(dir_ / "stderr");
  EXPECT_NE(err.find("rank 0 (pid " + std::to_string(rank0) + ") exited with status 143"),
            std::string::npos)
      << err;
  EXPECT_TRUE(leftovers_after(5s).empty());
  expect_no_results();
}

// Signals `pid`, a run under way, with `sig`: it must exit 128 + sig within
// `limit`, saying why, and write nothing.
void Cancel::expect_cancelled_within(pid_t pid, int sig, std::chrono::milliseconds limit) {
  const auto t0 = clock_type::now();
  ::kill(pid, sig);
  const std::optional<int> status = wait_exit(pid, 10s);
  ASSERT_TRUE(status) << "the run did not stop";
  const auto took = clock_type::now() - t0;
  std::cerr << "run stopped " << std::chrono::duration<double>(took).count()
            << " s after the signal\n";
  ASSERT_TRUE(WIFEXITED(*status)) << "killed by signal " << WTERMSIG(*status);
  EXPECT_EQ(WEXITSTATUS(*status), 128 + sig) << slurp(dir_ / "stderr");
  EXPECT_NE(slurp(dir_ / "stderr").find("cancelled by signal " + std::to_string(sig)),
            std::string::npos)
      << slurp(dir_ / "stderr");
  EXPECT_LT(took, limit);
  expect_no_results();
}

// The run is under way once its ranks, threads of the process, have started.
void Cancel::cancel_in_process(int sig, const std::vector<std::string>& args, int ranks) {
  const pid_t pid = start(args);
  ASSERT_TRUE(wait_for_threads(pid, 1 + ranks, 20s)) << slurp(dir_ / "stderr");
  std::this_thread::sleep_for(300ms);
  // One iteration or training step, not the wait timeout (8 s).
  expect_cancelled_within(pid, sig, 5s);
}

TEST_F(Cancel, SigintStopsARunPromptlyAndWritesNothing) {
  cancel_in_process(SIGINT, {"run", long_scenario("inproc").string()}, 4);
}

TEST_F(Cancel, SigtermStopsARunPromptlyAndWritesNothing) {
  cancel_in_process(SIGTERM, {"run", long_scenario("inproc").string()}, 4);
}

// One simulated iteration of a large world runs for many seconds (a
// 512-rank ring of 1 GiB in 32 KiB segments: 33 million messages), far
// beyond the runner's checks between iterations: the simulator itself
// stops on the signal.
TEST_F(Cancel, SigtermStopsASimulatedIterationMidwayAndWritesNothing) {
  const pid_t pid = start({"simulate", "-s", "ring", "-n", "512", "-b", "1GiB", "--link",
                           "ib_hdr_200g", "--segment", "32KiB", "-o", (dir_ / "out").string()});
  // Under way: a second is past its set-up, a small part of its messages.
  // Its iteration takes a minute on a 2-core Xeon; stopped, it ends within
  // 0.2 s there, 1.7 s under ThreadSanitizer.
  std::this_thread::sleep_for(1500ms);
  expect_cancelled_within(pid, SIGTERM, 5s);
}

TEST_F(Cancel, SigtermStopsTrainingAndWritesNoResultsNorTrace) {
  write_tiny_fashion_mnist();
  cancel_in_process(SIGTERM,
                    {"train", "--data-dir", dir_.string(), "-w", "2", "-b", "10", "-e", "60000",
                     "--layers", "16", "-o", (dir_ / "out").string(), "--trace",
                     (dir_ / "trace.json").string()},
                    2);
  EXPECT_FALSE(fs::exists(dir_ / "trace.json"));
}

}  // namespace
}  // namespace gradex
