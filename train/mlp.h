// A multi-layer perceptron classifier (ReLU hidden layers, softmax
// cross-entropy output) whose linear algebra is Eigen GEMMs over Maps of the
// flat parameter vector. Parameters, in order: W0, b0, W1, b1, ...; W_l is
// out x in, column-major. Each layer (W_l, b_l) is one unit.
#pragma once

#include <Eigen/Core>

#include "train/dataset.h"
#include "train/model.h"

namespace gradex {

class Mlp final : public Model {
 public:
  // layer_sizes: input, hidden..., classes (at least two entries). The data
  // set is the one train_step's sample indices refer to.
  Mlp(std::vector<int> layer_sizes, const Dataset& train);

  const std::vector<ParamSpan>& params() const override { return params_; }
  const std::vector<int>& layer_sizes() const { return sizes_; }
  std::vector<ParamUnit> units() const override;
  // He-normal weights (suits ReLU), zero biases.
  void init(std::span<float> params, std::uint64_t seed) const override;
  void init_unit(std::size_t unit, std::span<float> out, std::uint64_t seed) const override;
  double train_step(LayerAccess& access, std::span<const std::size_t> samples, float scale,
                    const GradReady& ready, const std::function<void()>& backward_begins) override;
  using Model::train_step;
  // Loss and accuracy over a whole data set, in chunks of
  // kEvaluationChunk samples: each chunk takes one pass over the values
  // (ZeRO-3 gathers the model once per chunk, never whole), which is
  // evaluation_passes(data.size()) passes in all.
  static constexpr std::size_t kEvaluationChunk = 1000;
  static std::size_t evaluation_passes(std::size_t samples);
  Evaluation evaluate(const ParamPass& pass, const Dataset& data) const;
  Evaluation evaluate(std::span<const float> params, const Dataset& data) const;

 private:
  using MatMap = Eigen::Map<Eigen::MatrixXf>;
  using ConstMatMap = Eigen::Map<const Eigen::MatrixXf>;
  int layers() const { return static_cast<int>(sizes_.size()) - 1; }
  // Activations of every layer for a batch (acts[0] is the input); returns logits.
  void forward(LayerAccess& access, std::vector<Eigen::MatrixXf>& acts) const;
  // Layer l with values `p` (its unit's) on `in`, into `out`.
  void apply_layer(int l, const float* p, const Eigen::MatrixXf& in, Eigen::MatrixXf& out) const;
  // init() over the units it is asked for: `out(l)` is where layer l's
  // values go, or null to draw and drop them (the stream stays the same).
  void init_layers(const std::function<float*(int)>& out, std::uint64_t seed) const;

  std::vector<int> sizes_;
  const Dataset& train_;
  std::vector<ParamSpan> params_;
  // Reused between steps, so that a step allocates nothing once the batch
  // size is steady: acts_[l] is layer l's input, deltas_[l] the loss's
  // gradient with respect to layer l's output (before its ReLU).
  std::vector<Eigen::MatrixXf> acts_;
  std::vector<Eigen::MatrixXf> deltas_;
};

// "784-256-256-10" style description and parameter count, for reports.
std::string describe_layers(const std::vector<int>& sizes);

}  // namespace gradex
