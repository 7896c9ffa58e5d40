#include "runner/hostfile.h"

#include <unistd.h>

#include <charconv>
#include <climits>
#include <fstream>
#include <set>
#include <sstream>

#include "common/errors.h"

namespace gradex {

namespace {

// A positive slot count, or 0 when `text` is not one.
int parse_slots(const std::string& text) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size() && value > 0 ? value : 0;
}

}  // namespace

std::vector<HostSlots> parse_hostfile(std::istream& in, const std::string& file) {
  std::vector<HostSlots> hosts;
  std::set<std::string> seen;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string where = file + ":" + std::to_string(number);
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    HostSlots h;
    if (!(words >> h.host)) continue;  // blank or a comment
    if (h.host.find('=') != std::string::npos) {
      throw ConfigError(where, "expected a host name first, got '" + h.host + "'");
    }
    for (std::string word; words >> word;) {
      if (word.rfind("slots=", 0) != 0) {
        throw ConfigError(where, "unknown word '" + word + "' (a line is: host [slots=K])");
      }
      h.slots = parse_slots(word.substr(6));
      if (h.slots == 0) {
        throw ConfigError(where, "slots must be a positive integer, got '" + word.substr(6) + "'");
      }
    }
    if (!seen.insert(h.host).second) {
      throw ConfigError(where, "host '" + h.host + "' is listed twice (give it one line with its slots)");
    }
    hosts.push_back(h);
  }
  if (hosts.empty()) throw ConfigError(file, "lists no host");
  return hosts;
}

std::vector<HostSlots> read_hostfile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError("--hostfile", "cannot read '" + path + "'");
  return parse_hostfile(in, path);
}

std::vector<std::string> place_ranks(const std::vector<HostSlots>& hosts, int ranks) {
  std::vector<std::string> placed;
  long long slots = 0;
  for (const HostSlots& h : hosts) {
    slots += h.slots;
    for (int s = 0; s < h.slots && static_cast<int>(placed.size()) < ranks; ++s) {
      placed.push_back(h.host);
    }
  }
  if (static_cast<int>(placed.size()) < ranks) {
    throw ConfigError("--hostfile", detail::concat("the hosts have ", slots, " slots for ", ranks,
                                                   " processes (workers plus dedicated servers)"));
  }
  return placed;
}

std::string this_host_name() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof name - 1) != 0) throw Error("cannot read this host's name");
  return name;
}

bool is_this_host(const std::string& host) {
  if (host == "localhost" || host == "127.0.0.1" || host == "::1") return true;
  const std::string self = this_host_name();
  const auto short_name = [](const std::string& h) { return h.substr(0, h.find('.')); };
  return host == self || host == short_name(self) || short_name(host) == self;
}

}  // namespace gradex
