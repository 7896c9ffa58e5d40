// Runs on a GPU: every portable scheme and the NCCL baselines on the nccl
// transport with device buffers, checked against the closed form, and the
// device kernels against the CPU's fill and check. Labelled "gpu" (ctest
// -L gpu); without a device every case skips and says why.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "common/verify.h"
#include "gpu/cuda.h"
#include "runner/measure.h"
#include "schemes/registry.h"
#include "scheme_options.h"

namespace gradex {
namespace {

// Skips the test unless at least `n` devices are present.
#define REQUIRE_GPUS(n)                                                                     \
  do {                                                                                      \
    std::string why;                                                                        \
    const int found = cuda_device_count(&why);                                              \
    if (found < (n)) {                                                                      \
      GTEST_SKIP() << "needs " << (n) << " CUDA device(s), found " << found                 \
                   << (why.empty() ? "" : ": " + why);                                      \
    }                                                                                       \
  } while (0)

TEST(GpuDevice, FillAndCheckKernelsAgreeWithTheHost) {
  REQUIRE_GPUS(1);
  for (DType t : kAllDTypes) {
    const std::size_t count = 1001;
    auto device = device_allocate(count * dtype_size(t));
    const Tensor d{device.get(), count, t};
    device_fill_collective_input(Collective::all_gather, d, 1, 3);
    std::vector<std::byte> host(count * dtype_size(t));
    cudaMemcpy(host.data(), device.get(), host.size(), cudaMemcpyDeviceToHost);
    std::vector<std::byte> want(host.size());
    fill_collective_input(Collective::all_gather, Tensor{want.data(), count, t}, 1, 3);
    EXPECT_EQ(host, want) << dtype_name(t);
    // Rank 1's block is right, the others hold markers: wrong everywhere else.
    EXPECT_EQ(device_count_wrong_collective(Collective::all_gather, d, 1, 3, ReduceOp::sum),
              count_wrong_collective(Collective::all_gather, Tensor{want.data(), count, t}, 1, 3,
                                     ReduceOp::sum));
  }
}

TEST(GpuDevice, EverySchemeIsExactOnTheNcclTransport) {
  REQUIRE_GPUS(2);
  for (const std::string& name : portable_scheme_names()) {
    const SchemeOptions o = testing::options_for(2);
    auto scheme = make_scheme(name, o);
    REQUIRE_GPUS(scheme->endpoints());
    for (DType t : kAllDTypes) {
      MeasureRequest req;
      req.transport = "nccl";
      req.device_buffers = true;
      req.count = 4099;
      req.dtype = t;
      req.op = ReduceOp::avg;
      req.iters = 2;
      const Measurement m = measure(*scheme, req);
      EXPECT_EQ(m.wrong, 0u) << name << " " << dtype_name(t);
    }
  }
}

TEST(GpuDevice, NcclBaselinesAreExact) {
  REQUIRE_GPUS(2);
  for (const char* name : {"nccl_allreduce", "nccl_reduce_bcast"}) {
    SchemeOptions o;
    o.workers = 2;
    auto scheme = make_scheme(name, o);
    MeasureRequest req;
    req.transport = "nccl";
    req.device_buffers = true;
    req.count = 1 << 20;
    req.iters = 2;
    EXPECT_EQ(measure(*scheme, req).wrong, 0u) << name;
  }
}

}  // namespace
}  // namespace gradex
