#include "runner/output_paths.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "common/errors.h"

namespace gradex {

namespace fs = std::filesystem;

namespace {

// Creates and removes a file in `dir`: the one test of writability that
// holds for root, read-only mounts and ACLs alike (access() does not).
void probe_writable(const fs::path& dir, const fs::path& shown, const std::string& field) {
  const fs::path probe = dir / (".gradex_probe." + std::to_string(::getpid()));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    throw ConfigError(field, "cannot write in " + dir.string() + " (for " + shown.string() +
                                 "): " + std::strerror(errno));
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

fs::path as_dir(const fs::path& p) { return p.empty() ? fs::path(".") : p; }

}  // namespace

void check_output_folder(const fs::path& folder, const std::string& field) {
  // The nearest existing ancestor is where the missing folders will be made.
  fs::path existing = folder;
  std::error_code ec;
  while (!existing.empty() && !fs::exists(existing, ec) && existing.parent_path() != existing) {
    existing = existing.parent_path();
  }
  existing = as_dir(existing);
  if (!fs::is_directory(existing, ec)) {
    throw ConfigError(field, existing == folder
                                 ? folder.string() + " is a file, not a folder"
                                 : "cannot create " + folder.string() + ": " + existing.string() +
                                       " is a file, not a folder");
  }
  probe_writable(existing, folder, field);
}

void check_output_file(const fs::path& file, const std::string& field) {
  std::error_code ec;
  if (file.empty() || file.filename().empty() || fs::is_directory(file, ec)) {
    throw ConfigError(field, file.string() + " is a folder, not a file");
  }
  const fs::path dir = as_dir(file.parent_path());
  if (!fs::exists(dir, ec)) throw ConfigError(field, "folder " + dir.string() + " does not exist");
  if (!fs::is_directory(dir, ec)) {
    throw ConfigError(field, "cannot create " + file.string() + ": " + dir.string() +
                                 " is a file, not a folder");
  }
  probe_writable(dir, file, field);
}

}  // namespace gradex
