#include "allreduce/fold.h"

#include "common/cost_model.h"

namespace gradex {

std::vector<std::pair<int, int>> Fold::pairs_at(int d) const {
  std::vector<std::pair<int, int>> pairs;
  for (int v = 0; v < p; ++v) pairs.emplace_back(world(v), world(v ^ d));
  return pairs;
}

void run_folded(Comm& comm, const FoldExchange& exchange, ReduceOp combine, const Fold& fold,
                Tag fold_tag, Tag unfold_tag, const std::function<void(int v)>& core) {
  const int r = comm.rank();
  const int v = fold.core(r);
  const Tensor& in = exchange.handed;
  const Tensor& out = exchange.returned;
  // Both ranks of a pair know both sizes: an empty range (a block of a
  // buffer shorter than n) is not sent at all.
  if (v < 0) {
    if (in.count) comm.send(r + 1, in.data, in.bytes(), fold_tag);
    if (out.count) comm.recv(r + 1, out.data, out.bytes(), unfold_tag);
    return;
  }
  const bool folded_pair = r < 2 * fold.rem;
  if (folded_pair && in.count) {
    Request rq = exchange.reduce_handed ? comm.irecv_reduce(r - 1, in, combine, fold_tag)
                                        : comm.irecv(r - 1, in.data, in.bytes(), fold_tag);
    comm.wait(rq);
  }
  core(v);
  if (folded_pair && out.count) comm.send(r - 1, out.data, out.bytes(), unfold_tag);
}

double fold_model_time(const Fold& fold, const Topology& topology, double handed,
                       double returned) {
  if (fold.rem == 0) return 0;
  std::vector<std::pair<int, int>> pairs;
  for (int r = 0; r < 2 * fold.rem; r += 2) pairs.emplace_back(r, r + 1);
  return slowest_message(topology, pairs, handed) + slowest_message(topology, pairs, returned);
}

}  // namespace gradex
