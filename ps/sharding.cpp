#include "ps/sharding.h"

#include <algorithm>
#include <cmath>

#include "common/errors.h"

namespace gradex {

KeyRange shard_range(std::size_t count, int servers, int server) {
  GRADEX_ENFORCE(servers >= 1 && server >= 0 && server < servers, "server ", server, " of ",
                 servers);
  const BlockSplit split{count, static_cast<std::size_t>(servers)};
  const auto k = static_cast<std::size_t>(server);
  return {split.offset(k), split.size(k)};
}

std::size_t chunk_count(std::size_t shard_count, std::size_t chunk) {
  if (shard_count == 0) return 0;
  return chunk == 0 ? 1 : (shard_count + chunk - 1) / chunk;
}

KeyRange chunk_range(KeyRange shard, std::size_t chunk, std::size_t j) {
  if (chunk == 0) return shard;
  const std::size_t begin = std::min(shard.count, j * chunk);
  return {shard.offset + begin, std::min(chunk, shard.count - begin)};
}

ServerLayout::ServerLayout(int workers, int servers, ServerPlacement placement)
    : workers_(workers), servers_(servers), placement_(placement) {
  if (workers < 1) {
    throw ConfigError("workers",
                      detail::concat("a parameter server needs a worker, got ", workers));
  }
  if (placement == ServerPlacement::hybrid) {
    if (servers < 0) {
      throw ConfigError("ps/servers", detail::concat("dedicated servers cannot be negative, got ",
                                                  servers));
    }
    servers_ = workers + servers;
    return;
  }
  if (servers < 1) {
    throw ConfigError("ps/servers",
                      detail::concat("a parameter server needs a server, got ", servers));
  }
}

int ServerLayout::dedicated() const {
  switch (placement_) {
    case ServerPlacement::dedicated: return servers_;
    case ServerPlacement::colocated: return 0;
    case ServerPlacement::hybrid: return servers_ - workers_;
  }
  return 0;
}

int ServerLayout::endpoints() const { return workers_ + dedicated(); }

int ServerLayout::host(int server) const {
  GRADEX_ENFORCE(server >= 0 && server < servers_, "server ", server, " of ", servers_);
  switch (placement_) {
    case ServerPlacement::dedicated: return workers_ + server;
    case ServerPlacement::hybrid: return server;  // the workers', then the dedicated ones
    case ServerPlacement::colocated: break;
  }
  // 64-bit product: workers * servers may not fit in an int.
  return static_cast<int>(static_cast<long long>(server) * workers_ / servers_);
}

std::vector<int> ServerLayout::hosted_on(int endpoint) const {
  std::vector<int> mine;
  for (int k = 0; k < servers_; ++k) {
    if (host(k) == endpoint) mine.push_back(k);
  }
  return mine;
}

double ServerLayout::hybrid_share() const {
  const double n = workers_;
  const double k = dedicated();
  if (k >= n) return 0;
  return n * (n - k) / (n * n + k * n - 2 * k);
}

std::size_t ServerLayout::colocated_keys(std::size_t count) const {
  if (placement_ != ServerPlacement::hybrid) return 0;
  return static_cast<std::size_t>(std::llround(hybrid_share() * static_cast<double>(count)));
}

KeyRange ServerLayout::shard(std::size_t count, int server) const {
  if (placement_ != ServerPlacement::hybrid) return shard_range(count, servers_, server);
  // The workers' servers split the first `own` keys, the dedicated ones
  // the rest; an empty part leaves its servers without keys.
  const std::size_t own = colocated_keys(count);
  if (server < workers_) return shard_range(own, workers_, server);
  const KeyRange r = shard_range(count - own, dedicated(), server - workers_);
  return {own + r.offset, r.count};
}

}  // namespace gradex
