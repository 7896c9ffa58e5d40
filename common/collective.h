// The collectives a scheme can run, with nccl-tests' conventions for each:
// what the `bytes` of a row means, the bus-bandwidth factor that makes its
// busbw comparable with the link's speed, and where the result lands.
//
//   all_reduce:     every worker ends with op over all inputs (whole buffer).
//   reduce_scatter: the buffer is cut into n blocks (BlockSplit); worker r
//                   ends with block r reduced over all workers (the other
//                   blocks hold partial sums). `bytes` is the whole buffer,
//                   n times one worker's block, as nccl-tests counts it.
//   all_gather:     worker r contributes block r of the buffer; every
//                   worker ends with every block. `bytes` is the whole
//                   buffer.
//   broadcast:      worker 0's buffer ends on every worker.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gradex {

enum class Collective { all_reduce, reduce_scatter, all_gather, broadcast };

inline constexpr Collective kCollectives[] = {Collective::all_reduce, Collective::reduce_scatter,
                                              Collective::all_gather, Collective::broadcast};
// The broadcast's root; nccl-tests' default root too.
inline constexpr int kBroadcastRoot = 0;

std::string_view collective_name(Collective c);
// Every collective's name, in kCollectives order (for errors and --help).
std::vector<std::string> collective_names();
// Throws ConfigError naming `field` and the known names.
Collective parse_collective(std::string_view text, const std::string& field = "collective");

// nccl-tests' bus factor over n workers: busbw = algbw * factor, so that a
// bandwidth-optimal algorithm's busbw approaches the link's bandwidth:
// 2(n-1)/n for all-reduce, (n-1)/n for reduce-scatter and all-gather, 1 for
// broadcast (0 on one worker, where nothing moves).
double collective_bus_factor(Collective c, int n);

// Whether the collective reduces (takes an op).
bool collective_reduces(Collective c);

}  // namespace gradex
