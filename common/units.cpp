#include "common/units.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

#include "common/errors.h"

namespace gradex {

namespace {

struct Split {
  double number;
  std::string unit;
};

// "16 MiB" -> {16, "MiB"}; rejects empty numbers, negatives and junk.
Split split_number(std::string_view text, const std::string& field, const char* what) {
  std::size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  const std::size_t start = i;
  const auto digit_at = [&](std::size_t k) {
    return k < text.size() && std::isdigit(static_cast<unsigned char>(text[k]));
  };
  while (i < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.' || text[i] == 'e' ||
          text[i] == 'E')) {
    if (text[i] == 'e' || text[i] == 'E') {
      // An exponent: 'e', an optional sign, digits ("1e-3", "2E+9"). An
      // 'e' followed by anything else is a unit's first letter.
      const std::size_t sign = (text.size() > i + 1 && (text[i + 1] == '-' || text[i + 1] == '+'));
      if (!digit_at(i + 1 + sign)) break;
      i += 1 + sign;
      continue;
    }
    ++i;
  }
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data() + start, text.data() + i, value);
  if (start == i || ec != std::errc() || end != text.data() + i || !std::isfinite(value) ||
      value < 0) {
    throw ConfigError(field, "expected " + std::string(what) + ", got '" + std::string(text) + "'");
  }
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  std::string unit(text.substr(i));
  while (!unit.empty() && std::isspace(static_cast<unsigned char>(unit.back()))) unit.pop_back();
  return {value, unit};
}

double lookup(const std::string& unit, const std::vector<std::pair<const char*, double>>& table,
              std::string_view text, const std::string& field, const char* what) {
  for (const auto& [name, scale] : table) {
    if (unit == name) return scale;
  }
  throw ConfigError(field, "unknown unit '" + unit + "' in " + std::string(what) + " '" +
                               std::string(text) + "'");
}

const std::vector<std::pair<const char*, double>>& byte_units() {
  static const std::vector<std::pair<const char*, double>> units = {
      {"", 1},       {"B", 1},       {"KB", 1e3},          {"MB", 1e6},
      {"GB", 1e9},   {"TB", 1e12},   {"KiB", 1024.0},      {"MiB", 1048576.0},
      {"GiB", 1073741824.0},         {"K", 1024.0},        {"M", 1048576.0},
      {"G", 1073741824.0}};
  return units;
}

}  // namespace

std::size_t parse_bytes(std::string_view text, const std::string& field) {
  const Split s = split_number(text, field, "a size such as 4096, \"16KiB\" or \"1GB\"");
  const double bytes = s.number * lookup(s.unit, byte_units(), text, field, "size");
  if (bytes != std::floor(bytes) || bytes > 1e15) {
    throw ConfigError(field, "size '" + std::string(text) + "' is not a whole number of bytes");
  }
  return static_cast<std::size_t>(bytes);
}

double parse_rate(std::string_view text, const std::string& field) {
  const Split s = split_number(text, field, "a rate such as \"25GB/s\" or \"200Gbps\"");
  static const std::vector<std::pair<const char*, double>> units = {
      {"B/s", 1},      {"KB/s", 1e3},       {"MB/s", 1e6},        {"GB/s", 1e9},
      {"TB/s", 1e12},  {"KiB/s", 1024.0},   {"MiB/s", 1048576.0}, {"GiB/s", 1073741824.0},
      {"bps", 1 / 8.}, {"Kbps", 1e3 / 8},   {"Mbps", 1e6 / 8},    {"Gbps", 1e9 / 8},
      {"Tbps", 1e12 / 8}};
  const double rate = s.number * lookup(s.unit, units, text, field, "rate");
  if (rate <= 0) throw ConfigError(field, "rate must be positive, got '" + std::string(text) + "'");
  return rate;
}

double parse_duration(std::string_view text, const std::string& field) {
  const Split s = split_number(text, field, "a duration such as \"50us\" or \"2ms\"");
  static const std::vector<std::pair<const char*, double>> units = {
      {"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}};
  if (s.unit.empty() && s.number == 0) return 0;
  return s.number * lookup(s.unit, units, text, field, "duration");
}

std::string format_bytes(double bytes) {
  static const char* names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int i = 0;
  while (bytes >= 1024 && i < 6) {
    bytes /= 1024;
    ++i;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, bytes == std::floor(bytes) ? "%.0f %s" : "%.2f %s", bytes,
                names[i]);
  return buf;
}

std::string format_rate(double r) {
  static const char* names[] = {"B/s", "KB/s", "MB/s", "GB/s", "TB/s"};
  int i = 0;
  while (r >= 1000 && i < 4) {
    r /= 1000;
    ++i;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, r == std::floor(r) ? "%.0f %s" : "%.3g %s", r, names[i]);
  return buf;
}

}  // namespace gradex
