// The one list of named schemes. The CLI, the tests and the benchmarks all
// iterate it, so a scheme is run, tested and benchmarked by being added here
// (Horovod's operation manager, as a plain ordered list).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/scheme.h"

namespace gradex {

struct SchemeEntry {
  std::string name;
  std::string summary;
  // Builds the scheme; an entry may fix options (a preset such as
  // dp_master pins one server co-located on worker 0).
  std::function<std::unique_ptr<Scheme>(const SchemeOptions&)> make;
  // The baselines call a library's own collectives and run only where
  // that library can: the MPI ones in an MPI job, the NCCL ones on the
  // nccl transport. Every other scheme runs on any Comm (threads,
  // processes, simulator).
  bool baseline = false;
  // Whether the scheme can run in this process now (Horovod's Enabled());
  // empty: always.
  std::function<bool()> enabled = nullptr;
  // The transport it needs, if one ("nccl"); the plan refuses others.
  std::string needs_transport = {};
  // Why enabled() is false, for `gradex list`.
  std::function<std::string()> why_unavailable = nullptr;
  // Whether ps.servers (--servers) sets how many servers it runs.
  bool reads_ps_servers = false;
  // Whether hierarchical.inter sets the algorithm it runs across nodes.
  bool reads_hierarchical_inter = false;
  // Whether ranks_per_node groups its ranks (a scheme built on nodes);
  // on a shaped network it decides every scheme's ports besides.
  bool reads_ranks_per_node = false;
};

const std::vector<SchemeEntry>& scheme_registry();

// A scheme as lists of schemes name it (a scenario's "schemes", -s, a
// tuned table, auto's choices): a registered name, or "name@SIZE" for a
// scheme that pipelines in segments (Scheme::segmented) run with segments
// of SIZE instead of the scenario's segment_bytes: "tree@64KiB".
struct SchemeLabel {
  std::string name;
  std::size_t segment_bytes = 0;  // 0: the options' own
};
// Throws ConfigError naming `field` on an unknown name or a bad size.
SchemeLabel parse_scheme_label(std::string_view label, const std::string& field = "scheme");
// The label of `name` at segments of `segment_bytes` ("tree@64KiB").
std::string scheme_label(const std::string& name, std::size_t segment_bytes);
// The schemes that run on any Comm, in registry order: what the tests and
// the benchmarks iterate (the baselines need their library's environment).
std::vector<std::string> portable_scheme_names();
// The entry of a label's scheme. Throws ConfigError naming `field` and
// listing the known names.
const SchemeEntry& find_scheme(std::string_view label, const std::string& field = "scheme");
// The scheme a label names, at its segment size if it gives one; throws
// ConfigError naming `field` if that scheme does not pipeline in segments.
std::unique_ptr<Scheme> make_scheme(std::string_view label, const SchemeOptions& options,
                                    const std::string& field = "scheme");

// A field of a scenario that only some schemes read: a run of none of them
// refuses it (runner/plan.cpp), and `gradex list` names its readers.
struct SchemeField {
  std::string_view pointer;  // in a scenario: "/segment_bytes"
  std::string_view flag;     // its flag: "--segment"
  std::string_view readers;  // the schemes that read it, described
  // Whether the scheme of `entry`, made as `instance`, reads it.
  bool (*reads)(const SchemeEntry& entry, const Scheme& instance);
};
const std::vector<SchemeField>& scheme_fields();
// The registered portable schemes that read `field`, in registry order,
// comma-separated (each made with 4 workers to ask).
std::string scheme_readers(const SchemeField& field);
// The registered portable schemes built on nodes (reads_ranks_per_node),
// comma-separated.
std::string node_scheme_names();

}  // namespace gradex
