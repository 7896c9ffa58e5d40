// Entry points of the fuzz targets, one per input format an outsider can
// hand gradex: a scenario file, the TCP wire records, an IDX data file.
//
// Each entry takes one input and returns normally when the code under test
// accepted it or refused it with its documented typed error. It throws
// Finding when the code accepted the input but broke its own promise (an
// IDX array whose dimensions do not match its data, a header that does not
// survive re-encoding); any other exception, a crash or a sanitizer report
// is a finding as well. The libFuzzer programs (fuzz/libfuzzer_main.cpp)
// and the replay test of kept findings (tests/fuzz_replay_test.cpp) call
// the same functions, so a kept input means the same thing in both.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <stdexcept>
#include <string_view>

namespace gradex::fuzz {

using Input = std::span<const std::uint8_t>;

class Finding : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// `gradex validate`: load, check and plan a scenario (never run it).
void scenario_input(Input bytes);
// FrameHeader::decode; bytes past the header give the length limit.
void frame_header_input(Input bytes);
// Hello::decode.
void hello_input(Input bytes);
// Ack::decode.
void ack_input(Input bytes);
// The IDX reader, from memory or (gzip inputs) through a .gz file.
void idx_input(Input bytes);

struct Target {
  std::string_view name;  // also the folder of its corpus and kept findings
  void (*run)(Input);
};
std::span<const Target> targets();
// Null when no target has that name.
const Target* find_target(std::string_view name);

// A file of this process's own in the temporary folder, holding `bytes`,
// for the entry points whose code under test reads a path; removed again
// when it goes out of scope, so fuzzing leaves no files behind.
class ScratchFile {
 public:
  ScratchFile(std::string_view suffix, Input bytes);
  ~ScratchFile();
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace gradex::fuzz
