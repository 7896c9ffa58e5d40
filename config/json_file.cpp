#include "config/json_file.h"

#include <cstdio>
#include <fstream>
#include <optional>
#include <vector>

#include "common/errors.h"
#include "common/units.h"

namespace gradex {

namespace {

using json = nlohmann::json;

// The parser quotes the bytes it choked on; a terminal should not get raw
// control or invalid UTF-8 bytes from them.
std::string printable(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return out;
}

// Builds the document event by event (nlohmann's SAX interface), keeping the
// path from the root to the value being read. The depth cap is enforced as
// a container opens, so a hostile file of 150,000 '[' never becomes a value
// whose copy or destruction recurses that deep; the path names the value a
// number overflow or a syntax error was found in.
class BoundedBuilder {
 public:
  json root;
  std::string failure;  // set when parsing stopped; what went wrong
  std::string pointer;  // where it went wrong
  std::optional<std::size_t> offset;  // byte offset of a syntax error

  bool null() { return value(json(nullptr)); }
  bool boolean(bool v) { return value(json(v)); }
  bool number_integer(json::number_integer_t v) { return value(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return value(json(v)); }
  bool number_float(json::number_float_t v, const json::string_t&) { return value(json(v)); }
  bool string(json::string_t& v) { return value(json(std::move(v))); }
  bool binary(json::binary_t& v) { return value(json(std::move(v))); }

  bool start_object(std::size_t) { return open(json::object()); }
  bool start_array(std::size_t) { return open(json::array()); }
  bool key(json::string_t& k) {
    stack_.back().key = k;
    return true;
  }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool parse_error(std::size_t position, const std::string& last_token,
                   const nlohmann::detail::exception& e) {
    pointer = current_pointer();
    if (e.id == 406) {  // out_of_range: a number beyond double's range
      failure = "number '" + last_token + "' is out of range";
    } else {
      // nlohmann's text after its "[json.exception...] parse error at ...: ".
      const std::string what = e.what();
      const auto colon = what.find(": ");
      failure = "invalid JSON: " + printable(colon == std::string::npos ? what : what.substr(colon + 2));
      offset = position;
    }
    return false;
  }

 private:
  struct Level {
    json* container;
    std::string key;  // objects: the key being read
  };
  std::vector<Level> stack_;

  // Where the next value goes.
  json* slot() {
    if (stack_.empty()) return &root;
    Level& top = stack_.back();
    if (top.container->is_array()) {
      top.container->push_back(nullptr);
      return &top.container->back();
    }
    return &(*top.container)[top.key];
  }
  bool value(json v) {
    *slot() = std::move(v);
    return true;
  }
  bool open(json empty) {
    if (stack_.size() >= kMaxJsonDepth) {
      pointer = current_pointer();
      failure = "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels";
      return false;
    }
    json* where = slot();
    *where = std::move(empty);
    stack_.push_back({where, {}});
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }
  // The JSON pointer (RFC 6901) of the value being read: in an open array
  // that is its last element, in the innermost one the element to come.
  std::string current_pointer() const {
    std::string p;
    for (std::size_t i = 0; i < stack_.size(); ++i) {
      const Level& l = stack_[i];
      p += '/';
      if (l.container->is_array()) {
        const bool innermost = i + 1 == stack_.size();
        p += std::to_string(l.container->size() - (innermost ? 0 : 1));
        continue;
      }
      for (char c : l.key) p += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
    }
    return p;
  }
};

std::string line_and_column(std::string_view text, std::size_t offset) {
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i + 1 < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return std::to_string(line) + ":" + std::to_string(col);
}

}  // namespace

json parse_json_text(std::string_view text, const std::string& origin) {
  BoundedBuilder builder;
  if (json::sax_parse(text.begin(), text.end(), &builder)) return std::move(builder.root);
  if (builder.offset) {
    throw ConfigError(origin + ":" + line_and_column(text, *builder.offset), builder.failure);
  }
  throw ConfigError(origin + "#" + (builder.pointer.empty() ? "/" : builder.pointer), builder.failure);
}

json read_json_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw ConfigError(path.string(), "is a folder, not a JSON file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path.string(), "cannot open the file");
  // Read one byte past the cap: a file (or a device such as /dev/zero)
  // that has it is refused without reading the rest.
  std::string text(kMaxJsonFileBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) throw ConfigError(path.string(), "cannot read the file");
  const auto got = static_cast<std::size_t>(in.gcount());
  if (got > kMaxJsonFileBytes) {
    throw ConfigError(path.string(), "larger than " + format_bytes(kMaxJsonFileBytes) +
                                         ", the most a JSON file of gradex's may hold");
  }
  text.resize(got);
  return parse_json_text(text, path.string());
}

}  // namespace gradex
