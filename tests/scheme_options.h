// What the suites run schemes and transports with, written once.
#pragma once

#include <chrono>
#include <string>

#include "common/scheme.h"
#include "transport/options.h"

namespace gradex::testing {

// Options that make every scheme valid at world size n: hierarchical needs
// nodes that divide n (the largest divisor <= 4 that leaves >= 2 nodes, if
// any), and its inter-node phase cycles through the flat all-reduces; the
// PS gets two servers when there are enough workers; segments are small
// enough that the larger counts take several.
inline SchemeOptions options_for(int n) {
  SchemeOptions o;
  o.workers = n;
  o.segment_bytes = 64 * 1024;
  o.ranks_per_node = 1;
  for (int g = 4; g >= 2; --g) {
    if (n % g == 0 && n / g >= 2) {
      o.ranks_per_node = g;
      break;
    }
  }
  o.inter_algorithm = n == 4 ? "ring" : n == 8 ? "halving_doubling" : "tree";
  o.servers = n >= 4 ? 2 : 1;
  return o;
}

// Any transport of a test: a token for the process transports, real
// buffers in the simulator (so results can be checked), and a timeout that
// a loaded 2-core machine under a sanitizer still meets.
inline TransportOptions transport_options(std::chrono::milliseconds timeout =
                                              std::chrono::milliseconds(60'000)) {
  TransportOptions o;
  o.timeout = timeout;
  o.token = "test-token";
  o.phantom_payloads = false;
  return o;
}

}  // namespace gradex::testing
