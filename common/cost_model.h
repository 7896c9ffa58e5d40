// Alpha-beta building blocks for the schemes' cost models (DESIGN.md's
// table): a message of S bytes over a link of rate B and latency a takes
// a + S / B. Each scheme composes these next to its code (Scheme::
// model_time); the simulator checks them where no two flows share a port.
#pragma once

#include <utility>
#include <vector>

#include "common/topology.h"

namespace gradex {

// a + bytes / B over `link`; no bandwidth term on an unlimited link.
double message_time(const LinkSpec& link, double bytes);
// One step in which every pair (src, dst) moves `bytes` at once, each on
// ports of its own: the slowest message decides. 0 for no pairs.
double slowest_message(const Topology& topology, const std::vector<std::pair<int, int>>& pairs,
                       double bytes);

}  // namespace gradex
