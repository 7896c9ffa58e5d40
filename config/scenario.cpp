#include "config/scenario.h"

#include <algorithm>
#include <iterator>
#include <string_view>

#include "common/errors.h"
#include "common/units.h"
#include "config/json_file.h"
#include "config/json_reader.h"
#include "config/link_presets.h"
#include "config/node_presets.h"
#include "config/repeats.h"
#include "transport/options.h"

namespace gradex {

namespace {

std::size_t read_size(const nlohmann::json& v, const std::string& field) {
  if (v.is_number_unsigned() || (v.is_number_integer() && v.get<long long>() >= 0)) {
    return v.get<std::size_t>();
  }
  if (v.is_string()) return parse_bytes(v.get<std::string>(), field);
  throw ConfigError(field, "expected a size (bytes, or a string such as \"16MiB\"), got " +
                               json_kind(v));
}

std::vector<int> read_workers(const nlohmann::json* v, const std::string& field) {
  if (v == nullptr) return {4};
  auto one = [&](const nlohmann::json& x, const std::string& f) {
    if (!x.is_number_integer() || x.get<long long>() < 1 ||
        x.get<long long>() > kMaxSimulatedRanks) {
      throw ConfigError(f, "expected a worker count between 1 and " +
                               std::to_string(kMaxSimulatedRanks) + ", got " + x.dump());
    }
    return x.get<int>();
  };
  if (v->is_array()) {
    if (v->empty()) throw ConfigError(field, "expected at least one worker count");
    std::vector<int> out;
    for (std::size_t i = 0; i < v->size(); ++i) out.push_back(one((*v)[i], field + "/" + std::to_string(i)));
    refuse_repeats(out, field);
    return out;
  }
  return {one(*v, field)};
}

// "sizes": [4096, "1MiB"] or {"from": "4KiB", "to": "16MiB", "factor": 4}.
std::vector<std::size_t> read_sizes(JsonReader& root) {
  const std::string field = root.child("sizes");
  const auto* v = root.find("sizes");
  if (v == nullptr) throw ConfigError(field, "missing: give a list of sizes or {from, to, factor}");
  std::vector<std::size_t> sizes;
  if (v->is_array()) {
    if (v->empty()) throw ConfigError(field, "expected at least one size");
    for (std::size_t i = 0; i < v->size(); ++i) {
      sizes.push_back(read_size((*v)[i], field + "/" + std::to_string(i)));
    }
    refuse_repeats(sizes, field);  // 4096 and "4KiB" too
    return sizes;
  }
  JsonReader sweep(*v, field);
  const auto* from = sweep.find("from");
  const auto* to = sweep.find("to");
  if (from == nullptr) throw ConfigError(sweep.child("from"), "missing");
  if (to == nullptr) throw ConfigError(sweep.child("to"), "missing");
  const std::size_t lo = read_size(*from, sweep.child("from"));
  const std::size_t hi = read_size(*to, sweep.child("to"));
  const long long factor = sweep.integer("factor", 2, 2, 1024);
  sweep.reject_unknown();
  if (lo == 0) throw ConfigError(sweep.child("from"), "a sweep must start above 0 bytes");
  if (hi < lo) throw ConfigError(sweep.child("to"), "must not be below 'from'");
  for (std::size_t s = lo; s <= hi; s *= static_cast<std::size_t>(factor)) {
    sizes.push_back(s);
    if (sizes.size() > 64) throw ConfigError(field, "sweep has more than 64 sizes");
  }
  return sizes;
}

LinkSpec read_link(JsonReader& parent, const std::string& key, bool& present) {
  LinkSpec spec;
  if (!parent.has(key)) {
    parent.find(key);
    return spec;
  }
  present = true;
  // A hardware name (config/link_presets.h): "ib_hdr_200g", or an object
  // {"preset": ..., "latency": ...} to override its latency, and
  // "protocols": false to drop its protocol and launch costs (the
  // datasheet's rate, as a back-of-the-envelope analysis assumes it), or
  // one of its protocols' names to run every collective with that one, as
  // NCCL_PROTO does.
  if (const auto* name = parent.find(key); name->is_string()) {
    return find_link_preset(name->get<std::string>(), parent.child(key));
  }
  JsonReader link = parent.object(key);
  const auto* bw = link.find("bandwidth");
  const auto* preset = link.find("preset");
  if (preset != nullptr) {
    if (!preset->is_string()) throw ConfigError(link.child("preset"), "expected a preset name");
    spec = find_link_preset(preset->get<std::string>(), link.child("preset"));
    if (bw != nullptr) throw ConfigError(link.child("bandwidth"), "give a preset or a bandwidth, not both");
    if (const auto* protocols = link.find("protocols"); protocols != nullptr && protocols->is_string()) {
      const std::string name = protocols->get<std::string>();
      std::string offered;
      for (const LinkProtocol& p : spec.protocols) offered += (offered.empty() ? "" : ", ") + std::string(p.name);
      if (std::none_of(spec.protocols.begin(), spec.protocols.end(),
                       [&](const LinkProtocol& p) { return same_protocol(p.name, name.c_str()); })) {
        throw ConfigError(link.child("protocols"),
                          "'" + preset->get<std::string>() + "' has no protocol '" + name + "'" +
                              (offered.empty() ? " (it has none)" : " (it has " + offered + ")"));
      }
      spec = spec.with_protocol(name.c_str());
    } else if (protocols != nullptr) {
      if (!protocols->is_boolean()) {
        throw ConfigError(link.child("protocols"),
                          "expected true, false or a protocol's name, got " + json_kind(*protocols));
      }
      if (!protocols->get<bool>()) {
        spec.protocols.clear();
        spec.launch_seconds = 0;
      }
    }
  } else if (link.has("protocols")) {
    throw ConfigError(link.child("protocols"), "applies to a preset's link only");
  } else if (bw == nullptr) {
    throw ConfigError(link.child("bandwidth"), "missing (e.g. \"25GB/s\" or \"10Gbps\")");
  } else if (bw->is_number() && bw->get<double>() > 0) {
    spec.bytes_per_second = bw->get<double>();
  } else if (bw->is_string()) {
    spec.bytes_per_second = parse_rate(bw->get<std::string>(), link.child("bandwidth"));
  } else {
    throw ConfigError(link.child("bandwidth"),
                      "expected a positive rate in bytes/s or a string such as \"25GB/s\", got " +
                          json_kind(*bw));
  }
  if (const auto* lat = link.find("latency")) {
    if (lat->is_number() && lat->get<double>() >= 0) {
      spec.latency_seconds = lat->get<double>();
    } else if (lat->is_string()) {
      spec.latency_seconds = parse_duration(lat->get<std::string>(), link.child("latency"));
    } else {
      throw ConfigError(link.child("latency"),
                        "expected seconds or a string such as \"20us\", got " + json_kind(*lat));
    }
  }
  link.reject_unknown();
  check_link_range(spec, link.child("bandwidth"), link.child("latency"));
  return spec;
}

// "node": "dgx_h100" (config/node_presets.h) fixes the GPUs per node,
// both links and where the NICs sit: a field that says one of them again
// would be overridden or would contradict it, so it is refused.
void read_node(JsonReader& net, const JsonReader& root, Scenario& s) {
  const NodePreset& node = find_node_preset(net.string("node", ""), net.child("node"));
  for (const char* key : {"intra_node", "inter_node", "nic_per_node", "node_switch"}) {
    if (net.has(key)) {
      throw ConfigError(net.child(key), "the node preset '" + std::string(node.name) +
                                            "' fixes it: give the node or the links, not both");
    }
  }
  if (root.has("ranks_per_node")) {
    throw ConfigError(root.child("ranks_per_node"),
                      "the node preset '" + std::string(node.name) + "' fixes it (" +
                          std::to_string(node.gpus) + " GPUs per node): give one or the other");
  }
  s.ranks_per_node = node.gpus;
  s.network.node = node.name;
  s.network.shaped = true;
  s.network.intra_node = find_link_preset(node.intra_node, net.child("node"));
  s.network.inter_node = find_link_preset(node.inter_node, net.child("node"));
  s.network.nic_per_node = node.nic_per_node;
  if (!node.reducing_switch.empty()) {
    s.network.node_switch = find_link_preset(node.reducing_switch, net.child("node"));
  }
}

// A buffer holds whole elements: rounding 4097 bytes of f32 down to 4096
// (or 4 bytes of f64 to none) would time a message the user did not ask for.
void check_whole_elements(const std::vector<std::size_t>& sizes, DType dtype, bool listed) {
  const std::size_t element = dtype_size(dtype);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] % element == 0) continue;
    // A sweep's sizes are 'from' times powers of the factor: 'from' is at fault.
    throw ConfigError(listed ? "/sizes/" + std::to_string(i) : "/sizes/from",
                      std::to_string(sizes[i]) + " bytes is not a whole number of " +
                          std::string(dtype_name(dtype)) + " elements (" + std::to_string(element) +
                          " bytes each)");
  }
}

std::string one_of(JsonReader& r, const std::string& key, const std::string& fallback,
                   std::initializer_list<const char*> allowed) {
  const std::string value = r.string(key, fallback);
  std::string list;
  for (const char* a : allowed) {
    if (value == a) return value;
    list += (list.empty() ? "" : ", ") + std::string(a);
  }
  throw ConfigError(r.child(key), "unknown value '" + value + "' (expected one of: " + list + ")");
}

}  // namespace

std::string default_device(const std::string& transport) {
  return transport == kGpuTransport ? "cuda" : "cpu";
}

void check_simulated_iterations(const Scenario& s, bool iters_given, bool warmup_given) {
  const std::string why = "the simulator runs each size once (it is deterministic: every "
                          "iteration would take the same virtual time)";
  if (iters_given && s.iters != 1) throw ConfigError("/iters", "does not apply: " + why + "; give 1 or remove it");
  if (warmup_given && s.warmup_iters != 0) {
    throw ConfigError("/warmup_iters", "does not apply: " + why + "; give 0 or remove it");
  }
}

Scenario parse_scenario(const nlohmann::json& document) {
  Scenario s;
  s.source = document;
  JsonReader root(document, "");
  s.name = root.string("name", "");
  if (s.name.empty()) throw ConfigError("/name", "missing: every scenario needs a name");
  s.description = root.string("description", "");
  s.workers = read_workers(root.find("workers"), "/workers");
  s.ranks_per_node = static_cast<int>(root.integer("ranks_per_node", 1, 1, kMaxRealRanks));
  s.ranks_per_node_given = root.has("ranks_per_node");
  s.transport = root.string("transport", std::string(kTransportNames[0]));
  if (std::find(std::begin(kAllTransportNames), std::end(kAllTransportNames), s.transport) ==
      std::end(kAllTransportNames)) {
    std::string known;
    for (std::string_view name : kAllTransportNames) {
      known += (known.empty() ? "" : ", ") + std::string(name);
    }
    throw ConfigError("/transport", "transport '" + s.transport + "' is unknown (available: " +
                                        known + ")");
  }
  // Whether this build and machine have a GPU is the plan's question
  // (runner/plan.cpp), so that a scenario validates anywhere.
  s.device_given = root.has("device");
  s.device = one_of(root, "device", default_device(s.transport), {"cpu", "cuda"});

  const auto* schemes = root.find("schemes");
  if (schemes == nullptr || (schemes->is_string() && schemes->get<std::string>() == "all")) {
    s.all_schemes = true;
  } else if (schemes->is_array() && !schemes->empty()) {
    for (std::size_t i = 0; i < schemes->size(); ++i) {
      const auto& e = (*schemes)[i];
      if (!e.is_string()) {
        throw ConfigError("/schemes/" + std::to_string(i), "expected a scheme name, got " + json_kind(e));
      }
      s.schemes.push_back(e.get<std::string>());
    }
    refuse_repeats(s.schemes, "/schemes");
  } else {
    throw ConfigError("/schemes", "expected \"all\" or a non-empty list of scheme names");
  }

  if (root.has("workload")) s.training = parse_workload(*root.find("workload"), "/workload");
  root.find("workload");
  if (s.training) {
    // Training exchanges its model's gradients: the benchmark's message
    // shape and iteration counts would be silently meaningless, so refuse.
    for (const char* key : {"collective", "sizes", "dtype", "op", "warmup_iters", "iters", "device"}) {
      if (root.has(key)) {
        throw ConfigError(root.child(key), "does not apply to a train workload (it sets the "
                                           "all-reduce benchmark's messages); remove it");
      }
      root.find(key);
    }
    if (!s.training->consistency.empty() && schemes != nullptr) {
      throw ConfigError("/schemes", "PS consistency training runs through its own parameter "
                                    "servers, not the schemes: remove 'schemes' or "
                                    "'workload/consistency'");
    }
  } else {
    s.sizes = read_sizes(root);
    s.dtype = parse_dtype(root.string("dtype", "f32"), "/dtype");
    check_whole_elements(s.sizes, s.dtype, root.find("sizes")->is_array());
    s.collective = parse_collective(root.string("collective", "all_reduce"), "/collective");
    s.op = parse_reduce_op(root.string("op", "sum"), "/op");
    if (root.has("op") && !collective_reduces(s.collective)) {
      throw ConfigError("/op", "does not apply to \"collective\": \"" +
                                   std::string(collective_name(s.collective)) +
                                   "\", which reduces nothing; remove it");
    }
    s.warmup_iters = static_cast<int>(root.integer("warmup_iters", 2, 0, 1'000'000));
    s.iters = static_cast<int>(root.integer("iters", 5, 1, 1'000'000));
    if (s.transport == "sim") check_simulated_iterations(s, root.has("iters"), root.has("warmup_iters"));
  }
  s.straggler_ms = root.number("straggler_ms", 0, 0, kMaxTimeoutMs);
  s.symmetric_subset = static_cast<int>(root.integer("symmetric_subset", 0, 2, kMaxSimulatedRanks));
  if (s.training) s.training->straggler_ms = s.straggler_ms;
  if (const auto* seg = root.find("segment_bytes")) {
    s.segment_given = true;
    s.segment_bytes = read_size(*seg, "/segment_bytes");
    if (s.segment_bytes == 0) throw ConfigError("/segment_bytes", "must be at least 1 byte");
  }
  if (const auto* slice = root.find("slice_bytes")) {
    s.slice_bytes = read_size(*slice, "/slice_bytes");
    if (s.collective != Collective::all_reduce) {
      throw ConfigError("/slice_bytes", "slices a ring all-reduce only, not \"collective\": \"" +
                                            std::string(collective_name(s.collective)) + "\"");
    }
  }
  s.timeout = std::chrono::milliseconds(
      root.integer("timeout_ms", kDefaultTimeout.count(), 1, kMaxTimeoutMs));
  s.spin = std::chrono::microseconds(root.integer("spin_us", kDefaultSpin.count(), 0, 1'000'000));
  if (s.transport != "sim" && s.straggler_ms >= static_cast<double>(s.timeout.count())) {
    throw ConfigError("/straggler_ms", "must be below timeout_ms (" +
                                           std::to_string(s.timeout.count()) +
                                           "): the other workers' waits would time out");
  }
  // A file written for the simulator that sets wall-clock fields is
  // contradicting itself. (A command that moves a real run's scenario onto
  // the simulator, `gradex simulate`, overrides them as it does the
  // transport.)
  for (const char* key : {"timeout_ms", "spin_us"}) {
    if (s.transport == "sim" && root.has(key)) {
      throw ConfigError(std::string("/") + key,
                        "does not apply to \"transport\": \"sim\", whose waits end or deadlock on "
                        "virtual time (the deadlock is detected exactly)");
    }
  }

  JsonReader ps = root.object("ps");
  // 0 dedicated servers is ps_hybrid's all-reduce limit; the other PS
  // schemes refuse it when planned.
  // Real transports take at most kMaxRealRanks (checked when planned:
  // --transport overrides the transport).
  s.ps_servers = static_cast<int>(ps.integer("servers", 1, 0, kMaxSimulatedRanks));
  s.ps_servers_given = ps.has("servers");
  ps.reject_unknown();

  JsonReader tuned = root.object("auto");
  s.auto_table_path = tuned.string("table", "");
  if (tuned.has("table") && s.auto_table_path.empty()) {
    throw ConfigError("/auto/table", "expected the path of a table from gradex tune");
  }
  tuned.reject_unknown();

  JsonReader hier = root.object("hierarchical");
  s.inter_algorithm = one_of(hier, "inter", "ring", {"ring", "tree", "halving_doubling"});
  s.inter_given = hier.has("inter");
  hier.reject_unknown();

  if (root.has("network")) {
    JsonReader net = root.object("network");
    if (net.has("node")) {
      read_node(net, root, s);
    } else {
      s.network.intra_node = read_link(net, "intra_node", s.network.shaped);
      s.network.inter_node = read_link(net, "inter_node", s.network.shaped);
      s.network.nic_per_node = net.boolean("nic_per_node", false);
    }
    // The switches that sum for the in_network schemes: inside each node
    // (a node preset fixes it), and across nodes (a SHARP switch between
    // DGX H100 nodes, say), which on one node overrides the node's.
    const LinkSpec node_switch = read_link(net, "node_switch", s.network.node_switch_given);
    if (s.network.node_switch_given) s.network.node_switch = node_switch;
    s.network.reducing_switch = read_link(net, "switch", s.network.switch_given);
    if (net.has("spine")) {
      JsonReader spine = net.object("spine");
      s.network.nodes_per_leaf =
          static_cast<int>(spine.integer("nodes_per_leaf", 0, 1, kMaxRealRanks * 1024));
      s.network.oversubscription = spine.number("oversubscription", 1, 1, 1e3);
      if (!spine.has("nodes_per_leaf")) {
        throw ConfigError(spine.child("nodes_per_leaf"), "give how many nodes share a leaf switch");
      }
      spine.reject_unknown();
      if (s.network.inter_node.unlimited()) {
        throw ConfigError("/network/spine", "needs a shaped inter_node link: a leaf's uplink "
                                            "carries what its NICs send, divided by the "
                                            "oversubscription");
      }
    }
    net.reject_unknown();
    if (!s.network.shaped) {
      throw ConfigError("/network", "give intra_node and/or inter_node links (or drop 'network')");
    }
  } else {
    root.find("network");
  }
  s.output = root.string("output", "");
  root.reject_unknown();
  return s;
}

Scenario load_scenario(const std::filesystem::path& path) {
  const nlohmann::json doc = read_json_file(path);
  try {
    return parse_scenario(doc);
  } catch (const ConfigError& e) {
    throw ConfigError(path.string() + "#" + e.field(), e.reason());
  }
}

SchemeOptions scheme_options(const Scenario& s, int workers) {
  SchemeOptions o;
  o.workers = workers;
  o.segment_bytes = s.segment_bytes;
  o.slice_bytes = s.slice_bytes;
  o.ranks_per_node = s.ranks_per_node;
  o.inter_algorithm = s.inter_algorithm;
  o.servers = s.ps_servers;
  o.tuned = s.auto_table;
  return o;
}

Topology scenario_topology(const Scenario& s, int workers, int endpoints) {
  Topology t = Topology::grouped(workers, s.ranks_per_node, endpoints - workers,
                                 s.network.intra_node, s.network.inter_node,
                                 s.network.nic_per_node);
  t.nodes_per_leaf = s.network.nodes_per_leaf;
  t.oversubscription = s.network.oversubscription;
  return t;
}

Topology scenario_topology(const Scenario& s, const Scheme& scheme, int workers) {
  Topology t = scenario_topology(s, workers, scheme.endpoints());
  const int per_node = s.ranks_per_node;
  const bool one_node = workers <= per_node;
  const LinkSpec& across = s.network.reducing_switch;
  const LinkSpec& inside = s.network.node_switch;
  const auto refuse = [](const std::string& field, const std::string& why) {
    throw ConfigError(field, why);
  };
  switch (scheme.reducing_switches()) {
    case Scheme::ReducingSwitches::none: return t;
    case Scheme::ReducingSwitches::one: {
      // On one node the node's switch sums (network.switch, when given,
      // stands for it); across nodes only network.switch can.
      const LinkSpec& used = one_node && !s.network.switch_given ? inside : across;
      if (s.network.shaped && used.unlimited()) {
        refuse("/network/switch",
               one_node ? "in_network needs a switch that sums: give network.switch "
                          "(--switch; e.g. \"h100_nvls\") or a node preset whose switch does"
                        : "in_network across nodes needs the switch between them that "
                          "sums: give network.switch (--switch; e.g. \"ib_ndr_sharp\")");
      }
      // NVLS: the switch is the GPUs' own node's; SHARP: a switch of its
      // own, reached through each GPU's NIC.
      t.add_switch(workers, scheme.endpoints() - workers, used, one_node,
                   /*ports_multicast=*/true);
      return t;
    }
    case Scheme::ReducingSwitches::per_node:
    case Scheme::ReducingSwitches::per_node_and_across: {
      const bool across_too =
          scheme.reducing_switches() == Scheme::ReducingSwitches::per_node_and_across;
      const std::string name = across_too ? "in_network_hierarchical" : "in_network_tree";
      // A level with one member moves nothing and needs no switch.
      if (s.network.shaped && per_node > 1 && inside.unlimited()) {
        refuse("/network/node_switch",
               name + " needs a switch that sums inside each node: give "
               "network.node_switch (--node-switch; e.g. \"h100_nvls\") or a node preset "
               "whose switch does");
      }
      if (across_too && s.network.shaped && !one_node && across.unlimited()) {
        refuse("/network/switch",
               "in_network_hierarchical needs the switch between the nodes that sums: give "
               "network.switch (--switch; e.g. \"ib_ndr_sharp\")");
      }
      // On one node the node's switch spreads each sum at once, as
      // in_network's ports do; across nodes the sum comes back through
      // the GPU that carried it, in the scheme's own messages.
      t.add_switch(workers, workers, inside, /*in_node=*/true, /*ports_multicast=*/one_node);
      if (!across_too) return t;
      // A port per rail stands for the rail's ports, one per node, at
      // their summed rate (ps/in_network_hierarchical.h).
      LinkSpec rail = across;
      rail.bytes_per_second *= (workers + per_node - 1) / per_node;
      t.add_switch(2 * workers, per_node, rail, /*in_node=*/false);
      return t;
    }
  }
  return t;
}

}  // namespace gradex
