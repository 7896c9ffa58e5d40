// Who belongs to a sub-group (SubComm), in the parent's ranks: a list, or
// a rule that computes member i. A scheme's group may be as large as the
// world (a hierarchical scheme's ranks with one GPU per node, the rail
// rings, the hybrid PS's ring), and every rank holds its own: as lists,
// a simulation of n ranks would hold n^2 entries (16 KiB per rank at 4,096
// ranks, as much again as all the rest of a ring's state). The rules hold
// five numbers.
#pragma once

#include <initializer_list>
#include <optional>
#include <vector>

namespace gradex {

class GroupMembers {
 public:
  // Member i is list[i]. A parent rank may be listed more than once (the
  // simulator's symmetric subset).
  GroupMembers(std::vector<int> list);  // NOLINT: a list is a group's members
  GroupMembers(std::initializer_list<int> list) : GroupMembers(std::vector<int>(list)) {}

  // `count` members: position i is taken in blocks of `block` positions,
  // each block rotated by `rotation` (a shorter last block within its own
  // length), and the rotated position p is parent rank first + stride p.
  //   contiguous ranks a, a+1, ...:   rule(count, a, 1)
  //   every g-th rank from l:          rule(count, l, g)
  //   node by node, each node's ranks starting at its c-th:
  //                                    rule(count, 0, 1, per_node, c)
  static GroupMembers rule(int count, int first, int stride, int block = 0, int rotation = 0);

  int size() const { return count_; }
  // The parent rank of member i (0 <= i < size()).
  int at(int i) const;
  // The first member that is parent rank `rank`; -1 if none is.
  int position_of(int rank) const;
  // A member outside parent ranks [0, ranks), if any.
  std::optional<int> outside(int ranks) const;
  // Every member in order (for a caller that wants the list).
  std::vector<int> list() const;

 private:
  GroupMembers() = default;

  std::vector<int> list_;  // empty: the rule
  int count_ = 0;
  int first_ = 0;
  int stride_ = 1;
  int block_ = 1;
  int rotation_ = 0;
};

}  // namespace gradex
