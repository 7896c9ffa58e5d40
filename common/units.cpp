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

bool same_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// The exact unit first; then, where the case cannot change the meaning
// (`fold` says where: a size has no bits, and "MiB/s" no bit twin), the
// unit in any case ("16mib", "1gb").
double lookup(const std::string& unit, const std::vector<std::pair<const char*, double>>& table,
              std::string_view text, const std::string& field, const char* what,
              bool (*fold)(std::string_view) = nullptr) {
  for (const auto& [name, scale] : table) {
    if (unit == name) return scale;
  }
  for (const auto& [name, scale] : table) {
    if (fold != nullptr && fold(name) && same_ignoring_case(unit, name)) return scale;
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
  const double bytes = s.number * lookup(s.unit, byte_units(), text, field, "size",
                                        [](std::string_view) { return true; });
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
      {"Tbps", 1e12 / 8},
      {"bit/s", 1 / 8.}, {"Kbit/s", 1e3 / 8}, {"Mbit/s", 1e6 / 8}, {"Gbit/s", 1e9 / 8},
      {"Tbit/s", 1e12 / 8},
      {"b/s", 1 / 8.},   {"Kb/s", 1e3 / 8},   {"Mb/s", 1e6 / 8},   {"Gb/s", 1e9 / 8},
      {"Tb/s", 1e12 / 8}};
  // "GB/s" and "Gb/s" differ by 8x: only the binary byte units and the
  // spelt-out bit units may be written in any case.
  const double rate = s.number * lookup(s.unit, units, text, field, "rate", [](std::string_view u) {
    return u.find("iB/s") != std::string_view::npos || u.find("bit/s") != std::string_view::npos;
  });
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
