#include "train/blas.h"

#include <dlfcn.h>

#include <Eigen/Core>  // declares the BLAS entry points Eigen calls (EIGEN_USE_BLAS)
#include <string>

#include "common/errors.h"

namespace gradex {
namespace {

// OpenBLAS's own signatures (its sgemm_ and sgemv_ return nothing; Eigen
// declares them returning int and ignores the value).
using Sgemm = void (*)(const char*, const char*, const int*, const int*, const int*, const float*,
                       const float*, const int*, const float*, const int*, const float*, float*,
                       const int*);
using Sgemv = void (*)(const char*, const int*, const int*, const float*, const float*, const int*,
                       const float*, const int*, const float*, float*, const int*);
using SetThreads = void (*)(int);

struct Blas {
  Sgemm sgemm = nullptr;
  Sgemv sgemv = nullptr;
};

template <class F>
F symbol(void* library, const char* name) {
  void* address = dlsym(library, name);
  if (address == nullptr) {
    throw Error(detail::concat("OpenBLAS (", GRADEX_OPENBLAS_LIBRARY, ") has no ", name));
  }
  return reinterpret_cast<F>(address);
}

const Blas& blas() {
  // A function-local static: opened once, whichever thread asks first.
  static const Blas opened = [] {
    void* library = dlopen(GRADEX_OPENBLAS_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      const char* why = dlerror();
      // Not the user's input, nor a bug: the machine lacks the library.
      throw Error(detail::concat("cannot open OpenBLAS (", GRADEX_OPENBLAS_LIBRARY, "): ",
                                 why != nullptr ? why : "unknown error"));
    }
    // Each data-parallel worker is a thread of its own: the library's pool
    // would only make the workers' products contend for the same cores.
    symbol<SetThreads>(library, "openblas_set_num_threads")(1);
    return Blas{symbol<Sgemm>(library, "sgemm_"), symbol<Sgemv>(library, "sgemv_")};
  }();
  return opened;
}

}  // namespace

void open_blas() { blas(); }

}  // namespace gradex

// The entry points Eigen's products call, with the prototypes Eigen's
// Eigen/src/misc/blas.h declares (included above, so the compiler checks
// these definitions against them).
extern "C" int sgemm_(const char* transa, const char* transb, const int* m, const int* n,
                      const int* k, const float* alpha, const float* a, const int* lda,
                      const float* b, const int* ldb, const float* beta, float* c, const int* ldc) {
  gradex::blas().sgemm(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  return 0;
}

extern "C" int sgemv_(const char* trans, const int* m, const int* n, const float* alpha,
                      const float* a, const int* lda, const float* x, const int* incx,
                      const float* beta, float* y, const int* incy) {
  gradex::blas().sgemv(trans, m, n, alpha, a, lda, x, incx, beta, y, incy);
  return 0;
}
