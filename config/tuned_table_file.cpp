#include "config/tuned_table_file.h"

#include "common/errors.h"
#include "config/json_file.h"
#include "config/json_reader.h"

namespace gradex {

std::string fastest(const TunedSize& size) {
  GRADEX_ENFORCE(!size.seconds.empty(), "a tuned size without times");
  auto best = size.seconds.begin();
  for (auto it = size.seconds.begin(); it != size.seconds.end(); ++it) {
    if (it->second < best->second) best = it;
  }
  return best->first;
}

std::vector<std::string> contenders(const std::vector<TunedSize>& sizes,
                                    const std::vector<std::string>& order, double margin) {
  std::vector<std::string> close;
  for (const std::string& name : order) {
    for (const TunedSize& size : sizes) {
      const auto it = size.seconds.find(name);
      if (it != size.seconds.end() && it->second <= (1 + margin) * size.seconds.at(fastest(size))) {
        close.push_back(name);
        break;
      }
    }
  }
  return close;
}

nlohmann::json tuned_table_json(const std::string& transport, const std::vector<TunedSize>& sizes,
                                const nlohmann::json& about) {
  nlohmann::json doc;
  doc["transport"] = transport;
  auto& choices = doc["choices"] = nlohmann::json::array();
  for (const TunedSize& s : sizes) {
    choices.push_back({{"workers", s.workers},
                       {"bytes", s.bytes},
                       {"scheme", fastest(s)},
                       {"seconds", s.seconds}});
  }
  doc["about"] = about;
  return doc;
}

TunedTable load_tuned_table(const std::filesystem::path& path, const std::string& field) {
  const std::string where = field + " (" + path.string() + ")";
  nlohmann::json doc;
  try {
    doc = read_json_file(path);
  } catch (const ConfigError& e) {
    throw ConfigError(field, e.field() + ": " + e.reason());
  }
  try {
    if (!doc.is_object()) throw ConfigError("", "expected the object gradex tune writes");
    JsonReader root(doc, "");
    TunedTable table;
    table.transport = root.string("transport", "");
    if (table.transport.empty()) throw ConfigError("/transport", "missing");
    const auto* choices = root.find("choices");
    if (choices == nullptr || !choices->is_array() || choices->empty()) {
      throw ConfigError("/choices", "expected a non-empty list");
    }
    for (std::size_t i = 0; i < choices->size(); ++i) {
      const std::string at = "/choices/" + std::to_string(i);
      if (!(*choices)[i].is_object()) throw ConfigError(at, "expected an object");
      JsonReader c((*choices)[i], at);
      for (const char* key : {"workers", "bytes"}) {
        if (!c.has(key)) throw ConfigError(c.child(key), "missing");
      }
      TunedChoice choice;
      choice.workers = static_cast<int>(c.integer("workers", 0, 1, 1 << 20));
      choice.bytes = static_cast<std::size_t>(c.integer("bytes", -1, 0, 1LL << 50));
      choice.scheme = c.string("scheme", "");
      if (choice.scheme.empty()) throw ConfigError(c.child("scheme"), "missing");
      c.find("seconds");  // the evidence, not read back
      c.reject_unknown();
      table.choices.push_back(std::move(choice));
    }
    root.find("about");
    root.reject_unknown();
    return table;
  } catch (const ConfigError& e) {
    throw ConfigError(where + "#" + e.field(), e.reason());
  }
}

}  // namespace gradex
