// A scenario: what to run, on how many ranks, over what network, at which
// sizes, and where to write the results. Parsed strictly: unknown keys and
// wrong types are errors that name the JSON pointer of the value.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/comm.h"
#include "common/dtype.h"
#include "common/reduce.h"
#include "common/scheme.h"
#include "common/topology.h"
#include "common/tuned_table.h"
#include "config/workload.h"

namespace gradex {

// Real ranks are threads or processes of this machine; simulated ranks are
// fibers that cost almost nothing, so the simulator takes many more.
inline constexpr int kMaxRealRanks = 1024;
inline constexpr int kMaxSimulatedRanks = 65536;

struct NetworkConfig {
  bool shaped = false;
  LinkSpec intra_node;  // unlimited unless given
  LinkSpec inter_node;
  bool nic_per_node = false;
  std::string node;  // the node preset the network came from, if any
  // The switches that sum, for the in_network schemes: the one inside each
  // node (network.node_switch, or the node preset's NVLS switch) and the
  // one across nodes (network.switch, which on one node stands for the
  // node's); unlimited when not given.
  LinkSpec node_switch;
  bool node_switch_given = false;  // network.node_switch was written
  LinkSpec reducing_switch;
  bool switch_given = false;  // network.switch was written
  // network.spine: a second, leaf/spine tier (common/topology.h);
  // nodes_per_leaf 0 when not given.
  int nodes_per_leaf = 0;
  double oversubscription = 1;
};

struct Scenario {
  std::string name;
  std::string description;
  std::vector<int> workers;  // one run per entry (a sweep when several)
  int ranks_per_node = 1;
  std::string transport = "inproc";
  // Where the benchmark's buffers live: "cpu", or "cuda" (device memory,
  // moved by "transport": "nccl", which is its default there).
  std::string device = "cpu";
  bool device_given = false;  // "device" (or --device) was written
  std::vector<std::string> schemes;  // empty until resolved; "all" expands in the runner
  bool all_schemes = false;
  // What the benchmark runs (nccl-tests' all_reduce_perf, reduce_scatter_perf,
  // ...): sizes are the whole buffer in every case.
  Collective collective = Collective::all_reduce;
  // Set by the sweep over "collective": then a named scheme runs at the
  // points whose collective it provides (it must provide one of them).
  bool collective_swept = false;
  std::vector<std::size_t> sizes;  // message sizes in bytes
  DType dtype = DType::f32;
  ReduceOp op = ReduceOp::sum;
  int warmup_iters = 2;
  int iters = 5;
  std::size_t segment_bytes = std::size_t{1} << 20;
  std::size_t slice_bytes = 0;  // ring: SchemeOptions::slice_bytes
  std::chrono::milliseconds timeout = kDefaultTimeout;
  // inproc and tcp: how long a wait polls (yielding) before it sleeps.
  std::chrono::microseconds spin = kDefaultSpin;
  // PS servers: dedicated ones for ps, ps_pipelined and PS training, the
  // extra ones of ps_hybrid, those spread over the workers for ps_colocated
  // (each PS scheme's name fixes where its servers run).
  int ps_servers = 1;
  bool ps_servers_given = false;  // ps.servers (or --servers) was written
  bool segment_given = false;     // segment_bytes (or --segment) was written
  bool inter_given = false;       // hierarchical.inter was written
  bool ranks_per_node_given = false;  // ranks_per_node (or --ranks-per-node) was written
  // The last worker starts every timed iteration (every training step)
  // this many milliseconds late: a straggler, on its rank's clock.
  double straggler_ms = 0;
  // The simulator runs only this many of each run's ranks and lets them
  // stand for all (runner/simulate.h: exact for a symmetric scheme on a
  // network that repeats itself; runner/plan.cpp checks that it is);
  // 0: every rank is simulated.
  int symmetric_subset = 0;
  std::string inter_algorithm = "ring";
  // "auto": {"table": PATH}: a table from `gradex tune` for the auto
  // scheme, read when the plan is made (runner/plan.cpp).
  std::string auto_table_path;
  std::shared_ptr<const TunedTable> auto_table;
  NetworkConfig network;
  std::string output;  // folder for results.csv / results.json; empty: none
  // "workload": {"kind": "train", ...}: train instead of the all-reduce
  // benchmark; `sizes`, `dtype`, `op` and the iteration counts then do not
  // apply and are rejected.
  std::optional<TrainWorkload> training;
  nlohmann::json source;  // the scenario as written, embedded in results
};

// Where a scenario's buffers live when it does not say: on the GPUs for
// the nccl transport, else in host memory.
std::string default_device(const std::string& transport);

// The simulator runs each size once: it is deterministic, so every
// iteration would take the same virtual time. An "iters" other than 1 or a
// "warmup_iters" other than 0 does not apply to it: ConfigError naming the
// field, when given.
void check_simulated_iterations(const Scenario& s, bool iters_given, bool warmup_given);

// Throws ConfigError naming the JSON pointer of the first bad value.
Scenario parse_scenario(const nlohmann::json& document);
// Reads and parses a file; JSON syntax errors name the file, line and column.
Scenario load_scenario(const std::filesystem::path& path);

// The scheme options and the shaping topology of one run of the scenario.
SchemeOptions scheme_options(const Scenario& scenario, int workers);
Topology scenario_topology(const Scenario& scenario, int workers, int endpoints);
// The topology `scheme` runs on with `workers`: for a scheme that reduces
// in the network, its extra endpoints are the switch's ports, on the
// workers' node when they share one (NVLS), else on nodes of their own
// (SHARP), at the scenario's reducing switch. Throws ConfigError naming
// /network/switch when a shaped run has no switch to give them.
Topology scenario_topology(const Scenario& scenario, const Scheme& scheme, int workers);

}  // namespace gradex
