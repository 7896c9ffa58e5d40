// gradex list: the registered schemes in registry order, the collectives
// and the schemes that provide each, then the link
// and node presets a scenario's network can name, each in a column as wide
// as its longest name.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "cli/command.h"
#include "config/link_presets.h"
#include "config/node_presets.h"
#include "gpu/cuda.h"
#include "schemes/registry.h"

namespace gradex::cli {

namespace {

template <typename Entries, typename Name, typename Text>
void print_column(const Entries& entries, Name name, Text text) {
  std::size_t width = 0;
  for (const auto& e : entries) width = std::max(width, std::string_view(name(e)).size());
  for (const auto& e : entries) {
    std::cout << "  " << std::left << std::setw(static_cast<int>(width + 2)) << name(e) << text(e)
              << "\n";
  }
}

// "<hardware>, <latency> us per hop", the protocols, if any, with their
// per-message cost, the share of the rate the payload gets and the launch
// a collective run with each pays, and the link's launch otherwise, if any.
std::string describe_preset(const LinkPreset& p) {
  std::ostringstream out;
  out << p.hardware << ", " << p.link.latency_seconds * 1e6 << " us per hop";
  for (const LinkProtocol& proto : p.link.protocols) {
    out << "; " << proto.name << " " << proto.overhead_seconds * 1e6 << " us/msg at "
        << std::lround(proto.efficiency * 100) << "%";
    if (proto.launch_seconds > 0) out << ", " << proto.launch_seconds * 1e6 << " us launch";
  }
  const bool per_protocol = std::any_of(p.link.protocols.begin(), p.link.protocols.end(),
                                        [](const LinkProtocol& q) { return q.launch_seconds > 0; });
  if (p.link.launch_seconds > 0 && !per_protocol) {
    out << "; " << p.link.launch_seconds * 1e6 << " us launch";
  }
  return out.str();
}

// The schemes that provide collective c, in registry order. A scheme that
// cannot be made in this process (the MPI baselines outside mpirun) is
// left out; its summary names its collectives.
std::string providers(Collective c) {
  std::string out;
  for (const SchemeEntry& e : scheme_registry()) {
    if (e.baseline) continue;
    SchemeOptions probe;
    probe.workers = 4;
    if (!e.make(probe)->provides(c)) continue;
    if (!out.empty()) out += ", ";
    out += e.name;
  }
  return out;
}

}  // namespace

Command add_list_command(CLI::App& parent) {
  CLI::App* cmd = parent.add_subcommand("list", "list the registered schemes and the link and node presets");
  return {cmd, [] {
            std::cout << "schemes:\n";
            print_column(scheme_registry(), [](const auto& e) { return e.name; },
                         [](const SchemeEntry& e) {
                           if (!e.enabled || e.enabled()) return e.summary;
                           return e.summary + " [unavailable here: " +
                                  (e.why_unavailable ? e.why_unavailable() : std::string("?")) + "]";
                         });
            std::cout << "collectives (\"collective\": NAME; bytes: the whole buffer), by the "
                         "schemes that provide them:\n";
            print_column(kCollectives,
                         [](Collective c) { return std::string(collective_name(c)); },
                         [](Collective c) { return providers(c); });
            std::cout << "fields only some schemes read (a run of none of them refuses the field), "
                         "by those schemes:\n";
            print_column(scheme_fields(),
                         [](const SchemeField& f) {
                           std::string name(f.pointer.substr(1));
                           std::replace(name.begin(), name.end(), '/', '.');
                           return f.flag.empty() ? name : name + " (" + std::string(f.flag) + ")";
                         },
                         [](const SchemeField& f) { return scheme_readers(f); });
            std::cout << "link presets (\"network\": {\"inter_node\": NAME}), rates one way:\n";
            print_column(link_presets(), [](const LinkPreset& p) { return std::string(p.name); },
                         [](const LinkPreset& p) { return describe_preset(p); });
            std::cout << "node presets (\"network\": {\"node\": NAME}):\n";
            print_column(node_presets(), [](const NodePreset& p) { return std::string(p.name); },
                         [](const NodePreset& p) {
                           return std::string(p.hardware) + ": " + std::to_string(p.gpus) +
                                  " ranks per node, intra_node " + std::string(p.intra_node) +
                                  ", inter_node " + std::string(p.inter_node) +
                                  (p.nic_per_node ? ", one NIC per node" : ", one NIC per rank") +
                                  (p.reducing_switch.empty()
                                       ? std::string()
                                       : ", switch " + std::string(p.reducing_switch));
                         });
            std::cout << "gpu: " << cuda_summary() << "\n";
            return kExitOk;
          }};
}

}  // namespace gradex::cli
