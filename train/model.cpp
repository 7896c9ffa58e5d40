#include "train/model.h"

#include <algorithm>

#include "common/errors.h"

namespace gradex {

std::size_t Model::param_count() const {
  const auto& p = params();
  return p.empty() ? 0 : p.back().offset + p.back().count;
}

std::vector<ParamUnit> Model::units() const {
  std::vector<ParamUnit> out;
  const auto& p = params();
  for (std::size_t i = 0; i < p.size(); ++i) out.push_back({i, i + 1, p[i].offset, p[i].count});
  return out;
}

void Model::init_unit(std::size_t unit, std::span<float> out, std::uint64_t seed) const {
  const ParamUnit u = units().at(unit);
  GRADEX_ENFORCE_EQ(out.size(), u.count, "unit size");
  std::vector<float> all(param_count());
  init(all, seed);
  std::copy_n(all.begin() + static_cast<std::ptrdiff_t>(u.offset), u.count, out.begin());
}

double Model::train_step(std::span<const float> params, std::span<const std::size_t> samples,
                         std::span<float> grads, float scale, const GradReady& ready,
                         const std::function<void()>& backward_begins) {
  GRADEX_ENFORCE(params.empty() || params.size() == param_count(), "parameter vector size");
  GRADEX_ENFORCE(grads.empty() || grads.size() == param_count(), "gradient vector size");
  FlatAccess access(params, grads, units());
  return train_step(access, samples, scale, ready, backward_begins);
}

ParamPass whole_vector_pass(std::span<const float> params) {
  return [params](const ParamRangeVisitor& visit) { visit(0, params); };
}

}  // namespace gradex
