#include "common/debug_log.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace gradex {

namespace {

bool read_debug_variable() {
  const char* v = std::getenv("GRADEX_DEBUG");
  if (v == nullptr || *v == '\0' || std::string(v) == "0") return false;
  if (std::string(v) == "1") return true;
  throw ConfigError("GRADEX_DEBUG", std::string("expected 0 or 1, got '") + v + "'");
}

const auto kStarted = std::chrono::steady_clock::now();

}  // namespace

bool debug_enabled() {
  static const bool enabled = read_debug_variable();
  return enabled;
}

void debug_line(const std::string& text) {
  const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - kStarted).count();
  char head[64];
  std::snprintf(head, sizeof head, "gradex debug [pid %d, %.3f s] ", static_cast<int>(::getpid()), t);
  const std::string line = head + text + "\n";
  // One write(2): lines of concurrent writers stay whole.
  [[maybe_unused]] const auto written = ::write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace gradex
