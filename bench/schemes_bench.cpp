// Every registered scheme on unshaped in-process ranks, in every collective
// it provides (BM_Allreduce/ring, BM_ReduceScatter/ring, ...). The registry
// is iterated, so a new scheme is benchmarked by being added to it. Each
// benchmark iteration is a world of ranks running warm-up and timed
// all-reduces; its time is their median (slowest worker each), measured
// inside the ranks (thread start-up, input fill and checks not timed).
#include <benchmark/benchmark.h>

#include "runner/measure.h"
#include "schemes/registry.h"

namespace gradex {
namespace {

void run_scheme(benchmark::State& state, const std::string& name, Collective collective) {
  const int workers = static_cast<int>(state.range(0));
  const auto bytes = static_cast<std::size_t>(state.range(1));
  SchemeOptions options;
  options.workers = workers;
  options.segment_bytes = 256 << 10;  // small enough to forward from cache
  // The ring in slices of every rank's 512 KiB that stay in the last-level
  // cache between the rank that writes a block and the one that reads it.
  // (Slices are the all-reduce's alone.)
  if (collective == Collective::all_reduce) {
    options.slice_bytes = static_cast<std::size_t>(workers) * (512 << 10);
  }
  options.ranks_per_node = workers % 2 == 0 ? workers / 2 : 1;
  auto scheme = make_scheme(name, options);
  MeasureRequest req;
  req.collective = collective;
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
      per_iter * scheme->bus_factor(collective), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["wrong"] = static_cast<double>(wrong);
  if (wrong != 0) state.SkipWithError("wrong results");
}

// "all_gather" -> "AllGather", for the benchmark families' names.
std::string family(Collective c) {
  std::string out = "BM_";
  bool upper = true;
  for (char ch : collective_name(c)) {
    if (ch == '_') {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(ch - 'a' + 'A') : ch;
    upper = false;
  }
  return out;
}

// Registered at start-up from the registry: one family per scheme and
// collective it provides; the all-reduce at four sizes, the others at two.
const bool registered = [] {
  for (Collective c : kCollectives) {
    for (const std::string& name : portable_scheme_names()) {
      SchemeOptions probe;
      probe.workers = 4;
      if (!make_scheme(name, probe)->provides(c)) continue;
      auto* b = benchmark::RegisterBenchmark(
          (family(c) + "/" + name).c_str(),
          [name, c](benchmark::State& s) { run_scheme(s, name, c); });
      b->ArgNames({"ranks", "bytes"});
      if (c == Collective::all_reduce) b->Args({4, 64 << 10});
      b->Args({4, 1 << 20})->Args({4, 16 << 20});
      if (c == Collective::all_reduce) b->Args({4, 64 << 20});
      // Ten worlds of 20 timed collectives each: enough for a stable
      // median, where Google Benchmark's default would start ten
      // thousand worlds for the smallest size.
      b->Iterations(10)->UseManualTime()->Unit(benchmark::kMillisecond);
    }
  }
  return true;
}();

}  // namespace
}  // namespace gradex
