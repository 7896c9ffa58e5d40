#include "fuzz/targets.h"

#include <unistd.h>

#include <array>
#include <fstream>
#include <string>
#include <system_error>

namespace gradex::fuzz {

std::span<const Target> targets() {
  static constexpr std::array<Target, 5> all = {{
      {"scenario", scenario_input},
      {"frame_header", frame_header_input},
      {"hello", hello_input},
      {"ack", ack_input},
      {"idx", idx_input},
  }};
  return all;
}

const Target* find_target(std::string_view name) {
  for (const Target& t : targets()) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

ScratchFile::ScratchFile(std::string_view suffix, Input bytes)
    // The process id keeps parallel fuzzers and test runs apart.
    : path_(std::filesystem::temp_directory_path() /
            ("gradex_fuzz_" + std::to_string(::getpid()) + std::string(suffix))) {
  std::ofstream out(path_, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write the scratch file " + path_.string());
}

ScratchFile::~ScratchFile() {
  std::error_code ignored;
  std::filesystem::remove(path_, ignored);
}

}  // namespace gradex::fuzz
