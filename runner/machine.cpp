#include "runner/machine.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <string>
#include <thread>

#include <Eigen/Core>
#include <boost/version.hpp>
#include <zmq.h>

#include "baselines/mpi_job.h"
#include "common/memory_budget.h"
#include "gradex_version.h"

namespace gradex {

namespace {

std::string first_cpuinfo_field(const std::string& key) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown";
}

std::string utc_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string& command_line() {
  static std::string line;
  return line;
}

nlohmann::json library_versions() {
  int major = 0, minor = 0, patch = 0;
  zmq_version(&major, &minor, &patch);
  nlohmann::json libs = {
      {"boost", std::to_string(BOOST_VERSION / 100000) + "." + std::to_string(BOOST_VERSION / 100 % 1000) +
                    "." + std::to_string(BOOST_VERSION % 100)},
      {"zeromq", std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch)},
      {"eigen", std::to_string(EIGEN_WORLD_VERSION) + "." + std::to_string(EIGEN_MAJOR_VERSION) + "." +
                    std::to_string(EIGEN_MINOR_VERSION)}};
  if (mpi_built()) libs["mpi"] = mpi_library_version();
  return libs;
}

}  // namespace

std::string gradex_version_text() {
  return std::string("gradex ") + GRADEX_VERSION + " (commit " + GRADEX_COMMIT + ")";
}

std::string host_name() {
  utsname u{};
  return uname(&u) == 0 ? std::string(u.nodename) : std::string();
}

std::string provenance_line() {
  return "# " + gradex_version_text() + " on " + host_name() + ", pid " +
         std::to_string(::getpid()) + ", " + utc_now();
}

void set_command_line(int argc, const char* const* argv) {
  std::string& line = command_line();
  line.clear();
  for (int i = 0; i < argc; ++i) {
    if (i > 0) line += ' ';
    line += argv[i];
  }
}

nlohmann::json describe_machine() {
  nlohmann::json m;
  m["gradex"] = GRADEX_VERSION;
  m["commit"] = GRADEX_COMMIT;
  if (!command_line().empty()) m["command"] = command_line();
  m["libraries"] = library_versions();
  utsname u{};
  if (uname(&u) == 0) {
    m["hostname"] = host_name();
    m["kernel"] = std::string(u.sysname) + " " + u.release;
    m["arch"] = u.machine;
  }
  m["cpu"] = first_cpuinfo_field("model name");
  m["hardware_threads"] = std::thread::hardware_concurrency();
  if (const double memory = machine_memory_bytes(); memory > 0) m["memory_bytes"] = memory;
  m["compiler"] = std::string("g++ ") + __VERSION__;
#ifdef NDEBUG
  m["build"] = "release";
#else
  m["build"] = "debug";
#endif
  m["timestamp_utc"] = utc_now();
  return m;
}

}  // namespace gradex
