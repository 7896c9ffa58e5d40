// Built instead of mpi_schemes.cpp when no MPI library was found.
#include "baselines/mpi_schemes.h"

namespace gradex {

std::vector<BaselineScheme> mpi_baselines() { return {}; }

}  // namespace gradex
