// What the MPI baselines need from the job beyond joining it: communicators
// over the first n ranks and a deadline on every blocking MPI call. Only the
// MPI-built sources include this header (it includes <mpi.h>).
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace gradex {

// MPI_COMM_WORLD's ranks 0..n-1, created on first use (collective over those
// ranks only) and freed when the job is finalised.
MPI_Comm mpi_prefix_comm(int n);

// MPI's blocking calls take no timeout. While a guard lives, a watchdog
// thread ends this process with a message naming `what` and the rank if the
// call has not returned after `timeout`; mpirun then ends the other ranks.
class MpiDeadline {
 public:
  MpiDeadline(std::chrono::milliseconds timeout, const std::string& what);
  ~MpiDeadline();
  MpiDeadline(const MpiDeadline&) = delete;
  MpiDeadline& operator=(const MpiDeadline&) = delete;

 private:
  std::uint64_t ticket_ = 0;  // the job's watchdog's (common/watchdog.h)
};

// Fails with an InvariantError naming `what` on a non-success MPI return code.
void mpi_check(int code, const char* what);

}  // namespace gradex
