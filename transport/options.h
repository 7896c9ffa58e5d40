// The settings of every transport, in one type: the in-process threads,
// the process transports (tcp, zmq) and the simulator read the fields that
// concern them. Each default is written here (or in common/comm.h) once.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/comm.h"
#include "common/topology.h"

namespace gradex {

// The transports, by the names scenarios and flags use: threads of this
// process (the default), processes over TCP or ZeroMQ, and the simulator.
inline constexpr std::string_view kTransportNames[] = {"inproc", "tcp", "zmq", "sim"};
// Those whose ranks are separate processes (gradex launch).
inline constexpr std::string_view kProcessTransports[] = {"tcp", "zmq"};
// Ranks that each drive a GPU (transport/nccl/): a scenario may name it in
// any build; a build without CUDA and NCCL, or a machine without a GPU,
// refuses it when the run is made. Not in kTransportNames, which the
// CPU-only tests iterate.
inline constexpr std::string_view kGpuTransport = "nccl";
// Every name a scenario or --transport may give.
inline constexpr std::string_view kAllTransportNames[] = {"inproc", "tcp", "zmq", "sim", "nccl"};

struct TransportOptions {
  // Every transport.
  std::chrono::milliseconds timeout = kDefaultTimeout;  // any single wait
  // The NIC model to emulate (common/topology.h); absent: unshaped. The
  // simulator's network (absent: instantaneous links).
  std::optional<Topology> shaping = std::nullopt;
  // How long a wait polls (yielding the core between polls) before it
  // sleeps; 0 sleeps at once. The scenario's "spin_us".
  std::chrono::microseconds spin = kDefaultSpin;

  // Process transports (tcp, zmq).
  // Shared secret a connecting peer must prove it holds (GRADEX_TOKEN).
  std::string token = {};
  // Where to listen; loopback unless a multi-host run asks otherwise.
  std::string bind_host = "127.0.0.1";
  std::uint16_t port = 0;  // 0: any free port
  // The host peers should dial (defaults to bind_host).
  std::string advertise_host = {};
  // Data frames longer than this are refused before anything is allocated.
  std::uint64_t max_message_bytes = std::uint64_t{1} << 36;

  // The simulator: schemes allocate no payload memory and messages carry
  // sizes only (false: real buffers, copied and checked).
  bool phantom_payloads = true;
};

}  // namespace gradex
