// The MPI library's collectives as registry entries next to gradex's own
// schemes (when gradex is built with MPI; otherwise the list is empty):
//   mpi               MPI_Allreduce, whatever algorithm the library picks;
//   mpi_reduce_bcast  MPI_Reduce to rank 0 then MPI_Bcast: the central
//                     server pattern done by the library.
// They run only in an MPI job (mpirun ... gradex launch), ignore gradex's
// transport and link shaping, and move no bytes through gradex's Comm: the
// traffic they declare (and that gradex counts) is zero.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/scheme.h"

namespace gradex {

struct BaselineScheme {
  std::string name;
  std::string summary;
  std::function<std::unique_ptr<Scheme>(const SchemeOptions&)> make;
};

// Empty when gradex was built without MPI. The registry lists them with
// mpi_job_active() (baselines/mpi_job.h) as their availability predicate.
std::vector<BaselineScheme> mpi_baselines();

}  // namespace gradex
