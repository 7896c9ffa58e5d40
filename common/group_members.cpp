#include "common/group_members.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "common/errors.h"

namespace gradex {

GroupMembers::GroupMembers(std::vector<int> list)
    : list_(std::move(list)), count_(static_cast<int>(list_.size())) {}

GroupMembers GroupMembers::rule(int count, int first, int stride, int block, int rotation) {
  if (block == 0) block = count;
  GRADEX_ENFORCE(count >= 1 && first >= 0 && stride >= 1 && block >= 1 && rotation >= 0,
                 "group rule: ", count, " members from ", first, " by ", stride, ", blocks of ",
                 block, " rotated by ", rotation);
  GroupMembers m;
  m.count_ = count;
  m.first_ = first;
  m.stride_ = stride;
  m.block_ = block;
  m.rotation_ = rotation;
  return m;
}

int GroupMembers::at(int i) const {
  if (!list_.empty()) return list_[static_cast<std::size_t>(i)];
  if (rotation_ == 0) return first_ + stride_ * i;  // every block in order: no division
  const int start = i / block_ * block_;
  const int here = std::min(block_, count_ - start);
  return first_ + stride_ * (start + (i - start + rotation_) % here);
}

int GroupMembers::position_of(int rank) const {
  if (!list_.empty()) {
    const auto it = std::find(list_.begin(), list_.end(), rank);
    return it == list_.end() ? -1 : static_cast<int>(it - list_.begin());
  }
  const int offset = rank - first_;
  if (offset < 0 || offset % stride_ != 0 || offset / stride_ >= count_) return -1;
  // The rotated position p = offset / stride: undo the block's rotation.
  const int p = offset / stride_;
  const int start = p / block_ * block_;
  const int here = std::min(block_, count_ - start);
  return start + ((p - start - rotation_) % here + here) % here;
}

std::optional<int> GroupMembers::outside(int ranks) const {
  if (list_.empty()) {
    // first + stride p for p in [0, count), first >= 0: the last decides.
    const long long last = first_ + static_cast<long long>(stride_) * (count_ - 1);
    if (last < ranks) return std::nullopt;
    return static_cast<int>(std::min<long long>(last, std::numeric_limits<int>::max()));
  }
  for (int r : list_) {
    if (r < 0 || r >= ranks) return r;
  }
  return std::nullopt;
}

std::vector<int> GroupMembers::list() const {
  if (!list_.empty()) return list_;
  std::vector<int> all(static_cast<std::size_t>(count_));
  for (int i = 0; i < count_; ++i) all[static_cast<std::size_t>(i)] = at(i);
  return all;
}

}  // namespace gradex
