#include "train/model.h"

namespace gradex {

std::size_t Model::param_count() const {
  const auto& p = params();
  return p.empty() ? 0 : p.back().offset + p.back().count;
}

}  // namespace gradex
