// Built instead of mpi_schemes.cpp when no MPI library was found.
#include "bench/baselines/mpi_schemes.h"

namespace gradex {

std::vector<SchemeEntry> mpi_baseline_entries() { return {}; }

}  // namespace gradex
