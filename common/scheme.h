// What a gradient-exchange scheme is to the rest of gradex: code that runs
// on every endpoint of a group and leaves every worker with op(inputs), plus
// the model that says what it should cost (bus-bandwidth factor, traffic per
// endpoint), declared next to the code (nccl-tests' plug-in contract).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "common/collective.h"
#include "common/comm.h"
#include "common/dtype.h"
#include "common/reduce.h"
#include "common/topology.h"
#include "common/tuned_table.h"

namespace gradex {

// Where a parameter server's summation runs: on endpoints of its own, on
// the workers, or both (BytePS: one server on every worker plus `servers`
// dedicated ones, the key space split so that every NIC finishes together).
enum class ServerPlacement { dedicated, colocated, hybrid };

// Everything a scenario can say about how a scheme runs.
struct SchemeOptions {
  int workers = 1;
  // Pipelining granularity: messages are cut into segments of at most this
  // many bytes so that forwarding overlaps receiving.
  std::size_t segment_bytes = std::size_t{1} << 20;
  // Ring: all-reduce a longer buffer in slices of at most this many bytes,
  // each a reduce-scatter and an all-gather (0: the whole buffer at once).
  // Where memory is the bottleneck (ranks in one process) a slice of every
  // rank's buffer then stays in the last-level cache between the ranks that
  // write and read it; over links each slice pays the ring's 2(n-1)
  // latencies again, so it is off unless asked for.
  std::size_t slice_bytes = 0;
  // Hierarchical: ranks per node and the algorithms of its phases.
  int ranks_per_node = 1;
  std::string inter_algorithm = "ring";
  // Parameter server.
  int servers = 1;
  ServerPlacement placement = ServerPlacement::dedicated;
  // auto: what `gradex tune` measured, used instead of the cost model.
  std::shared_ptr<const TunedTable> tuned;
};

// The protocol a collective runs with (LinkProtocol) and what the model
// predicts for it: NCCL's tuner picks one per collective, by the time its
// model gives the whole collective with each, launch included.
struct ProtocolChoice {
  const char* protocol = nullptr;  // nullptr: no link offers a choice
  double launch_seconds = 0;       // the network's launch with that protocol
  double seconds = 0;              // launch plus the collective's model time
};

class Scheme {
 public:
  explicit Scheme(SchemeOptions options) : options_(std::move(options)) {}
  virtual ~Scheme() = default;

  const SchemeOptions& options() const { return options_; }
  int workers() const { return options_.workers; }
  // Endpoints the scheme runs on: the workers (ranks 0..workers-1) plus any
  // dedicated server endpoints after them.
  virtual int endpoints() const { return options_.workers; }

  // Runs on every endpoint of `comm` (comm.size() == endpoints()). Workers
  // pass their input and end with op over all workers' inputs, in place;
  // dedicated servers pass a phantom tensor with the same count and dtype.
  virtual void allreduce(Comm& comm, Tensor data, ReduceOp op) = 0;

  // The other collectives (common/collective.h): a scheme that provides one
  // overrides its function and says so here; the planner refuses a
  // collective a scheme does not provide, and the defaults throw. Each runs
  // on every endpoint as allreduce does, in place on the workers' buffers.
  virtual bool provides(Collective c) const { return c == Collective::all_reduce; }
  virtual void reduce_scatter(Comm& comm, Tensor data, ReduceOp op);
  virtual void all_gather(Comm& comm, Tensor data);
  virtual void broadcast(Comm& comm, Tensor data);  // from worker kBroadcastRoot
  // Runs collective `c` (op applies to those that reduce) as a caller of
  // the library would: on a modelled network (`network`, else the comm's
  // shaping) its messages take the protocol protocol_choice() picks, and
  // on a simulated one it first pays that protocol's launch, once, where a
  // scheme calling another's collective inside its own does not.
  void run(Comm& comm, Collective c, Tensor data, ReduceOp op,
           const Topology* network = nullptr);

  // nccl-tests' bus-bandwidth factor: busbw = algbw * factor, the same for
  // every scheme so that they are comparable (common/collective.h).
  double bus_factor(Collective c = Collective::all_reduce) const {
    return collective_bus_factor(c, workers());
  }
  // The link traffic `endpoint` must see for one all-reduce of `count`
  // elements of `dtype`; the runner and the tests compare it with the count.
  virtual Traffic expected_traffic(int endpoint, std::size_t count, DType dtype) const = 0;
  // The alpha-beta cost model (docs/architecture.md, Cost model) of one all-reduce of `bytes` on
  // `topology` (endpoints() endpoints): what the simulator must reproduce
  // where no two flows share a port, and the "model" column of reports.
  virtual double model_time(std::size_t bytes, const Topology& topology) const = 0;
  // The same two for any collective the scheme provides (`bytes` and
  // `count` are the whole buffer, as in nccl-tests); all_reduce: the two
  // above.
  virtual Traffic collective_traffic(Collective c, int endpoint, std::size_t count,
                                     DType dtype) const;
  virtual double collective_model_time(Collective c, std::size_t bytes,
                                       const Topology& topology) const;
  // What the model predicts for one call of run(): the collective's model
  // time plus the network's launch cost, with the protocol run() takes.
  // The reports' model column.
  double predicted_time(Collective c, std::size_t bytes, const Topology& topology) const {
    return protocol_choice(c, bytes, topology).seconds;
  }
  // The protocol among topology.protocol_choices() (through its switches
  // alone for a scheme that reduces in the network) with which the model
  // predicts `c` of `bytes` fastest (the first on a tie); remembered for
  // the network's serial, so that every rank's run() pays for one choice.
  ProtocolChoice protocol_choice(Collective c, std::size_t bytes, const Topology& topology) const;
  // Message-sized buffers a worker holds besides its own data, so that a
  // plan can refuse what will not fit in memory before it runs (auto's
  // copy of the input while it measures).
  virtual int scratch_buffers() const { return 0; }
  // Whether the endpoints after the workers are the ports of switches that
  // sum (Topology::switches), which the run's topology puts there: none;
  // one switch, inside the node or across nodes (in_network); a switch
  // inside every node, the workers' count of ports (in_network_tree); or
  // those and then one across the nodes, as many ports again
  // (in_network_hierarchical).
  enum class ReducingSwitches { none, one, per_node, per_node_and_across };
  virtual ReducingSwitches reducing_switches() const { return ReducingSwitches::none; }
  bool reduces_in_network() const { return reducing_switches() != ReducingSwitches::none; }
  // True when the scheme sends to one peer on several connections, one
  // per tag, each in posting order, as NCCL's channels and the two
  // directions of its trees do (Comm::connection_per_tag, set for each
  // run): the simulator then queues each tag's messages apart, so that one
  // hop's backlog does not hold up another's message to the same peer.
  // False: one connection per peer, as over a socket.
  virtual bool connection_per_tag() const { return false; }
  // True when options().segment_bytes shapes how the buffer moves (a
  // pipeline of segments): auto then also picks the segment size.
  virtual bool segmented() const { return false; }
  // True when every endpoint runs collective `c` on the same schedule
  // shifted by its rank (rank r talks only to r + k mod n, for the same
  // offsets k on every rank), so that on a network that repeats itself a
  // simulated subset of the ranks stands for all of them
  // (runner/simulate.h, "symmetric_subset").
  virtual bool symmetric(Collective /*c*/) const { return false; }
  // A scheme that delegates (auto): the scheme it ran at `bytes`; empty
  // for every other scheme, or before it has run at that size.
  virtual std::string chosen_for(std::size_t /*bytes*/) const { return {}; }

 private:
  SchemeOptions options_;
  // protocol_choice()'s choices on one network (a copy of the scheme
  // starts with none).
  struct ChoiceCache {
    ChoiceCache() = default;
    ChoiceCache(const ChoiceCache&) {}
    ChoiceCache& operator=(const ChoiceCache&) { return *this; }
    std::mutex mutex;
    std::uint64_t network = 0;  // Topology::serial
    std::map<std::pair<Collective, std::size_t>, ProtocolChoice> choices;
  };
  mutable ChoiceCache cache_;
};

// Splits `count` elements into `parts` contiguous blocks whose sizes differ
// by at most one (the first count % parts blocks get the extra element).
// Throws ConfigError naming "ranks_per_node" unless it divides the workers
// into whole nodes (the schemes with a level per node).
void check_whole_nodes(const SchemeOptions& options);

// Whether ZeRO's training can shard over `s`: it provides reduce_scatter
// and all_gather (a PS's dedicated servers replay the workers' exchanges
// in their order, train/trainer.cpp).
bool shards_training(const Scheme& s);

struct BlockSplit {
  std::size_t count;
  std::size_t parts;
  std::size_t size(std::size_t i) const { return count / parts + (i < count % parts ? 1 : 0); }
  std::size_t offset(std::size_t i) const {
    return i * (count / parts) + (i < count % parts ? i : count % parts);
  }
};

}  // namespace gradex
