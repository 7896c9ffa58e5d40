// The double binary tree's shape for every world size up to 64: each tree
// spans every rank exactly once, parent and child links agree, the depth is
// logarithmic, and (the point of the second tree) at most one rank is
// interior in both trees. Then the reduce-scatter's and all-gather's
// routes over it (allreduce/tree_blocks.h).
#include <gtest/gtest.h>

#include <bit>
#include <vector>

#include "allreduce/tree.h"
#include "allreduce/tree_blocks.h"

namespace gradex {
namespace {

std::vector<TreeLinks> tree_of(int n, int which) {
  std::vector<TreeLinks> t;
  for (int r = 0; r < n; ++r) t.push_back(double_tree(n, r, which));
  return t;
}

class TreeShape : public ::testing::TestWithParam<int> {};

TEST_P(TreeShape, EachTreeSpansEveryRankOnce) {
  const int n = GetParam();
  for (int which = 0; which < 2; ++which) {
    SCOPED_TRACE(::testing::Message() << "tree " << which);
    const std::vector<TreeLinks> t = tree_of(n, which);
    int root = -1;
    for (int r = 0; r < n; ++r) {
      const TreeLinks& l = t[static_cast<std::size_t>(r)];
      if (l.parent < 0) {
        EXPECT_EQ(root, -1) << "second root " << r;
        root = r;
      }
      EXPECT_TRUE(l.children[1] < 0 || l.children[0] >= 0) << "rank " << r;
    }
    ASSERT_GE(root, 0);
    EXPECT_EQ(root, which == 0 || n == 1 ? 0 : (n % 2 == 1 ? 1 : n - 1));

    // Walk down from the root: every rank is reached exactly once, through
    // a child link that its own parent link confirms.
    std::vector<int> seen(static_cast<std::size_t>(n), 0);
    std::vector<int> depth(static_cast<std::size_t>(n), 0);
    std::vector<int> todo{root};
    seen[static_cast<std::size_t>(root)] = 1;
    int max_depth = 0;
    while (!todo.empty()) {
      const int r = todo.back();
      todo.pop_back();
      for (int c : t[static_cast<std::size_t>(r)].children) {
        if (c < 0) continue;
        ASSERT_LT(c, n);
        EXPECT_EQ(t[static_cast<std::size_t>(c)].parent, r) << "child " << c << " of " << r;
        ASSERT_EQ(seen[static_cast<std::size_t>(c)]++, 0) << "rank " << c << " reached twice";
        depth[static_cast<std::size_t>(c)] = depth[static_cast<std::size_t>(r)] + 1;
        max_depth = std::max(max_depth, depth[static_cast<std::size_t>(c)]);
        todo.push_back(c);
      }
    }
    for (int r = 0; r < n; ++r) EXPECT_EQ(seen[static_cast<std::size_t>(r)], 1) << "rank " << r;
    // One level per bit, plus the root's own edge.
    EXPECT_LE(max_depth, static_cast<int>(std::bit_width(static_cast<unsigned>(n))));
  }
}

TEST_P(TreeShape, RanksAreInteriorInAtMostOneTree) {
  const int n = GetParam();
  const std::vector<TreeLinks> a = tree_of(n, 0);
  const std::vector<TreeLinks> b = tree_of(n, 1);
  int both = 0;
  for (int r = 0; r < n; ++r) {
    const bool in_a = a[static_cast<std::size_t>(r)].child_count() > 0;
    const bool in_b = b[static_cast<std::size_t>(r)].child_count() > 0;
    both += in_a && in_b;
  }
  EXPECT_LE(both, n % 2 == 1 ? 1 : 0);
}

// double_tree_below's interval rule against walking up the parent links.
TEST_P(TreeShape, SubtreesAreTheRanksBelow) {
  const int n = GetParam();
  for (int which = 0; which < 2; ++which) {
    for (int rank = 0; rank < n; ++rank) {
      std::vector<bool> above(static_cast<std::size_t>(n), false);
      for (int up = rank; up >= 0; up = double_tree(n, up, which).parent) {
        above[static_cast<std::size_t>(up)] = true;
      }
      for (int top = 0; top < n; ++top) {
        EXPECT_EQ(double_tree_below(n, which, top, rank), above[static_cast<std::size_t>(top)])
            << "tree " << which << " top " << top << " rank " << rank;
      }
    }
  }
}

// Each half-block's route is the tree path to its owner: following
// `toward` from any rank reaches the owner in at most two depths, and the
// neighbours a rank hears from (away) are exactly those whose `toward` is
// this rank.
TEST_P(TreeShape, RoutesLeadToTheOwner) {
  const int n = GetParam();
  for (int which = 0; which < 2; ++which) {
    for (int owner = 0; owner < n; ++owner) {
      for (int rank = 0; rank < n; ++rank) {
        int at = rank, hops = 0;
        while (at != owner && hops <= 2 * n) {
          at = tree_route(n, which, at, owner).toward;
          ASSERT_GE(at, 0) << "rank " << rank << " owner " << owner;
          ++hops;
        }
        EXPECT_EQ(at, owner);
        EXPECT_LE(hops, 2 * static_cast<int>(std::bit_width(static_cast<unsigned>(n))));
        const TreeRoute route = tree_route(n, which, rank, owner);
        int heard = 0;
        for (int other = 0; other < n; ++other) {
          if (other != rank && tree_route(n, which, other, owner).toward == rank) {
            ++heard;
            EXPECT_TRUE(route.away[0] == other || route.away[1] == other || route.away[2] == other)
                << "rank " << rank << " owner " << owner << " from " << other;
          }
        }
        EXPECT_EQ(heard, route.away_count()) << "rank " << rank << " owner " << owner;
      }
    }
  }
}

// The block collectives' traffic: every rank sends (reduce-scatter) or
// receives (all-gather) each other rank's half-blocks once, (n-1)/n of the
// buffer as a ring does; what it hears from (or sends to) its children is
// at most (n+1)/n of it, the tree's price; and the bytes balance.
TEST_P(TreeShape, EveryRankSendsEachOtherBlockOnce) {
  const int n = GetParam();
  const std::size_t count = 2 * static_cast<std::size_t>(n) * 96;  // even halves
  const std::uint64_t buffer = count * 4;
  for (Collective c : {Collective::reduce_scatter, Collective::all_gather}) {
    std::uint64_t sent = 0, received = 0;
    for (int r = 0; r < n; ++r) {
      const Traffic t = tree_block_traffic(c, n, r, count, DType::f32, std::size_t{1} << 20);
      const bool scatter = c == Collective::reduce_scatter;
      const std::uint64_t once = scatter ? t.bytes_sent : t.bytes_received;
      const std::uint64_t fanned = scatter ? t.bytes_received : t.bytes_sent;
      if (n == 1) {
        EXPECT_EQ(t, Traffic{}) << collective_name(c);
        continue;
      }
      EXPECT_EQ(once, buffer * static_cast<std::uint64_t>(n - 1) / static_cast<std::uint64_t>(n))
          << collective_name(c) << " rank " << r;
      EXPECT_LE(fanned, buffer * static_cast<std::uint64_t>(n + 1) / static_cast<std::uint64_t>(n))
          << collective_name(c) << " rank " << r;
      sent += t.bytes_sent;
      received += t.bytes_received;
    }
    EXPECT_EQ(sent, received) << collective_name(c);
  }
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, TreeShape, ::testing::Range(1, 65));

TEST(InorderTree, ThirteenRanks) {
  // 0 - 8; 8: 4, 12; 4: 2, 6; 12: 10 only (13 is past the end).
  EXPECT_EQ(inorder_tree(13, 0).children[0], 8);
  EXPECT_EQ(inorder_tree(13, 8).children, (std::array<int, 2>{4, 12}));
  EXPECT_EQ(inorder_tree(13, 12).children, (std::array<int, 2>{10, -1}));
  EXPECT_EQ(inorder_tree(13, 12).parent, 8);
  EXPECT_EQ(inorder_tree(13, 11).parent, 10);
  EXPECT_EQ(inorder_tree(13, 2).children, (std::array<int, 2>{1, 3}));
}

}  // namespace
}  // namespace gradex
