// Runs the benchmarks, then prints how the in-process ring's bus bandwidth
// compares with a single-thread memcpy measured in the same run.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <string>

#include <unistd.h>

namespace {

// Console output as usual, plus the figures the ratio needs.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  // Colours only on a terminal: saved output stays plain text.
  RatioReporter() : ConsoleReporter(isatty(STDOUT_FILENO) ? OO_ColorTabular : OO_Tabular) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      const std::string name = run.benchmark_name();
      auto counter = [&](const char* key) {
        auto it = run.counters.find(key);
        return it == run.counters.end() ? 0.0 : static_cast<double>(it->second);
      };
      // Keyed by the byte count alone: "BM_Memcpy/<bytes>/real_time".
      if (name.rfind("BM_Memcpy/", 0) == 0) {
        memcpy_[name.substr(10, name.find('/', 10) - 10)] = counter("GB/s");
      }
      if (name.rfind("BM_Allreduce/ring/ranks:4/bytes:", 0) == 0) {
        ring_[name.substr(32, name.find('/', 32) - 32)] = counter("busbw_GB/s");
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }

  void PrintRatios() const {
    for (const auto& [bytes, busbw] : ring_) {
      auto it = memcpy_.find(bytes);
      if (it == memcpy_.end() || it->second <= 0) continue;
      std::printf("ring busbw / single-thread memcpy at %s bytes: %.2f GB/s / %.2f GB/s = %.0f%%\n",
                  bytes.c_str(), busbw, it->second, 100.0 * busbw / it->second);
    }
  }

 private:
  std::map<std::string, double> memcpy_;
  std::map<std::string, double> ring_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintRatios();
  benchmark::Shutdown();
  return 0;
}
