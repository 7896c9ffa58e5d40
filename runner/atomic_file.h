// Writing files so that a reader (or a crash) never sees half of one: the
// content goes to a temporary file in the same folder, which is flushed and
// then renamed over the destination.
#pragma once

#include <filesystem>
#include <string_view>
#include <utility>
#include <vector>

namespace gradex {

// Writes every (path, content) pair, or none: all temporaries are written
// first and renamed only once all of them succeeded.
void write_files_atomically(
    const std::vector<std::pair<std::filesystem::path, std::string>>& files);

}  // namespace gradex
