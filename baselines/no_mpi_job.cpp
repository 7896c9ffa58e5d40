// Built instead of mpi_job.cpp when no MPI library was found: the baselines
// are absent from the registry and no process ever joins an MPI job.
#include "baselines/mpi_job.h"

#include "common/errors.h"

namespace gradex {

bool mpi_built() { return false; }
std::string mpi_library_version() { return {}; }
bool mpi_job_active() { return false; }

std::string mpi_broadcast_from_rank0(const std::string&, std::chrono::milliseconds) {
  throw ConfigError("GRADEX_RENDEZVOUS", "missing, and gradex was built without MPI to learn it "
                                         "from mpirun");
}

MpiJob::MpiJob() {
  throw ConfigError("mpirun", "gradex was built without MPI (install libopenmpi-dev and rebuild)");
}
MpiJob::~MpiJob() = default;
void MpiJob::finalize() {}

}  // namespace gradex
