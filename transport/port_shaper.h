// LinkShaper's NIC model split in halves, for transports whose sender and
// receiver are different processes: each endpoint books only its own ports.
// The sender books its egress port and stamps the message with the time it
// starts leaving; the receiver books its ingress port from that time on and
// adds the latency. With one endpoint per process and a shared monotonic
// clock this reproduces LinkShaper's timings, except that a sender does not
// see the receiver's ingress backlog (its send completes when its own port
// is free, as a real NIC's does).
#pragma once

#include <cstddef>
#include <mutex>

#include "common/topology.h"

namespace gradex {

class PortShaper {
 public:
  // Throws ConfigError for a node-shared NIC, which no single process owns.
  PortShaper(Topology topology, int self);

  struct Egress {
    double start;  // the message starts leaving (stamped on it)
    double done;   // the send completes
  };
  // `protocol`: the collective protocol each side is running
  // (LinkSpec::protocol_for); the receiver takes its own, which is the
  // sender's while both run the same collective.
  Egress egress(int dst, std::size_t bytes, double now, const char* protocol = nullptr);
  // When a receive from `src` of a message stamped `egress_start` completes.
  double ingress(int src, std::size_t bytes, double egress_start, const char* protocol = nullptr);
  const Topology& topology() const { return topology_; }

 private:
  Topology topology_;
  int self_;
  std::mutex mutex_;
  double intra_egress_free_ = 0, intra_ingress_free_ = 0;
  double inter_egress_free_ = 0, inter_ingress_free_ = 0;
};

}  // namespace gradex
