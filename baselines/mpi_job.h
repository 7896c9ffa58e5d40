// The MPI library as a baseline. gradex's own schemes move their bytes over
// gradex's transports; the baselines in this folder call the MPI library's
// collectives instead, so one table shows both on the same processes. They
// need an MPI job: processes started by mpirun, which `gradex launch` joins
// (MPI_Init) when it finds itself started that way.
#pragma once

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
