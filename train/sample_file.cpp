#include "train/sample_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/errors.h"
#include "train/idx.h"

namespace gradex {

namespace {

// An unlinked file in `dir`: O_TMPFILE where the file system has it, else
// a named one removed at once.
int unlinked_file(const std::filesystem::path& dir) {
  const int fd = open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  std::string name = (dir / "gradex-samples-XXXXXX").string();
  const int named = mkostemp(name.data(), O_CLOEXEC);
  if (named >= 0) unlink(name.c_str());
  return named;
}

}  // namespace

SampleFile::SampleFile(std::size_t record_bytes, std::string what)
    : record_bytes_(record_bytes), what_(std::move(what)) {
  GRADEX_ENFORCE(record_bytes_ > 0, "records of no bytes");
  std::error_code ec;
  const std::filesystem::path fallback = std::filesystem::temp_directory_path(ec);
  std::string tried;
  for (const std::filesystem::path& dir : {kSampleFileDir, fallback}) {
    if (dir.empty()) continue;
    fd_ = unlinked_file(dir);
    if (fd_ >= 0) return;
    tried += (tried.empty() ? "" : ", ") + dir.string() + " (" + std::strerror(errno) + ")";
  }
  throw DataError(what_ + ": cannot make a temporary file for its samples in " + tried);
}

SampleFile::~SampleFile() {
  if (fd_ >= 0) close(fd_);
}

void SampleFile::append(std::span<const std::uint8_t> bytes) {
  while (!bytes.empty()) {
    const ssize_t n = pwrite(fd_, bytes.data(), bytes.size(), static_cast<off_t>(written_));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      throw DataError(what_ + ": writing its samples to a temporary file failed: " +
                      std::strerror(n < 0 ? errno : ENOSPC));
    }
    written_ += static_cast<std::size_t>(n);
    bytes = bytes.subspan(static_cast<std::size_t>(n));
  }
}

void SampleFile::read(std::size_t first, std::size_t count, std::span<std::uint8_t> out) const {
  GRADEX_ENFORCE(first + count <= records(), "records ", first, "+", count, " of ", records());
  GRADEX_ENFORCE_EQ(out.size(), count * record_bytes_, "bytes to read into");
  std::size_t done = 0;
  const std::size_t at = first * record_bytes_;
  while (done < out.size()) {
    const ssize_t n = pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(at + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      throw DataError(what_ + ": reading samples back from its temporary file failed: " +
                      (n < 0 ? std::strerror(errno) : std::string("it ended early")));
    }
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace gradex
