#include "schemes/registry.h"

#include "allreduce/halving_doubling.h"
#include "allreduce/hierarchical.h"
#include "allreduce/recursive_doubling.h"
#include "allreduce/rail_rings.h"
#include "allreduce/ring.h"
#include "allreduce/tree.h"
#include "baselines/mpi_job.h"
#include "baselines/mpi_schemes.h"
#include "baselines/nccl_schemes.h"
#include "common/errors.h"
#include "common/spelling.h"
#include "common/units.h"
#include "ps/in_network_hierarchical.h"
#include "ps/parameter_server.h"
#include "schemes/auto_scheme.h"

namespace gradex {

namespace {

template <typename T>
std::function<std::unique_ptr<Scheme>(const SchemeOptions&)> plain() {
  return [](const SchemeOptions& o) { return std::make_unique<T>(o); };
}

std::vector<SchemeEntry> build_registry() {
  std::vector<SchemeEntry> r;
  r.push_back({"ring", "ring all-reduce: reduce-scatter + all-gather, pipelined in segments",
               plain<RingScheme>()});
  r.push_back({.name = "rail_rings",
               .summary = "NCCL's rings across nodes: one per GPU of a node on its own part of the "
                          "buffer, each leaving the nodes from another GPU, so every NIC carries one ring",
               .make = plain<RailRingsScheme>(),
               .reads_ranks_per_node = true});
  r.push_back({"tree", "double binary tree all-reduce (NCCL): half the buffer per tree, pipelined",
               plain<TreeScheme>()});
  r.push_back({"halving_doubling",
               "recursive halving reduce-scatter + recursive doubling all-gather (Rabenseifner)",
               plain<HalvingDoublingScheme>()});
  r.push_back({"recursive_doubling",
               "recursive doubling: log2 n swaps of the whole buffer (the small-message choice)",
               plain<RecursiveDoublingScheme>()});
  r.push_back({.name = "hierarchical",
               .summary = "intra-node ring reduce-scatter, inter-node all-reduce, intra-node ring "
                          "all-gather",
               .make = [](const SchemeOptions& o) {
                 return std::make_unique<HierarchicalScheme>(
                     o, [](std::string_view name, const SchemeOptions& inner) {
                       return make_scheme(name, inner);
                     });
               },
               .reads_hierarchical_inter = true,
               .reads_ranks_per_node = true});
  r.push_back({.name = "ps",
               .summary = "parameter server on dedicated endpoints: shards pushed, summed, pulled",
               .make = [](SchemeOptions o) {
                 o.placement = ServerPlacement::dedicated;
                 return std::make_unique<ParameterServerScheme>(o);
               },
               .reads_ps_servers = true});
  r.push_back({.name = "ps_pipelined",
               .summary = "parameter server on dedicated endpoints, shards in chunks: each chunk's sum "
               "returns while the next is pushed",
               .make = [](SchemeOptions o) {
                 o.placement = ServerPlacement::dedicated;
                 return std::make_unique<ParameterServerScheme>(o, /*pipelined=*/true);
               },
               .reads_ps_servers = true});
  r.push_back({.name = "ps_hybrid",
               .summary = "BytePS placement: a server on every worker plus ps.servers dedicated ones, keys "
               "split at the proven optimum, pipelined",
               .make = [](SchemeOptions o) {
                 o.placement = ServerPlacement::hybrid;
                 return std::make_unique<ParameterServerScheme>(o, /*pipelined=*/true);
               },
               .reads_ps_servers = true});
  r.push_back({"in_network",
               "in-network reduction (NVLS in an NVSwitch, SHARP in an InfiniBand switch): each "
               "rank sends its buffer once to a switch that sums it and sends the sum back",
               [](SchemeOptions o) {
                 o.placement = ServerPlacement::dedicated;
                 o.servers = o.workers;  // one switch port per rank
                 return std::make_unique<ParameterServerScheme>(o, /*pipelined=*/true,
                                                                /*in_network=*/true);
               }});
  r.push_back({.name = "in_network_hierarchical",
               .summary = "in-network reduction at two levels (NVLS inside each node, SHARP across "
                          "the nodes): a node's switch sums its GPUs, a switch between the nodes "
                          "sums each GPU's share of that across them, and the node's switch "
                          "spreads the result",
               .make = [](SchemeOptions o) {
                 return std::make_unique<InNetworkHierarchicalScheme>(
                     o, InNetworkHierarchicalScheme::Across::reducing_switch);
               },
               .reads_ranks_per_node = true});
  r.push_back({.name = "in_network_tree",
               .summary = "NCCL's NVLSTree: a node's switch sums its GPUs (NVLS), each GPU carries "
                          "a G-th of that across the nodes on a double binary tree of its rail, and "
                          "the node's switch spreads the result; no switch between the nodes",
               .make = [](SchemeOptions o) {
                 return std::make_unique<InNetworkHierarchicalScheme>(
                     o, InNetworkHierarchicalScheme::Across::tree);
               },
               .reads_ranks_per_node = true});
  r.push_back({.name = "ps_colocated",
               .summary = "parameter server with its servers spread over the workers",
               .make = [](SchemeOptions o) {
                 o.placement = ServerPlacement::colocated;
                 return std::make_unique<ParameterServerScheme>(o);
               },
               .reads_ps_servers = true});
  r.push_back({"dp_master", "DataParallel's master GPU: one server co-located on worker 0",
               [](SchemeOptions o) {
                 o.servers = 1;
                 o.placement = ServerPlacement::colocated;
                 return std::make_unique<ParameterServerScheme>(o);
               }});
  r.push_back({.name = "auto",
               .summary = "per size, the fastest of the schemes that run on the workers alone: the cost "
               "model's pick on a modelled network, else each measured once per size",
               .make = [](const SchemeOptions& o) { return std::make_unique<AutoScheme>(o); },
               .reads_ps_servers = true,
               .reads_hierarchical_inter = true,
               .reads_ranks_per_node = true});
  for (BaselineScheme& b : mpi_baselines()) {
    r.push_back({std::move(b.name), std::move(b.summary), std::move(b.make), /*baseline=*/true,
                 &mpi_job_active, "",
                 [] { return std::string("runs only in processes started by mpirun"); }});
  }
  for (BaselineScheme& b : nccl_baselines()) {
    r.push_back({std::move(b.name), std::move(b.summary), std::move(b.make), /*baseline=*/true,
                 [] { return nccl_baselines_available(); }, "nccl", [] {
                   std::string why;
                   nccl_baselines_available(&why);
                   return why;
                 }});
  }
  return r;
}

}  // namespace

const std::vector<SchemeEntry>& scheme_registry() {
  static const std::vector<SchemeEntry> registry = build_registry();
  return registry;
}

const std::vector<SchemeField>& scheme_fields() {
  static const std::vector<SchemeField> fields = {
      // auto runs its candidates at the scenario's segment size too.
      {"/segment_bytes", "--segment", "that pipeline in segments",
       [](const SchemeEntry& e, const Scheme& s) { return s.segmented() || e.name == "auto"; }},
      {"/ps/servers", "--servers", "whose servers it counts",
       [](const SchemeEntry& e, const Scheme&) { return e.reads_ps_servers; }},
      {"/hierarchical/inter", "", "whose algorithm across nodes it sets",
       [](const SchemeEntry& e, const Scheme&) { return e.reads_hierarchical_inter; }},
  };
  return fields;
}

std::string scheme_readers(const SchemeField& field) {
  std::string readers;
  for (const SchemeEntry& e : scheme_registry()) {
    if (e.baseline) continue;
    SchemeOptions probe;
    probe.workers = 4;
    if (field.reads(e, *e.make(probe))) readers += (readers.empty() ? "" : ", ") + e.name;
  }
  return readers;
}

std::string node_scheme_names() {
  std::string names;
  for (const SchemeEntry& e : scheme_registry()) {
    if (!e.baseline && e.reads_ranks_per_node) names += (names.empty() ? "" : ", ") + e.name;
  }
  return names;
}

std::vector<std::string> portable_scheme_names() {
  std::vector<std::string> names;
  for (const SchemeEntry& e : scheme_registry()) {
    if (!e.baseline) names.push_back(e.name);
  }
  return names;
}

SchemeLabel parse_scheme_label(std::string_view label, const std::string& field) {
  const std::size_t at = label.find('@');
  SchemeLabel parsed{std::string(label.substr(0, at)), 0};
  if (at != std::string_view::npos) {
    parsed.segment_bytes = parse_bytes(label.substr(at + 1), field);
    if (parsed.segment_bytes == 0) {
      throw ConfigError(field, "'" + std::string(label) + "': a segment is at least 1 byte");
    }
  }
  return parsed;
}

std::string scheme_label(const std::string& name, std::size_t segment_bytes) {
  constexpr std::size_t kKiB = 1024, kMiB = kKiB * 1024;
  const std::string size = segment_bytes % kMiB == 0   ? std::to_string(segment_bytes / kMiB) + "MiB"
                           : segment_bytes % kKiB == 0 ? std::to_string(segment_bytes / kKiB) + "KiB"
                                                       : std::to_string(segment_bytes) + "B";
  return name + "@" + size;
}

const SchemeEntry& find_scheme(std::string_view label, const std::string& field) {
  const std::string name = parse_scheme_label(label, field).name;
  std::string known;
  std::vector<std::string> names;
  for (const SchemeEntry& e : scheme_registry()) {
    if (e.name == name) return e;
    known += (known.empty() ? "" : ", ") + e.name;
    names.push_back(e.name);
  }
  throw ConfigError(field, "unknown scheme '" + std::string(name) + "'" + did_you_mean(name, names) +
                               " (known: " + known + ")");
}

std::unique_ptr<Scheme> make_scheme(std::string_view label, const SchemeOptions& options,
                                    const std::string& field) {
  const SchemeLabel parsed = parse_scheme_label(label, field);
  SchemeOptions at = options;
  if (parsed.segment_bytes > 0) at.segment_bytes = parsed.segment_bytes;
  std::unique_ptr<Scheme> scheme = find_scheme(parsed.name, field).make(at);
  if (parsed.segment_bytes > 0 && !scheme->segmented()) {
    throw ConfigError(field, "'" + std::string(label) + "': " + parsed.name +
                                 " does not pipeline in segments, so it takes no @size");
  }
  return scheme;
}

}  // namespace gradex
