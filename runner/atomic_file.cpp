#include "runner/atomic_file.h"

#include <unistd.h>

#include <cstdio>
#include <string>
#include <system_error>

#include "common/cancel.h"
#include "common/errors.h"

namespace gradex {

namespace {

void write_temp(const std::filesystem::path& tmp, const std::string& content) {
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) throw Error("cannot create " + tmp.string());
  const bool ok = std::fwrite(content.data(), 1, content.size(), f) == content.size() &&
                  std::fflush(f) == 0 && fsync(fileno(f)) == 0;
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed) {
    std::filesystem::remove(tmp);
    throw Error("cannot write " + tmp.string());
  }
}

}  // namespace

void write_files_atomically(
    const std::vector<std::pair<std::filesystem::path, std::string>>& files) {
  // A cancelled run writes nothing, not even the folder; one cancelled
  // while the temporaries were written leaves none of them.
  throw_if_cancelled();
  std::vector<std::filesystem::path> temps;
  try {
    for (const auto& [path, content] : files) {
      if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
      auto tmp = path;
      tmp += ".tmp." + std::to_string(getpid());
      write_temp(tmp, content);
      temps.push_back(tmp);
    }
    throw_if_cancelled();
  } catch (...) {
    for (const auto& t : temps) {
      std::error_code ec;
      std::filesystem::remove(t, ec);
    }
    throw;
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    std::filesystem::rename(temps[i], files[i].first);
  }
}

}  // namespace gradex
