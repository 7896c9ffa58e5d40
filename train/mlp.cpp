#include "train/mlp.h"

#include <cmath>
#include <random>

#include "common/errors.h"
#include "train/blas.h"

namespace gradex {

Mlp::Mlp(std::vector<int> layer_sizes, const Dataset& train)
    : sizes_(std::move(layer_sizes)), train_(train) {
  open_blas();  // one thread (train/blas.h); a missing library fails here, not mid-step
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

std::vector<ParamUnit> Mlp::units() const {
  std::vector<ParamUnit> out;
  for (std::size_t l = 0; l < static_cast<std::size_t>(layers()); ++l) {
    const ParamSpan& w = params_[2 * l];
    out.push_back({2 * l, 2 * l + 2, w.offset, w.count + params_[2 * l + 1].count});
  }
  return out;
}

void Mlp::init_layers(const std::function<float*(int)>& out, std::uint64_t seed) const {
  std::mt19937_64 rng(seed);
  for (int l = 0; l < layers(); ++l) {
    std::normal_distribution<float> he(0.0f, std::sqrt(2.0f / static_cast<float>(sizes_[l])));
    const ParamSpan& w = params_[2 * static_cast<std::size_t>(l)];
    const ParamSpan& b = params_[2 * static_cast<std::size_t>(l) + 1];
    float* dst = out(l);
    for (std::size_t i = 0; i < w.count; ++i) {
      const float v = he(rng);
      if (dst != nullptr) dst[i] = v;
    }
    if (dst != nullptr) std::fill_n(dst + w.count, b.count, 0.0f);
  }
}

void Mlp::init(std::span<float> params, std::uint64_t seed) const {
  GRADEX_ENFORCE_EQ(params.size(), param_count());
  const std::vector<ParamUnit> u = units();
  init_layers([&](int l) { return params.data() + u[static_cast<std::size_t>(l)].offset; }, seed);
}

void Mlp::init_unit(std::size_t unit, std::span<float> out, std::uint64_t seed) const {
  const std::size_t count = units().at(unit).count;
  GRADEX_ENFORCE_EQ(out.size(), count, "unit size");
  init_layers([&](int l) { return static_cast<std::size_t>(l) == unit ? out.data() : nullptr; },
              seed);
}

void Mlp::apply_layer(int l, const float* p, const Eigen::MatrixXf& in, Eigen::MatrixXf& out) const {
  const std::size_t u = static_cast<std::size_t>(l);
  ConstMatMap W(p, sizes_[l + 1], sizes_[l]);
  Eigen::Map<const Eigen::VectorXf> bias(p + params_[2 * u].count, sizes_[l + 1]);
  out.noalias() = W * in;
  out.colwise() += bias;
  if (l + 1 < layers()) out = out.cwiseMax(0.0f);  // ReLU on hidden layers
}

void Mlp::forward(LayerAccess& access, std::vector<Eigen::MatrixXf>& acts) const {
  acts.resize(static_cast<std::size_t>(layers()) + 1);
  for (int l = 0; l < layers(); ++l) {
    const std::size_t u = static_cast<std::size_t>(l);
    apply_layer(l, access.params(u), acts[u], acts[u + 1]);
    access.release_params(u);
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

double Mlp::train_step(LayerAccess& access, std::span<const std::size_t> samples, float scale,
                       const GradReady& ready, const std::function<void()>& backward_begins) {
  const Eigen::Index batch = static_cast<Eigen::Index>(samples.size());
  GRADEX_ENFORCE(batch > 0, "empty batch");
  acts_.resize(static_cast<std::size_t>(layers()) + 1);
  Eigen::MatrixXf& input = acts_[0];
  input.resize(sizes_[0], batch);
  for (Eigen::Index j = 0; j < batch; ++j) {
    train_.sample(samples[static_cast<std::size_t>(j)], input.col(j));
  }
  forward(access, acts_);
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
    const std::size_t u = static_cast<std::size_t>(l);
    const Eigen::MatrixXf& delta = deltas_[u];
    const std::size_t weights = params_[2 * u].count;
    const Eigen::MatrixXf& a = acts_[u];
    // Gathered before this layer's backward, as FSDP's pre-backward hook
    // does, whether or not the layer below needs its input gradient. The
    // input gradient, the only use of the values, comes first, so that the
    // layer is released before its gradient buffer is taken: under ZeRO-3
    // a worker never holds both whole (one layer less at backward's peak).
    const float* p = access.params(u);
    if (l > 0) {
      ConstMatMap W(p, sizes_[l + 1], sizes_[l]);
      Eigen::MatrixXf& below = deltas_[u - 1];
      below.noalias() = W.transpose() * delta;
      // ReLU': the activation is positive exactly where its input was.
      below.array() *= (a.array() > 0.0f).cast<float>();
    }
    access.release_params(u);
    float* g = access.grads(u);
    MatMap gW(g, sizes_[l + 1], sizes_[l]);
    Eigen::Map<Eigen::VectorXf> gb(g + weights, sizes_[l + 1]);
    gW.noalias() += scale * (delta * a.transpose());
    gb.noalias() += scale * delta.rowwise().sum();
    // This layer's gradients are final: the reducer may ship them while the
    // layers below are still being differentiated.
    if (ready) {
      ready(2 * u);
      ready(2 * u + 1);
    }
  }
  return loss / static_cast<double>(batch);
}

std::size_t Mlp::evaluation_passes(std::size_t samples) {
  return (samples + kEvaluationChunk - 1) / kEvaluationChunk;
}

Evaluation Mlp::evaluate(std::span<const float> params, const Dataset& data) const {
  return evaluate(whole_vector_pass(params), data);
}

Evaluation Mlp::evaluate(const ParamPass& pass, const Dataset& data) const {
  Evaluation e;
  if (data.size() == 0) return e;
  const std::vector<ParamUnit> unit = units();
  // Only the layer in hand's input and output are kept (nothing is
  // differentiated), so a chunk costs two activations, not one per layer.
  Eigen::MatrixXf in, out;
  double loss = 0;
  std::size_t correct = 0;
  const std::size_t n = data.size();
  for (std::size_t start = 0; start < n; start += kEvaluationChunk) {
    const std::size_t len = std::min(kEvaluationChunk, n - start);
    in = data.samples(start, len);
    int next = 0;  // the next layer to apply, as its range arrives
    pass([&](std::size_t offset, std::span<const float> values) {
      for (; next < layers(); ++next) {
        const ParamUnit& u = unit[static_cast<std::size_t>(next)];
        if (u.offset + u.count > offset + values.size()) break;
        GRADEX_ENFORCE(u.offset >= offset, "a pass skipped layer " + std::to_string(next));
        apply_layer(next, values.data() + (u.offset - offset), in, out);
        std::swap(in, out);
      }
    });
    GRADEX_ENFORCE_EQ(next, layers(), "layers a pass delivered");
    softmax_columns(in);
    for (std::size_t j = 0; j < len; ++j) {
      const int c = data.y[start + j];
      const auto col = static_cast<Eigen::Index>(j);
      Eigen::Index arg = 0;
      in.col(col).maxCoeff(&arg);
      if (arg == c) ++correct;
      loss -= std::log(std::max(in(c, col), 1e-30f));
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
