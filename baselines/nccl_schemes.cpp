#include "baselines/nccl_schemes.h"

#include <memory>

#include "common/cost_model.h"
#include "common/errors.h"
#include "gpu/check.h"
#include "gpu/cuda.h"
#include "gpu/nccl_access.h"

namespace gradex {

namespace {

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::f32: return ncclFloat32;
    case DType::f64: return ncclFloat64;
    case DType::f16: return ncclFloat16;
    case DType::bf16: return ncclBfloat16;
    case DType::i32: return ncclInt32;
  }
  throw InvariantError("no NCCL type for this dtype");
}

// avg arrives as sum (combining_op) and is divided once after, as every
// gradex scheme does, so the rows' rounding is comparable.
ncclRedOp_t nccl_op(ReduceOp op) {
  switch (combining_op(op)) {
    case ReduceOp::min: return ncclMin;
    case ReduceOp::max: return ncclMax;
    default: return ncclSum;
  }
}

// The nccl transport's communicator behind `comm`: the group's own, or a
// launched run's sub-group of it, which must then be the whole group (a
// collective on the group's communicator involves every rank of it).
gpu::NcclAccess& access(Comm& comm) {
  Comm* c = &comm;
  if (auto* sub = dynamic_cast<SubComm*>(c)) c = &sub->parent();
  auto* nccl = dynamic_cast<gpu::NcclAccess*>(c);
  if (nccl == nullptr) {
    throw ConfigError("transport", "the NCCL baselines run on \"transport\": \"nccl\"");
  }
  int ranks = 0;
  gpu::nccl_check(ncclCommCount(nccl->group_comm(), &ranks), "ncclCommCount");
  if (ranks != comm.size()) {
    throw ConfigError("workers", "the NCCL baselines run on the whole launched group (" +
                                     std::to_string(ranks) + " ranks), and this run has " +
                                     std::to_string(comm.size()) +
                                     ": launch as many processes as workers");
  }
  return *nccl;
}

class NcclBaseline : public Scheme {
 public:
  using Scheme::Scheme;

  void allreduce(Comm& comm, Tensor data, ReduceOp op) override {
    gpu::NcclAccess& nccl_comm = access(comm);
    auto* nccl = &nccl_comm;
    collective(*nccl, comm.rank(), data, nccl_type(data.dtype), nccl_op(op));
    nccl->wait_collective(what());
    finish_reduce(data, op, workers());
  }

  // Nothing crosses gradex's own Comm.
  Traffic expected_traffic(int, std::size_t, DType) const override { return {}; }

 protected:
  virtual const char* what() const = 0;
  virtual void collective(gpu::NcclAccess& nccl, int rank, Tensor data, ncclDataType_t type,
                          ncclRedOp_t op) = 0;
};

class NcclAllreduce final : public NcclBaseline {
 public:
  using NcclBaseline::NcclBaseline;
  double model_time(std::size_t bytes, const Topology& topology) const override {
    return ring_allreduce_bound(workers(), bytes, topology);
  }

 private:
  const char* what() const override { return "ncclAllReduce"; }
  void collective(gpu::NcclAccess& nccl, int, Tensor data, ncclDataType_t type,
                  ncclRedOp_t op) override {
    gpu::nccl_check(ncclAllReduce(data.data, data.data, data.count, type, op, nccl.group_comm(),
                                  nccl.collective_stream()),
                    what());
  }
};

class NcclReduceBcast final : public NcclBaseline {
 public:
  using NcclBaseline::NcclBaseline;
  double model_time(std::size_t bytes, const Topology& topology) const override {
    return binomial_reduce_bcast_time(workers(), bytes, topology);
  }

 private:
  const char* what() const override { return "ncclReduce + ncclBroadcast"; }
  void collective(gpu::NcclAccess& nccl, int, Tensor data, ncclDataType_t type,
                  ncclRedOp_t op) override {
    // Both on one stream: the broadcast starts once the root has the sum.
    gpu::nccl_check(ncclReduce(data.data, data.data, data.count, type, op, 0, nccl.group_comm(),
                               nccl.collective_stream()),
                    "ncclReduce");
    gpu::nccl_check(ncclBroadcast(data.data, data.data, data.count, type, 0, nccl.group_comm(),
                                  nccl.collective_stream()),
                    "ncclBroadcast");
  }
};

template <typename T>
std::function<std::unique_ptr<Scheme>(const SchemeOptions&)> with_gpu(const char* name) {
  return [name](const SchemeOptions& o) -> std::unique_ptr<Scheme> {
    require_cuda_device("schemes", std::string("'") + name + "' (NCCL's own collective)");
    return std::make_unique<T>(o);
  };
}

}  // namespace

std::vector<BaselineScheme> nccl_baselines() {
  std::vector<BaselineScheme> r;
  r.push_back({"nccl_allreduce",
               "NCCL's ncclAllReduce (baseline; needs \"transport\": \"nccl\" and a GPU per rank)",
               with_gpu<NcclAllreduce>("nccl_allreduce")});
  r.push_back({"nccl_reduce_bcast",
               "ncclReduce to rank 0 + ncclBroadcast: the central-server pattern (baseline; needs "
               "\"transport\": \"nccl\" and a GPU per rank)",
               with_gpu<NcclReduceBcast>("nccl_reduce_bcast")});
  return r;
}

bool nccl_baselines_available(std::string* why_not) { return cuda_device_count(why_not) > 0; }

}  // namespace gradex
