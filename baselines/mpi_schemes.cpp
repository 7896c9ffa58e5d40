#include "baselines/mpi_schemes.h"

#include <climits>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "baselines/mpi_job.h"
#include "baselines/mpi_runtime.h"
#include "common/cost_model.h"
#include "common/errors.h"

namespace gradex {

namespace {

// MPI has no 16-bit float types: those travel as 2-byte opaque elements
// reduced by gradex's own kernels through user-defined (commutative) ops.
template <DType D, ReduceOp Op>
void reduce_16bit(void* in, void* inout, int* len, MPI_Datatype*) {
  reduce_into(inout, in, static_cast<std::size_t>(*len), D, Op);
}

MPI_Datatype two_bytes() {
  static MPI_Datatype type = [] {
    MPI_Datatype t;
    mpi_check(MPI_Type_contiguous(2, MPI_BYTE, &t), "MPI_Type_contiguous");
    mpi_check(MPI_Type_commit(&t), "MPI_Type_commit");
    return t;
  }();
  return type;
}

template <DType D>
MPI_Op user_op(ReduceOp op) {
  auto make = [](MPI_User_function* fn) {
    MPI_Op o;
    mpi_check(MPI_Op_create(fn, /*commute=*/1, &o), "MPI_Op_create");
    return o;
  };
  static const MPI_Op sum = make(&reduce_16bit<D, ReduceOp::sum>);
  static const MPI_Op min = make(&reduce_16bit<D, ReduceOp::min>);
  static const MPI_Op max = make(&reduce_16bit<D, ReduceOp::max>);
  return op == ReduceOp::min ? min : op == ReduceOp::max ? max : sum;
}

struct MpiTyped {
  MPI_Datatype type;
  MPI_Op op;
};

// `op` is already the combining op (avg arrives as sum).
MpiTyped mpi_typed(DType dtype, ReduceOp op) {
  const MPI_Op builtin = op == ReduceOp::min ? MPI_MIN : op == ReduceOp::max ? MPI_MAX : MPI_SUM;
  switch (dtype) {
    case DType::f32: return {MPI_FLOAT, builtin};
    case DType::f64: return {MPI_DOUBLE, builtin};
    case DType::i32: return {MPI_INT, builtin};
    case DType::f16: return {two_bytes(), user_op<DType::f16>(op)};
    case DType::bf16: return {two_bytes(), user_op<DType::bf16>(op)};
  }
  throw InvariantError("no MPI type for this dtype");
}

// The BlockSplit of a buffer as MPI's int counts and displacements.
struct Blocks {
  std::vector<int> counts;
  std::vector<int> displs;
  Blocks(const Tensor& data, int n) {
    const BlockSplit split{data.count, static_cast<std::size_t>(n)};
    for (int r = 0; r < n; ++r) {
      counts.push_back(static_cast<int>(split.size(static_cast<std::size_t>(r))));
      displs.push_back(static_cast<int>(split.offset(static_cast<std::size_t>(r))));
    }
  }
};

class MpiBaseline : public Scheme {
 public:
  using Scheme::Scheme;

  void allreduce(Comm& comm, Tensor data, ReduceOp op) override {
    const Group g = group(comm, data);
    const MpiTyped t = mpi_typed(data.dtype, combining_op(op));
    collective(g.comm, data, t, comm.timeout());
    finish_reduce(data, op, workers());
  }

  // Nothing crosses gradex's own links.
  Traffic expected_traffic(int, std::size_t, DType) const override { return {}; }

 protected:
  struct Group {
    MPI_Comm comm;
    int rank;
  };
  // The MPI communicator over the workers, checked against gradex's ranks.
  Group group(Comm& comm, const Tensor& data) const {
    GRADEX_ENFORCE_EQ(comm.size(), workers(), "the MPI baselines run on the workers only");
    GRADEX_ENFORCE_LE(data.count, std::size_t{INT_MAX}, "MPI counts are ints");
    Group g{mpi_prefix_comm(workers()), -1};
    mpi_check(MPI_Comm_rank(g.comm, &g.rank), "MPI_Comm_rank");
    // gradex takes its rank from OMPI_COMM_WORLD_RANK, so they agree unless
    // GRADEX_RANK overrode it; then rank 0's buffer would be someone else's.
    GRADEX_ENFORCE_EQ(g.rank, comm.rank(), "MPI rank vs gradex rank (unset GRADEX_RANK)");
    return g;
  }

  virtual void collective(MPI_Comm group, Tensor data, const MpiTyped& t,
                          std::chrono::milliseconds timeout) = 0;

  // log2 n rounded up: the rounds of a binomial tree.
  double rounds() const { return std::ceil(std::log2(std::max(1, workers()))); }
};

// MPI_Allreduce, and the library's other collectives under the same name:
// MPI_Reduce_scatter, MPI_Allgatherv and MPI_Bcast, on gradex's block
// layout (BlockSplit: block r of the buffer is rank r's).
class MpiAllreduce final : public MpiBaseline {
 public:
  using MpiBaseline::MpiBaseline;

  bool provides(Collective) const override { return true; }

  void reduce_scatter(Comm& comm, Tensor data, ReduceOp op) override {
    const Group g = group(comm, data);
    const Blocks b(data, workers());
    const MpiTyped t = mpi_typed(data.dtype, combining_op(op));
    {
      const MpiDeadline deadline(comm.timeout(), "MPI_Reduce_scatter");
      mpi_check(MPI_Reduce_scatter(MPI_IN_PLACE, data.data, b.counts.data(), t.type, t.op,
                                   g.comm),
                "MPI_Reduce_scatter");
    }
    // In place, MPI leaves rank r's block at the start of the buffer.
    const Tensor mine = data.slice(static_cast<std::size_t>(b.displs[g.rank]),
                                   static_cast<std::size_t>(b.counts[g.rank]));
    if (mine.count > 0) std::memmove(mine.data, data.data, mine.bytes());  // (null when empty)
    finish_reduce(mine, op, workers());
  }

  void all_gather(Comm& comm, Tensor data) override {
    const Group g = group(comm, data);
    const Blocks b(data, workers());
    const MpiTyped t = mpi_typed(data.dtype, ReduceOp::sum);
    const MpiDeadline deadline(comm.timeout(), "MPI_Allgatherv");
    mpi_check(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data.data, b.counts.data(),
                             b.displs.data(), t.type, g.comm),
              "MPI_Allgatherv");
  }

  void broadcast(Comm& comm, Tensor data) override {
    const Group g = group(comm, data);
    const MpiTyped t = mpi_typed(data.dtype, ReduceOp::sum);
    const MpiDeadline deadline(comm.timeout(), "MPI_Bcast");
    mpi_check(MPI_Bcast(data.data, static_cast<int>(data.count), t.type, kBroadcastRoot, g.comm),
              "MPI_Bcast");
  }

  // Reduce-scatter and all-gather: one ring phase, (n-1) steps of S/n,
  // which the libraries' large-message algorithms approach. Broadcast:
  // MPICH's long-message algorithm, a binomial scatter (log2 n rounds of
  // S/2, S/4, ...) and a ring all-gather.
  double collective_model_time(Collective c, std::size_t bytes,
                               const Topology& topology) const override {
    const int n = workers();
    if (c == Collective::all_reduce) return model_time(bytes, topology);
    if (n <= 1 || bytes == 0) return 0;
    std::vector<int> ring(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) ring[static_cast<std::size_t>(r)] = r;
    const double s = static_cast<double>(bytes);
    const double phase = rings_time(topology, {ring}, s / n, n - 1);
    if (c != Collective::broadcast) return phase;
    double scatter = 0;
    for (int k = 1; k <= static_cast<int>(rounds()); ++k) {
      scatter += slowest_message(topology, {{1, 0}}, s / std::pow(2.0, k));
    }
    return scatter + phase;
  }
  Traffic collective_traffic(Collective, int, std::size_t, DType) const override { return {}; }

  // What a bandwidth-optimal all-reduce achieves (the ring's 2 (n-1) steps
  // of S/n), which a well-tuned MPI_Allreduce approaches on large messages.
  double model_time(std::size_t bytes, const Topology& topology) const override {
    return ring_allreduce_bound(workers(), bytes, topology);
  }

 private:
  void collective(MPI_Comm group, Tensor data, const MpiTyped& t,
                  std::chrono::milliseconds timeout) override {
    const MpiDeadline deadline(timeout, "MPI_Allreduce");
    mpi_check(MPI_Allreduce(MPI_IN_PLACE, data.data, static_cast<int>(data.count), t.type, t.op,
                            group),
              "MPI_Allreduce");
  }
};

class MpiReduceBcast final : public MpiBaseline {
 public:
  using MpiBaseline::MpiBaseline;

  // Binomial trees for both halves (the textbook choice; libraries pipeline
  // large messages, so this is an upper estimate there).
  double model_time(std::size_t bytes, const Topology& topology) const override {
    return binomial_reduce_bcast_time(workers(), bytes, topology);
  }

 private:
  void collective(MPI_Comm group, Tensor data, const MpiTyped& t,
                  std::chrono::milliseconds timeout) override {
    int rank = 0;
    mpi_check(MPI_Comm_rank(group, &rank), "MPI_Comm_rank");
    const int count = static_cast<int>(data.count);
    {
      const MpiDeadline deadline(timeout, "MPI_Reduce");
      mpi_check(MPI_Reduce(rank == 0 ? MPI_IN_PLACE : data.data, rank == 0 ? data.data : nullptr,
                           count, t.type, t.op, 0, group),
                "MPI_Reduce");
    }
    const MpiDeadline deadline(timeout, "MPI_Bcast");
    mpi_check(MPI_Bcast(data.data, count, t.type, 0, group), "MPI_Bcast");
  }
};

template <typename T>
std::function<std::unique_ptr<Scheme>(const SchemeOptions&)> in_mpi_job(const char* name) {
  return [name](const SchemeOptions& o) -> std::unique_ptr<Scheme> {
    if (!mpi_job_active()) {
      throw ConfigError("schemes", std::string("'") + name +
                                       "' calls the MPI library and runs only in processes "
                                       "started by mpirun: mpirun -n N gradex launch X.json");
    }
    return std::make_unique<T>(o);
  };
}

}  // namespace

std::vector<BaselineScheme> mpi_baselines() {
  std::vector<BaselineScheme> r;
  r.push_back({"mpi",
               "the MPI library's MPI_Allreduce, MPI_Reduce_scatter, MPI_Allgatherv, MPI_Bcast "
               "(baseline; needs mpirun)",
               in_mpi_job<MpiAllreduce>("mpi")});
  r.push_back({"mpi_reduce_bcast",
               "MPI_Reduce to rank 0 + MPI_Bcast: the central-server pattern (baseline; needs "
               "mpirun)",
               in_mpi_job<MpiReduceBcast>("mpi_reduce_bcast")});
  return r;
}

}  // namespace gradex
