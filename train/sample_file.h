// A data set's samples on disk, read per batch: fixed-size records in an
// unlinked temporary file, as a data loader reads its shards from storage.
// Held in memory, Fashion-MNIST's images took 52 MiB of every worker
// process (all of it each, though a worker visits a quarter of the set an
// epoch at 4 workers); on disk they sit once in the kernel's page cache,
// shared and evictable, and a process holds only the batch in hand. The
// file has no name, so it goes with the last handle on it, however the
// process ends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>

namespace gradex {

class SampleFile {
 public:
  // An empty file of records of `record_bytes` each, in kSampleFileDir
  // (or, where no file can be made there, the system's temporary folder);
  // `what` names it in errors. Throws DataError when neither takes one.
  SampleFile(std::size_t record_bytes, std::string what);
  ~SampleFile();
  SampleFile(const SampleFile&) = delete;
  SampleFile& operator=(const SampleFile&) = delete;

  // Appends bytes (records need not arrive whole). Throws DataError on a
  // failed write (a full disk), naming the data.
  void append(std::span<const std::uint8_t> bytes);
  std::size_t record_bytes() const { return record_bytes_; }
  // Whole records written so far.
  std::size_t records() const { return written_ / record_bytes_; }
  // Records [first, first + count) into `out` (count * record_bytes()).
  // Safe from any number of threads at once.
  void read(std::size_t first, std::size_t count, std::span<std::uint8_t> out) const;

 private:
  int fd_ = -1;
  std::size_t record_bytes_ = 0;
  std::size_t written_ = 0;
  std::string what_;
};

// On disk on every Linux (the File System Hierarchy Standard's temporary
// files that survive reboots): unlike /tmp, never a RAM-backed tmpfs, where
// the samples would still take memory, only no process's.
inline const std::filesystem::path kSampleFileDir = "/var/tmp";

}  // namespace gradex
