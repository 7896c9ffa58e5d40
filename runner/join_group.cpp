#include "runner/join_group.h"

// Boost 1.74's asio/awaitable.hpp uses std::exchange without including it.
#include <utility>

#include <boost/asio.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>
#include <vector>

#include "common/cancel.h"
#include "common/debug_log.h"
#include "common/errors.h"
#include "runner/hostfile.h"
#include "runner/spawn.h"
#include "transport/rendezvous.h"
#include "transport/wire/auth.h"

namespace gradex {

namespace {

// The lowest port the kernel hands to outgoing connections (Linux's
// ip_local_port_range; 32768 when it cannot be read).
int ephemeral_low() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 0;
  return in >> low && low > 2048 ? low : 32768;
}

// A port on `address` that binds now and that nothing but an explicit
// bind can take before rank 0 binds it again: the port is released in
// between, and a port from the ephemeral range could meanwhile go to any
// connection on the machine (a busy machine's launch then failed with
// "Address already in use"). So it is picked at random below that range,
// where concurrent launches rarely meet; the kernel's own choice is the
// fallback.
unsigned short unclaimed_port(const boost::asio::ip::address& address) {
  boost::asio::io_context io;
  const int high = ephemeral_low();
  const int low = std::max(1024, high - 12000);
  std::mt19937 pick(std::random_device{}());
  for (int attempt = 0; attempt < 200; ++attempt) {
    const auto port =
        static_cast<unsigned short>(std::uniform_int_distribution<int>(low, high - 1)(pick));
    boost::asio::ip::tcp::acceptor a(io);
    boost::system::error_code ec;
    a.open(address.is_v6() ? boost::asio::ip::tcp::v6() : boost::asio::ip::tcp::v4(), ec);
    if (!ec) a.bind({address, port}, ec);
    if (!ec) return port;
  }
  boost::asio::ip::tcp::acceptor a(io, {address, 0});
  return a.local_endpoint().port();
}

}  // namespace

std::string free_rendezvous(const std::string& bind_host, const std::string& advertise_host) {
  boost::system::error_code ec;
  const auto address = boost::asio::ip::make_address(bind_host, ec);
  if (ec) throw ConfigError("GRADEX_BIND", "'" + bind_host + "' is not an IP address");
  const std::string host =
      advertise_host.find(':') == std::string::npos ? advertise_host : "[" + advertise_host + "]";
  return host + ":" + std::to_string(unclaimed_port(address));
}

std::string free_loopback_rendezvous() { return free_rendezvous("127.0.0.1", "127.0.0.1"); }

std::string random_token() { return wire::random_hex(32); }

namespace {

// Where rank 0, on `host`, hosts the store for ranks on several hosts.
std::string rendezvous_on(const std::string& host) {
  if (is_this_host(host)) return free_rendezvous("0.0.0.0", this_host_name());
  std::mt19937 pick(std::random_device{}());
  return host + ":" + std::to_string(std::uniform_int_distribution<int>(20000, 31999)(pick));
}

}  // namespace

int launch_group(const std::vector<std::string>& args, int size, std::chrono::milliseconds timeout,
                 const std::vector<std::string>& hosts) {
  const bool spread = std::any_of(hosts.begin(), hosts.end(),
                                  [](const std::string& h) { return !is_this_host(h); });
  const char* token = std::getenv("GRADEX_TOKEN");
  EnvVars env = {
      {"GRADEX_RENDEZVOUS", spread ? rendezvous_on(hosts.front()) : free_loopback_rendezvous()},
      {"GRADEX_TOKEN", token && *token ? token : random_token()},
  };
  if (spread && std::getenv("GRADEX_BIND") == nullptr) env.push_back({"GRADEX_BIND", "0.0.0.0"});
  GRADEX_DEBUG_LOG("launcher: ", size, " ranks, rendezvous ", env.front().second);
  throw_if_cancelled();  // a signal before the ranks start: start none
  const auto children = spawn_ranks(args, size, env, hosts);
  // After a failure the survivors end within their own wait timeout.
  return supervise(children, timeout + std::chrono::seconds(5), std::cerr);
}

std::unique_ptr<GroupEndpoint> join_group(const LaunchEnv& env, const std::string& transport,
                                          int size, TransportOptions options) {
  options.token = env.token;
  options.bind_host = env.bind_host;
  options.advertise_host =
      env.advertise.empty() ? tcp::local_address_towards(env.rendezvous) : env.advertise;
  auto endpoint = make_group_endpoint(transport, env.rank, size, options);
  GRADEX_DEBUG_LOG("rank ", env.rank, " of ", size, " (from ", env.source, " variables): ", transport,
                   " endpoint at ", endpoint->address(), ", rendezvous ", env.rendezvous,
                   env.rank == 0 ? " (hosted here)" : "");
  std::unique_ptr<tcp::RendezvousServer> store;
  if (env.rank == 0) {
    store = std::make_unique<tcp::RendezvousServer>(env.rendezvous, size, env.token,
                                                    options.timeout);
  }
  std::vector<std::string> addresses;
  try {
    addresses = tcp::rendezvous(env.rendezvous, env.rank, size, env.token, endpoint->address(),
                                options.timeout);
  } catch (const TimeoutError& e) {
    if (!store) throw;
    throw TimeoutError(detail::concat(e.what(), "; ", tcp::never_registered(store->missing())));
  }
  GRADEX_DEBUG_LOG("rank ", env.rank, ": every rank registered; connecting");
  endpoint->connect(addresses);
  GRADEX_DEBUG_LOG("rank ", env.rank, ": group of ", size, " formed");
  return endpoint;
}

}  // namespace gradex
