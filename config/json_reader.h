// Reading a JSON object field by field while tracking where we are, so that
// every error names the JSON pointer of the offending value and unknown
// keys are rejected instead of silently ignored.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gradex {

class JsonReader {
 public:
  // `pointer` is the JSON pointer of `value` ("" for the document root).
  JsonReader(const nlohmann::json& value, std::string pointer);

  const std::string& pointer() const { return pointer_; }
  // The pointer of `key` under this object (RFC 6901 escaping).
  std::string child(const std::string& key) const;

  // The value under `key`, or nullptr if absent. Marks the key as known.
  const nlohmann::json* find(const std::string& key);
  bool has(const std::string& key) const { return value_.contains(key); }

  std::string string(const std::string& key, const std::string& fallback);
  bool boolean(const std::string& key, bool fallback);
  // Integers within [lo, hi].
  long long integer(const std::string& key, long long fallback, long long lo, long long hi);
  // Numbers within [lo, hi] (above lo when `open_low`).
  double number(const std::string& key, double fallback, double lo, double hi,
                bool open_low = false);
  JsonReader object(const std::string& key);

  // Throws ConfigError for the first key that was never looked up.
  void reject_unknown() const;

 private:
  const nlohmann::json& value_;
  std::string pointer_;
  std::set<std::string> known_;
};

// The JSON type name of a value, for messages ("a string", "an array").
std::string json_kind(const nlohmann::json& value);

}  // namespace gradex
