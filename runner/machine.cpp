#include "runner/machine.h"

#include <sys/utsname.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <string>
#include <thread>

#include "common/memory_budget.h"

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

}  // namespace

nlohmann::json describe_machine() {
  nlohmann::json m;
  utsname u{};
  if (uname(&u) == 0) {
    m["hostname"] = u.nodename;
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
