// OpenBLAS, opened the first time the MLP needs it (train/blas.cpp).
//
// Linked the usual way, Debian's OpenBLAS (its pthread build) starts a pool
// of threads as the process loads, before main: threads gradex never uses
// (each rank's products run on one thread), but whose mere existence makes
// libstdc++ count every std::shared_ptr reference with a locked
// instruction. A simulation of thousands of ranks, which runs on one
// thread, then spends up to a tenth of its time on those counts
// (results/README.md, "OpenBLAS opened on first use"). So gradex defines
// the BLAS entry points Eigen calls (sgemm_, sgemv_) itself and forwards
// them to the library, opened with one thread on the first call.
#pragma once

namespace gradex {

// Opens OpenBLAS with one thread, once; later calls return at once.
// Throws if the library cannot be opened (it names the file).
void open_blas();

}  // namespace gradex
