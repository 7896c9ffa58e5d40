// The MPI library as a baseline. gradex's own schemes move their bytes over
// gradex's transports; the baselines in this folder call the MPI library's
// collectives instead, so one table shows both on the same processes. They
// need an MPI job: processes started by mpirun, which `gradex launch` joins
// (MPI_Init) when it finds itself started that way.
#pragma once

#include <chrono>
#include <string>

namespace gradex {

// gradex was built against an MPI library (Debian's OpenMPI).
bool mpi_built();
// The MPI library's own version line ("Open MPI v4.1.4, ..."); empty when
// gradex was built without MPI.
std::string mpi_library_version();
// This process has joined an MPI job and not yet left it.
bool mpi_job_active();

// Membership of the MPI job this process was started in, for its lifetime.
// finalize() leaves it cleanly and is collective: every rank calls it. An
// error path that skips it leaves the job unfinalised, and mpirun then ends
// the other ranks (the launcher's own fault handling).
// Every rank of the MPI job gets rank 0's `text` (MPI_Bcast over
// MPI_COMM_WORLD), within `timeout` (a watchdog ends the process past it):
// how a launched run learns rank 0's rendezvous under mpirun when none was
// given. Needs an active job.
std::string mpi_broadcast_from_rank0(const std::string& text, std::chrono::milliseconds timeout);

class MpiJob {
 public:
  MpiJob();  // throws ConfigError when gradex was built without MPI
  ~MpiJob();
  MpiJob(const MpiJob&) = delete;
  MpiJob& operator=(const MpiJob&) = delete;
  void finalize();

 private:
  bool finalized_ = false;
};

}  // namespace gradex
