// Bootstrapping a launched run, torchrun-style: the launcher picks where
// rank 0's rendezvous store listens and the run's token; every participant
// makes its endpoint, registers its address with the store and connects to
// every peer it learns of.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "runner/launch_env.h"
#include "transport/group_endpoint.h"
#include "transport/options.h"

namespace gradex {

// "127.0.0.1:<a port nobody uses right now>" for rank 0's store, picked
// below the kernel's ephemeral range so that no connection on the machine
// takes it before rank 0 binds it. Another program binding it on purpose
// still could; rank 0 then fails with a clear error.
std::string free_loopback_rendezvous();
// "<advertise_host>:<a port free on bind_host now>": rank 0's store when the
// job, not a variable, tells the ranks where it is (mpirun). Throws
// ConfigError naming GRADEX_BIND when bind_host is no IP address.
std::string free_rendezvous(const std::string& bind_host, const std::string& advertise_host);

// 32 random bytes (hex) from the CSPRNG: the run's token when the user gives
// none, the ranks' only defence on a shared host.
std::string random_token();

// Runs `size` copies of this executable with `args` (argv[1..]: a
// `launch` command line) with the environment's GRADEX_TOKEN or a random
// one, and waits for them all (runner/spawn.h: one failing ends the rest
// within `timeout` plus a grace). Returns the launcher's exit code.
//
// Without `hosts` (one per rank, runner/hostfile.h) every rank runs here
// and they meet at a free loopback rendezvous. With hosts elsewhere, every
// rank binds every interface (GRADEX_BIND=0.0.0.0, unless set here for the
// ranks here), and the rendezvous is on rank 0's host: a free port of this
// machine under its host name when rank 0 runs here, else a port of
// [20000, 32000) picked at random on rank 0's host, which rank 0 binds or
// fails naming it.
int launch_group(const std::vector<std::string>& args, int size, std::chrono::milliseconds timeout,
                 const std::vector<std::string>& hosts = {});

// This process's endpoint of `transport` in a group of `size`, connected:
// env gives the rank, the store, the token and the addresses; `options`
// the timeout, spin and frame limit. Rank 0 hosts the store, so its
// TimeoutError names the ranks that never registered.
std::unique_ptr<GroupEndpoint> join_group(const LaunchEnv& env, const std::string& transport,
                                          int size, TransportOptions options);

}  // namespace gradex
