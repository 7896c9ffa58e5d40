// A test that runs gradex (or mpirun) as a child process: a scratch folder
// of its own, files written into it, and shell command lines whose stdout
// and stderr are captured there.
#pragma once

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace gradex::testing {

namespace fs = std::filesystem;

inline const std::string kGradex = GRADEX_BINARY;

struct Outcome {
  int code;
  std::string out;
  std::string err;
  std::string output() const { return out + err; }
};

class ProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A parameterised test's name holds a '/' ("EndsByItsTimeout/tcp"):
    // kept, it would make a folder inside a folder that TearDown leaves.
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(name.begin(), name.end(), '/', '_');
    dir_ = fs::temp_directory_path() / ("gradex_" + std::to_string(::getpid()) + "_" + name);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return dir_ / name;
  }
  static std::string slurp(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // Runs a shell command line; its output lands in stdout() and stderr().
  int shell(const std::string& line) {
    const std::string cmd = "(" + line + ") > " + (dir_ / "stdout").string() + " 2> " +
                            (dir_ / "stderr").string() + " < /dev/null";
    const int status = std::system(cmd.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  std::string out() const { return slurp(dir_ / "stdout"); }
  std::string err() const { return slurp(dir_ / "stderr"); }
  // Runs the gradex binary with `args` (no input).
  Outcome gradex(const std::string& args) {
    const int code = shell(kGradex + " " + args);
    return {code, out(), err()};
  }

  // Unsigned-byte IDX files with a deterministic pattern, and a tiny
  // Fashion-MNIST of them (120 training and 40 test images) in dir_.
  void write_idx(const std::string& name, std::vector<std::uint32_t> dims, std::uint8_t mod) {
    std::ofstream f(dir_ / name, std::ios::binary);
    const char magic[4] = {0, 0, 8, static_cast<char>(dims.size())};
    f.write(magic, 4);
    std::size_t total = 1;
    for (std::uint32_t d : dims) {
      const char be[4] = {static_cast<char>(d >> 24), static_cast<char>(d >> 16),
                          static_cast<char>(d >> 8), static_cast<char>(d)};
      f.write(be, 4);
      total *= d;
    }
    for (std::size_t i = 0; i < total; ++i) f.put(static_cast<char>((i * 7) % mod));
  }
  void write_tiny_fashion_mnist() {
    write_idx("train-images-idx3-ubyte", {120, 28, 28}, 251);
    write_idx("train-labels-idx1-ubyte", {120}, 10);
    write_idx("t10k-images-idx3-ubyte", {40, 28, 28}, 251);
    write_idx("t10k-labels-idx1-ubyte", {40}, 10);
  }

  fs::path dir_;
};

// A loopback port that is free right now, for a rendezvous address a test
// hands to processes it starts. Taken below Linux's ephemeral range (32768
// and up), where the kernel never hands ports to the many connections the
// other tests open meanwhile, so the port is still free when the process
// binds it; random, so concurrent tests rarely pick the same one.
inline int free_port() {
  static std::mt19937 pick(std::random_device{}());
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const int port = std::uniform_int_distribution<int>(20000, 32000)(pick);
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons(static_cast<std::uint16_t>(port));
    const bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
    ::close(fd);
    if (free) return port;
  }
  return 0;
}

}  // namespace gradex::testing
