#include "allreduce/fold.h"

#include "common/cost_model.h"

namespace gradex {

std::vector<std::pair<int, int>> Fold::pairs_at(int d) const {
  std::vector<std::pair<int, int>> pairs;
  for (int v = 0; v < p; ++v) pairs.emplace_back(world(v), world(v ^ d));
  return pairs;
}

void run_folded(Comm& comm, Tensor data, ReduceOp combine, const Fold& fold, Tag fold_tag,
                Tag unfold_tag, const std::function<void(int v)>& core) {
  const int r = comm.rank();
  const int v = fold.core(r);
  if (v < 0) {
    comm.send(r + 1, data.data, data.bytes(), fold_tag);
    comm.recv(r + 1, data.data, data.bytes(), unfold_tag);
    return;
  }
  const bool folded_pair = r < 2 * fold.rem;
  if (folded_pair) {
    Request rq = comm.irecv_reduce(r - 1, data, combine, fold_tag);
    comm.wait(rq);
  }
  core(v);
  if (folded_pair) comm.send(r - 1, data.data, data.bytes(), unfold_tag);
}

double fold_model_time(const Fold& fold, const Topology& topology, double bytes) {
  if (fold.rem == 0) return 0;
  std::vector<std::pair<int, int>> pairs;
  for (int r = 0; r < 2 * fold.rem; r += 2) pairs.emplace_back(r, r + 1);
  return 2 * slowest_message(topology, pairs, bytes);
}

}  // namespace gradex
