// Every registered scheme on unshaped in-process ranks. The registry is
// iterated, so a new scheme is benchmarked by being added to it. Each
// benchmark iteration is a world of ranks running warm-up and timed
// all-reduces; its time is their median (slowest worker each), measured
// inside the ranks (thread start-up, input fill and checks not timed).
#include <benchmark/benchmark.h>

#include "runner/measure.h"
#include "schemes/registry.h"

namespace gradex {
namespace {

void run_scheme(benchmark::State& state, const std::string& name) {
  const int workers = static_cast<int>(state.range(0));
  const auto bytes = static_cast<std::size_t>(state.range(1));
  SchemeOptions options;
  options.workers = workers;
  options.segment_bytes = 256 << 10;  // small enough to forward from cache
  // The ring in slices of every rank's 512 KiB that stay in the last-level
  // cache between the rank that writes a block and the one that reads it.
  options.slice_bytes = static_cast<std::size_t>(workers) * (512 << 10);
  options.ranks_per_node = workers % 2 == 0 ? workers / 2 : 1;
  auto scheme = make_scheme(name, options);
  MeasureRequest req;
  req.count = bytes / sizeof(float);
  // As nccl-tests (its defaults, -w 5 -n 20): warm-up all-reduces, then
  // timed ones on the same ranks and buffers; a benchmark iteration reports
  // their median, the steady state rather than a world's first touch of its
  // pages and the scheduler's first placement of its threads.
  req.warmup_iters = 5;
  req.iters = 20;
  std::size_t wrong = 0;
  for (auto _ : state) {
    const Measurement m = measure(*scheme, req);
    wrong += m.wrong;
    state.SetIterationTime(m.median());
  }
  const double per_iter = static_cast<double>(bytes) / 1e9;
  state.counters["algbw_GB/s"] =
      benchmark::Counter(per_iter, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["busbw_GB/s"] = benchmark::Counter(
      per_iter * scheme->bus_factor(), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["wrong"] = static_cast<double>(wrong);
  if (wrong != 0) state.SkipWithError("wrong results");
}

// Registered at start-up from the registry: one family per scheme.
const bool registered = [] {
  for (const std::string& name : portable_scheme_names()) {
    benchmark::RegisterBenchmark(("BM_Allreduce/" + name).c_str(),
                                 [name](benchmark::State& s) { run_scheme(s, name); })
        ->ArgNames({"ranks", "bytes"})
        ->Args({4, 64 << 10})
        ->Args({4, 1 << 20})
        ->Args({4, 16 << 20})
        ->Args({4, 64 << 20})
        // Ten worlds of 20 timed all-reduces each: enough for a stable
        // median, where Google Benchmark's default would start ten
        // thousand worlds for the smallest size.
        ->Iterations(10)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
  return true;
}();

}  // namespace
}  // namespace gradex
