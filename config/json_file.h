// Reading a JSON document from a file that anyone may have written: the
// file's size and the document's nesting depth are capped before anything
// large is built, and every failure is a ConfigError naming the file with
// line:column (a syntax error) or the JSON pointer of the value at fault (a
// number out of range, nesting too deep).
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace gradex {

// A scenario is a page of settings; 16 MiB leaves room for generated ones
// (long size lists, inline model tables) and refuses /dev/zero at once.
inline constexpr std::size_t kMaxJsonFileBytes = 16u << 20;
// gradex's deepest documents nest four levels; 64 leaves room for users'
// own extensions while keeping every later copy of the value shallow.
inline constexpr std::size_t kMaxJsonDepth = 64;

// Parses `text`; `origin` names it in errors (a path, or "<flag>").
nlohmann::json parse_json_text(std::string_view text, const std::string& origin);

// Reads at most kMaxJsonFileBytes of `path` and parses them.
nlohmann::json read_json_file(const std::filesystem::path& path);

}  // namespace gradex
