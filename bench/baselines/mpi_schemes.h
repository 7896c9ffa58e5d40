// The MPI library's collectives as registry entries next to gradex's own
// schemes (when gradex is built with MPI; otherwise the list is empty):
//   mpi               MPI_Allreduce, whatever algorithm the library picks;
//   mpi_reduce_bcast  MPI_Reduce to rank 0 then MPI_Bcast: the central
//                     server pattern done by the library.
// They run only in an MPI job (mpirun ... gradex launch), ignore gradex's
// transport and link shaping, and move no bytes through gradex's Comm: the
// traffic they declare (and that gradex counts) is zero.
#pragma once

#include <vector>

#include "schemes/registry.h"

namespace gradex {

std::vector<SchemeEntry> mpi_baseline_entries();

}  // namespace gradex
