#include "config/json_reader.h"

#include "common/errors.h"
#include "common/spelling.h"

namespace gradex {

std::string json_kind(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::array: return "an array";
    case nlohmann::json::value_t::string: return "a string";
    case nlohmann::json::value_t::boolean: return "a boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned: return "an integer";
    case nlohmann::json::value_t::number_float: return "a number";
    default: return "an unsupported value";
  }
}

JsonReader::JsonReader(const nlohmann::json& value, std::string pointer)
    : value_(value), pointer_(std::move(pointer)) {
  if (!value_.is_object()) {
    throw ConfigError(pointer_.empty() ? "/" : pointer_,
                      "expected an object, got " + json_kind(value_));
  }
}

std::string JsonReader::child(const std::string& key) const {
  std::string escaped;
  for (char c : key) {
    if (c == '~') {
      escaped += "~0";
    } else if (c == '/') {
      escaped += "~1";
    } else {
      escaped += c;
    }
  }
  return pointer_ + "/" + escaped;
}

const nlohmann::json* JsonReader::find(const std::string& key) {
  known_.insert(key);
  auto it = value_.find(key);
  return it == value_.end() ? nullptr : &*it;
}

std::string JsonReader::string(const std::string& key, const std::string& fallback) {
  const auto* v = find(key);
  if (v == nullptr) return fallback;
  if (!v->is_string()) throw ConfigError(child(key), "expected a string, got " + json_kind(*v));
  return v->get<std::string>();
}

bool JsonReader::boolean(const std::string& key, bool fallback) {
  const auto* v = find(key);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) throw ConfigError(child(key), "expected true or false, got " + json_kind(*v));
  return v->get<bool>();
}

long long JsonReader::integer(const std::string& key, long long fallback, long long lo,
                              long long hi) {
  const auto* v = find(key);
  if (v == nullptr) return fallback;
  if (!v->is_number_integer()) {
    throw ConfigError(child(key), "expected an integer, got " + json_kind(*v));
  }
  const long long x = v->get<long long>();
  if (x < lo || x > hi) {
    throw ConfigError(child(key), "must be between " + std::to_string(lo) + " and " +
                                      std::to_string(hi) + ", got " + std::to_string(x));
  }
  return x;
}

double JsonReader::number(const std::string& key, double fallback, double lo, double hi,
                          bool open_low) {
  const auto* v = find(key);
  if (v == nullptr) return fallback;
  if (!v->is_number()) throw ConfigError(child(key), "expected a number, got " + json_kind(*v));
  const double x = v->get<double>();
  if (x > hi || x < lo || (open_low && x == lo)) {
    throw ConfigError(child(key), std::string("must be ") + (open_low ? "above " : "at least ") +
                                      nlohmann::json(lo).dump() + " and at most " +
                                      nlohmann::json(hi).dump() +
                                      ", got " + v->dump());
  }
  return x;
}

JsonReader JsonReader::object(const std::string& key) {
  const auto* v = find(key);
  static const nlohmann::json empty = nlohmann::json::object();
  return JsonReader(v ? *v : empty, child(key));
}

void JsonReader::reject_unknown() const {
  for (const auto& [key, _] : value_.items()) {
    if (known_.count(key) == 0) {
      std::string allowed;
      for (const auto& k : known_) allowed += (allowed.empty() ? "" : ", ") + k;
      throw ConfigError(child(key), "unknown key" +
                                        did_you_mean(key, {known_.begin(), known_.end()}) +
                                        " (expected one of: " + allowed + ")");
    }
  }
}

}  // namespace gradex
