#include "train/mlp.h"

#include <cblas.h>

#include <cmath>
#include <mutex>
#include <random>

#include "common/errors.h"

namespace gradex {

Mlp::Mlp(std::vector<int> layer_sizes, const Dataset& train)
    : sizes_(std::move(layer_sizes)), train_(train) {
  // Each data-parallel worker is a thread of its own: OpenBLAS's thread pool
  // would only make the workers' products contend for the same cores.
  static std::once_flag single_threaded_blas;
  std::call_once(single_threaded_blas, [] { openblas_set_num_threads(1); });
  if (sizes_.size() < 2) throw ConfigError("layers", "an MLP needs an input and an output size");
  for (int s : sizes_) {
    if (s <= 0) throw ConfigError("layers", "layer sizes must be positive");
  }
  std::size_t offset = 0;
  for (int l = 0; l < layers(); ++l) {
    const std::size_t w = static_cast<std::size_t>(sizes_[l + 1]) * sizes_[l];
    // Appending (not "W" + string) sidesteps a GCC 12 -Wrestrict false positive.
    std::string index = std::to_string(l);
    params_.push_back({std::string("W").append(index), offset, w});
    offset += w;
    params_.push_back(
        {std::string("b").append(index), offset, static_cast<std::size_t>(sizes_[l + 1])});
    offset += static_cast<std::size_t>(sizes_[l + 1]);
  }
}

void Mlp::init(std::span<float> params, std::uint64_t seed) const {
  GRADEX_ENFORCE_EQ(params.size(), param_count());
  std::mt19937_64 rng(seed);
  for (int l = 0; l < layers(); ++l) {
    std::normal_distribution<float> he(0.0f, std::sqrt(2.0f / static_cast<float>(sizes_[l])));
    const ParamSpan& w = params_[2 * static_cast<std::size_t>(l)];
    const ParamSpan& b = params_[2 * static_cast<std::size_t>(l) + 1];
    for (std::size_t i = 0; i < w.count; ++i) params[w.offset + i] = he(rng);
    for (std::size_t i = 0; i < b.count; ++i) params[b.offset + i] = 0.0f;
  }
}

void Mlp::forward(std::span<const float> params, std::vector<Eigen::MatrixXf>& acts) const {
  acts.resize(static_cast<std::size_t>(layers()) + 1);
  for (int l = 0; l < layers(); ++l) {
    const ParamSpan& w = params_[2 * static_cast<std::size_t>(l)];
    const ParamSpan& b = params_[2 * static_cast<std::size_t>(l) + 1];
    ConstMatMap W(params.data() + w.offset, sizes_[l + 1], sizes_[l]);
    Eigen::Map<const Eigen::VectorXf> bias(params.data() + b.offset, sizes_[l + 1]);
    Eigen::MatrixXf& out = acts[static_cast<std::size_t>(l) + 1];
    out.noalias() = W * acts[static_cast<std::size_t>(l)];
    out.colwise() += bias;
    if (l + 1 < layers()) out = out.cwiseMax(0.0f);  // ReLU on hidden layers
  }
}

namespace {

// Softmax of each column of `logits`, in place, stabilised by the column max.
void softmax_columns(Eigen::MatrixXf& logits) {
  const Eigen::RowVectorXf max = logits.colwise().maxCoeff();
  logits = (logits.rowwise() - max).array().exp();
  const Eigen::RowVectorXf sum = logits.colwise().sum();
  logits = logits.array().rowwise() / sum.array();
}

}  // namespace

double Mlp::train_step(std::span<const float> params, std::span<const std::size_t> samples,
                       std::span<float> grads, float scale, const GradReady& ready,
                       const std::function<void()>& backward_begins) {
  GRADEX_ENFORCE_EQ(params.size(), param_count());
  GRADEX_ENFORCE_EQ(grads.size(), param_count());
  const Eigen::Index batch = static_cast<Eigen::Index>(samples.size());
  GRADEX_ENFORCE(batch > 0, "empty batch");
  acts_.resize(static_cast<std::size_t>(layers()) + 1);
  Eigen::MatrixXf& input = acts_[0];
  input.resize(sizes_[0], batch);
  for (Eigen::Index j = 0; j < batch; ++j) {
    input.col(j) = train_.x.col(static_cast<Eigen::Index>(samples[static_cast<std::size_t>(j)]));
  }
  forward(params, acts_);
  if (backward_begins) backward_begins();

  // dLoss/dlogits for mean cross-entropy: (softmax - onehot) / batch.
  deltas_.resize(static_cast<std::size_t>(layers()));
  Eigen::MatrixXf& delta_out = deltas_.back();
  delta_out = acts_.back();
  softmax_columns(delta_out);
  double loss = 0;
  for (Eigen::Index j = 0; j < batch; ++j) {
    const int c = train_.y[samples[static_cast<std::size_t>(j)]];
    loss -= std::log(std::max(delta_out(c, j), 1e-30f));
    delta_out(c, j) -= 1.0f;
  }
  delta_out /= static_cast<float>(batch);

  for (int l = layers() - 1; l >= 0; --l) {
    const Eigen::MatrixXf& delta = deltas_[static_cast<std::size_t>(l)];
    const ParamSpan& w = params_[2 * static_cast<std::size_t>(l)];
    const ParamSpan& b = params_[2 * static_cast<std::size_t>(l) + 1];
    const Eigen::MatrixXf& a = acts_[static_cast<std::size_t>(l)];
    MatMap gW(grads.data() + w.offset, sizes_[l + 1], sizes_[l]);
    Eigen::Map<Eigen::VectorXf> gb(grads.data() + b.offset, sizes_[l + 1]);
    gW.noalias() += scale * (delta * a.transpose());
    gb.noalias() += scale * delta.rowwise().sum();
    // This layer's gradients are final: the reducer may ship them while the
    // layers below are still being differentiated.
    if (ready) {
      ready(2 * static_cast<std::size_t>(l));
      ready(2 * static_cast<std::size_t>(l) + 1);
    }
    if (l > 0) {
      ConstMatMap W(params.data() + w.offset, sizes_[l + 1], sizes_[l]);
      Eigen::MatrixXf& below = deltas_[static_cast<std::size_t>(l) - 1];
      below.noalias() = W.transpose() * delta;
      // ReLU': the activation is positive exactly where its input was.
      below.array() *= (a.array() > 0.0f).cast<float>();
    }
  }
  return loss / static_cast<double>(batch);
}

Evaluation Mlp::evaluate(std::span<const float> params, const Dataset& data) const {
  Evaluation e;
  if (data.size() == 0) return e;
  constexpr Eigen::Index kChunk = 1000;
  std::vector<Eigen::MatrixXf> acts;
  double loss = 0;
  std::size_t correct = 0;
  const Eigen::Index n = static_cast<Eigen::Index>(data.size());
  for (Eigen::Index start = 0; start < n; start += kChunk) {
    const Eigen::Index len = std::min(kChunk, n - start);
    acts.resize(static_cast<std::size_t>(layers()) + 1);
    acts[0] = data.x.middleCols(start, len);
    forward(params, acts);
    Eigen::MatrixXf p = acts.back();
    softmax_columns(p);
    for (Eigen::Index j = 0; j < len; ++j) {
      const int c = data.y[static_cast<std::size_t>(start + j)];
      Eigen::Index arg = 0;
      p.col(j).maxCoeff(&arg);
      if (arg == c) ++correct;
      loss -= std::log(std::max(p(c, j), 1e-30f));
    }
  }
  e.loss = loss / static_cast<double>(n);
  e.accuracy = static_cast<double>(correct) / static_cast<double>(n);
  return e;
}

std::string describe_layers(const std::vector<int>& sizes) {
  std::string s;
  for (int v : sizes) {
    if (!s.empty()) s += '-';
    s += std::to_string(v);
  }
  return s;
}

}  // namespace gradex
