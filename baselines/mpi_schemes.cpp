#include "baselines/mpi_schemes.h"

#include <climits>
#include <cmath>
#include <memory>

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

class MpiBaseline : public Scheme {
 public:
  using Scheme::Scheme;

  void allreduce(Comm& comm, Tensor data, ReduceOp op) override {
    GRADEX_ENFORCE_EQ(comm.size(), workers(), "the MPI baselines run on the workers only");
    GRADEX_ENFORCE_LE(data.count, std::size_t{INT_MAX}, "MPI counts are ints");
    MPI_Comm group = mpi_prefix_comm(workers());
    int mpi_rank = -1;
    mpi_check(MPI_Comm_rank(group, &mpi_rank), "MPI_Comm_rank");
    // gradex takes its rank from OMPI_COMM_WORLD_RANK, so they agree unless
    // GRADEX_RANK overrode it; then rank 0's buffer would be someone else's.
    GRADEX_ENFORCE_EQ(mpi_rank, comm.rank(), "MPI rank vs gradex rank (unset GRADEX_RANK)");
    const MpiTyped t = mpi_typed(data.dtype, combining_op(op));
    collective(group, data, t, comm.timeout());
    finish_reduce(data, op, workers());
  }

  // Nothing crosses gradex's own links.
  Traffic expected_traffic(int, std::size_t, DType) const override { return {}; }

 protected:
  virtual void collective(MPI_Comm group, Tensor data, const MpiTyped& t,
                          std::chrono::milliseconds timeout) = 0;

  // log2 n rounded up: the rounds of a binomial tree.
  double rounds() const { return std::ceil(std::log2(std::max(1, workers()))); }
};

class MpiAllreduce final : public MpiBaseline {
 public:
  using MpiBaseline::MpiBaseline;

  // What a bandwidth-optimal all-reduce achieves (the ring's 2 (n-1) steps
  // of S/n), which a well-tuned MPI_Allreduce approaches on large messages.
  double model_time(std::size_t bytes, const Topology& topology) const override {
    const int n = workers();
    if (n <= 1 || bytes == 0) return 0;
    std::vector<std::pair<int, int>> hops;
    for (int r = 0; r < n; ++r) hops.emplace_back(r, (r + 1) % n);
    return 2.0 * (n - 1) * slowest_message(topology, hops, static_cast<double>(bytes) / n);
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
    if (workers() <= 1 || bytes == 0) return 0;
    return 2 * rounds() * slowest_message(topology, {{1, 0}}, static_cast<double>(bytes));
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
  r.push_back({"mpi", "the MPI library's MPI_Allreduce (baseline; needs mpirun)",
               in_mpi_job<MpiAllreduce>("mpi")});
  r.push_back({"mpi_reduce_bcast",
               "MPI_Reduce to rank 0 + MPI_Bcast: the central-server pattern (baseline; needs "
               "mpirun)",
               in_mpi_job<MpiReduceBcast>("mpi_reduce_bcast")});
  return r;
}

}  // namespace gradex
