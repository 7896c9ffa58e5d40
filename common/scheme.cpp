#include "common/scheme.h"

#include <string>
#include <vector>

#include "common/errors.h"

namespace gradex {

namespace {
[[noreturn]] void not_provided(Collective c) {
  throw Error("this scheme does not provide " + std::string(collective_name(c)));
}

// Only a virtual clock pays the launch: a run on real threads or processes
// pays its own start-up in real time, and could not sleep a few
// microseconds anyway (the system wakes a sleeper tens of them late).
void pay_launch(Comm& comm, double launch) {
  Clock& clock = comm.clock();
  if (clock.is_virtual() && launch > 0) clock.sleep_until(clock.now() + launch);
}

// Sets how the comm times one run's messages (its protocol, and a
// connection per tag or not), and puts back what was there however the
// run ends.
class CollectiveScope {
 public:
  CollectiveScope(Comm& comm, const char* protocol, bool connection_per_tag)
      : comm_(comm),
        protocol_before_(comm.collective_protocol()),
        per_tag_before_(comm.connection_per_tag()) {
    comm_.set_collective_protocol(protocol);
    comm_.set_connection_per_tag(connection_per_tag);
  }
  ~CollectiveScope() {
    comm_.set_collective_protocol(protocol_before_);
    comm_.set_connection_per_tag(per_tag_before_);
  }
  CollectiveScope(const CollectiveScope&) = delete;
  CollectiveScope& operator=(const CollectiveScope&) = delete;

 private:
  Comm& comm_;
  const char* protocol_before_;
  bool per_tag_before_;
};

}  // namespace

ProtocolChoice Scheme::protocol_choice(Collective c, std::size_t bytes,
                                       const Topology& topology) const {
  const std::vector<const char*> names = topology.protocol_choices(reduces_in_network());
  if (names.empty()) {
    const double launch = topology.launch_seconds();
    return {nullptr, launch, launch + collective_model_time(c, bytes, topology)};
  }
  const auto key = std::make_pair(c, bytes);
  {
    std::lock_guard lock(cache_.mutex);
    if (cache_.network != topology.serial()) {
      cache_.network = topology.serial();
      cache_.choices.clear();
    }
    if (auto it = cache_.choices.find(key); it != cache_.choices.end()) return it->second;
  }
  ProtocolChoice best;
  for (const char* name : names) {
    const Topology pinned = topology.with_protocol(name);
    const double launch = pinned.launch_seconds();
    const double seconds = launch + collective_model_time(c, bytes, pinned);
    if (best.protocol == nullptr || seconds < best.seconds) best = {name, launch, seconds};
  }
  std::lock_guard lock(cache_.mutex);
  if (cache_.network == topology.serial()) cache_.choices.emplace(key, best);
  return best;
}

void Scheme::reduce_scatter(Comm&, Tensor, ReduceOp) { not_provided(Collective::reduce_scatter); }
void Scheme::all_gather(Comm&, Tensor) { not_provided(Collective::all_gather); }
void Scheme::broadcast(Comm&, Tensor) { not_provided(Collective::broadcast); }

void Scheme::run(Comm& comm, Collective c, Tensor data, ReduceOp op, const Topology* network) {
  if (network == nullptr) network = comm.shaping();
  const ProtocolChoice choice =
      network == nullptr ? ProtocolChoice{}
      : network->protocol_choices(reduces_in_network()).empty()
          ? ProtocolChoice{nullptr, network->launch_seconds(), 0}
          : protocol_choice(c, data.bytes(), *network);
  const CollectiveScope scope(comm, choice.protocol, connection_per_tag());
  pay_launch(comm, choice.launch_seconds);
  switch (c) {
    case Collective::all_reduce: return allreduce(comm, data, op);
    case Collective::reduce_scatter: return reduce_scatter(comm, data, op);
    case Collective::all_gather: return all_gather(comm, data);
    case Collective::broadcast: return broadcast(comm, data);
  }
  not_provided(c);
}

Traffic Scheme::collective_traffic(Collective c, int endpoint, std::size_t count,
                                   DType dtype) const {
  if (c != Collective::all_reduce) not_provided(c);
  return expected_traffic(endpoint, count, dtype);
}

double Scheme::collective_model_time(Collective c, std::size_t bytes,
                                     const Topology& topology) const {
  if (c != Collective::all_reduce) not_provided(c);
  return model_time(bytes, topology);
}

void check_whole_nodes(const SchemeOptions& options) {
  const int g = options.ranks_per_node;
  if (g < 1 || options.workers % g != 0) {
    throw ConfigError("ranks_per_node", "must divide the number of workers (" +
                                            std::to_string(options.workers) + "), got " +
                                            std::to_string(g));
  }
}

bool shards_training(const Scheme& s) {
  return s.provides(Collective::reduce_scatter) && s.provides(Collective::all_gather);
}

}  // namespace gradex
