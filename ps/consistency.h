// When a parameter server lets a worker go on (the consistency models of
// ps-lite, Petuum and the PS literature):
//   BSP  bulk synchronous: a server applies a step's gradients once every
//        worker pushed it, and only then answers the pulls (lock-step);
//   ASP  asynchronous: a server applies each gradient as it arrives and
//        answers that worker at once (no waiting, unbounded staleness);
//   SSP  stale synchronous: as ASP, but a worker may run at most
//        `staleness` steps ahead of the slowest one.
#pragma once

#include <string>

namespace gradex {

enum class Consistency { bsp, asp, ssp };

// The names, in the order help text lists them.
inline constexpr const char* kConsistencyNames[] = {"bsp", "asp", "ssp"};

// Throws ConfigError(field) on an unknown name.
Consistency parse_consistency(const std::string& text, const std::string& field = "consistency");
std::string consistency_name(Consistency c);
// The name as tables print it: "ssp(s=2)" for SSP, else the name.
std::string consistency_label(Consistency c, int staleness);

}  // namespace gradex
