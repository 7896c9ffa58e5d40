// `auto`: the all-reduce that picks, per message size, the registered
// scheme that is fastest here, as NCCL's tuner picks an algorithm per size
// and Horovod's autotuner settles its parameters while training runs.
//
// The candidates are every portable scheme that runs on the workers alone
// (the PS schemes with dedicated endpoints need more endpoints than auto's
// caller has) and that these options fit, and each scheme that pipelines
// in segments (Scheme::segmented) also at each of kSegmentSizes (labelled
// "tree@256KiB", as schemes/registry.h names it). At each new size auto
// decides, the same way on every rank:
//   - with a table from `gradex tune` (SchemeOptions::tuned): the
//     candidate it measured fastest at the nearest tuned size at or below
//     this one;
//   - on a modelled network (shaped links, the simulator): the candidate
//     whose cost model (Scheme::model_time, with the calibrated link
//     protocols) is lowest on that network;
//   - otherwise (real, unshaped): by measuring. Every candidate runs the
//     all-reduce on a copy of the input (kTrials times below kOneTrialBytes,
//     once above, where one run is long enough to trust), except a segment
//     size that cuts this message as another of the same scheme already
//     does (both at least the message: one segment); each rank's best time
//     per candidate is combined with a max-all-reduce, so every rank sees
//     the same times and takes the same fastest. This happens once per size
//     (the first call, normally a warm-up iteration), and its traffic is not
//     counted as the exchange's.
// The decision is kept per size and reported (chosen_for) beside the result.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "allreduce/ring.h"
#include "common/scheme.h"

namespace gradex {

class AutoScheme final : public Scheme {
 public:
  // Each candidate runs this many times when auto measures below
  // kOneTrialBytes, and the best run counts: one run of a small message is
  // mostly noise on a busy machine, while a large one lasts long enough
  // (and costs enough) to be run once.
  static constexpr int kTrials = 3;
  static constexpr std::size_t kOneTrialBytes = std::size_t{1} << 20;
  // The segment sizes the model also tries for a segmented scheme (NCCL's
  // tuner likewise sizes its chunks by message size and protocol).
  static constexpr std::size_t kSegmentSizes[] = {std::size_t{64} << 10, std::size_t{256} << 10,
                                                  std::size_t{1} << 20, std::size_t{4} << 20};

  explicit AutoScheme(SchemeOptions options);

  void allreduce(Comm& comm, Tensor data, ReduceOp op) override;
  // The traffic and the model of the candidate chosen at that size; before
  // auto has chosen by measuring, the model's choice on `topology`.
  Traffic expected_traffic(int endpoint, std::size_t count, DType dtype) const override;
  double model_time(std::size_t bytes, const Topology& topology) const override;
  std::string chosen_for(std::size_t bytes) const override;
  int scratch_buffers() const override { return 1; }  // the input's copy while measuring

  // Every candidate's label: the schemes in registry order at the
  // options' segment size, then each segmented one at its other segment
  // sizes ("tree@64KiB"). What auto weighs, measures and `gradex tune`
  // measures, and what a tuned table may name.
  std::vector<std::string> candidates() const;

 private:
  struct Candidate {
    std::string label;  // the scheme's name, "@size" when not at the options' segment
    std::string name;   // the scheme's name
    std::unique_ptr<Scheme> scheme;
  };
  // Whether candidate i cuts a message of `bytes` as an earlier candidate
  // of the same scheme does (both segments hold the whole message).
  bool same_cut_as_earlier(std::size_t i, std::size_t bytes) const;
  // Throws ConfigError when the table has no choice for these workers or
  // names a scheme that is not a candidate here.
  void check_table(const TunedTable& table) const;
  std::size_t index_of(const std::string& label) const;  // size() if absent
  std::size_t by_model(std::size_t bytes, const Topology& topology) const;
  std::size_t by_measuring(Comm& comm, Tensor data, ReduceOp op);
  std::size_t choose(Comm& comm, Tensor data, ReduceOp op);
  // The candidate chosen at `bytes`, or candidates_.size() if none yet.
  std::size_t known(std::size_t bytes) const;

  std::vector<Candidate> candidates_;
  RingScheme agree_;  // combines the measured times (any candidate would do)
  mutable std::mutex mutex_;
  std::map<std::size_t, std::size_t> chosen_;  // bytes -> candidate index
};

}  // namespace gradex
