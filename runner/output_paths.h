// Checking where a run will write before it starts: a results folder or a
// trace file that cannot be written would otherwise be found only after the
// whole run, with its results lost. Each check throws ConfigError naming
// `field` (the scenario's JSON pointer or the flag that gave the path).
#pragma once

#include <filesystem>
#include <string>

namespace gradex {

// `folder` is, or can be created as, a folder this process can write in:
// it and each existing ancestor are folders, not files, and the nearest
// existing one takes a probe file.
void check_output_folder(const std::filesystem::path& folder, const std::string& field);

// `file` can be created or replaced: its folder exists (it is not created
// for a single file) and takes a probe file, and `file` is not a folder.
void check_output_file(const std::filesystem::path& file, const std::string& field);

}  // namespace gradex
