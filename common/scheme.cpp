#include "common/scheme.h"

#include <string>

#include "common/errors.h"

namespace gradex {

namespace {
[[noreturn]] void not_provided(Collective c) {
  throw Error("this scheme does not provide " + std::string(collective_name(c)));
}

// Only a virtual clock pays the launch: a run on real threads or processes
// pays its own start-up in real time, and could not sleep a few
// microseconds anyway (the system wakes a sleeper tens of them late).
void pay_launch(Comm& comm) {
  Clock& clock = comm.clock();
  if (!clock.is_virtual()) return;
  if (const double launch = comm.launch_seconds(); launch > 0) {
    clock.sleep_until(clock.now() + launch);
  }
}

}  // namespace

void Scheme::reduce_scatter(Comm&, Tensor, ReduceOp) { not_provided(Collective::reduce_scatter); }
void Scheme::all_gather(Comm&, Tensor) { not_provided(Collective::all_gather); }
void Scheme::broadcast(Comm&, Tensor) { not_provided(Collective::broadcast); }

void Scheme::run(Comm& comm, Collective c, Tensor data, ReduceOp op) {
  pay_launch(comm);
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
