// A shaped message that the link model delivers long after the wait's
// timeout must end the wait at its deadline with a TimeoutError, on every
// transport: the modelled delay is part of the wait, never an unbounded
// sleep after it.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "common/errors.h"
#include "transport/inproc/world.h"
#include "transport/local_group.h"

namespace gradex {
namespace {

using namespace std::chrono_literals;

// 64 KiB over the slowest link a scenario may name (1 KB/s): 65 s.
constexpr std::size_t kBytes = 64 << 10;
const Topology kSlowLink = Topology::grouped(2, 1, 0, {}, {kMinLinkBytesPerSecond, 0});

void exchange(Comm& c) {
  std::vector<char> buf(kBytes);
  if (c.rank() == 0) {
    c.send(1, buf.data(), buf.size(), 0);
  } else {
    c.recv(0, buf.data(), buf.size(), 0);
  }
}

void run_on(const std::string& transport, std::chrono::milliseconds timeout) {
  if (transport == "inproc") {
    TransportOptions options;
    options.timeout = timeout;
    options.shaping = kSlowLink;
    InprocWorld world(2, options);
    run_ranks(world, exchange);
    return;
  }
  TransportOptions options;
  options.timeout = timeout;
  options.token = "test-token";
  options.shaping = kSlowLink;
  run_endpoint_ranks(transport, 2, options, exchange);
}

class ShapedTimeout : public ::testing::TestWithParam<std::string> {};

TEST_P(ShapedTimeout, ASlowLinkEndsTheWaitAtItsDeadline) {
  const auto start = std::chrono::steady_clock::now();
  try {
    run_on(GetParam(), 500ms);
    FAIL() << "a 65 s message finished within a 500 ms timeout";
  } catch (const TimeoutError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("timed out after 500 ms"), std::string::npos) << what;
    EXPECT_NE(what.find("the shaped link delivers it"), std::string::npos) << what;
  }
  // The deadline plus the group's teardown; nowhere near the 65 s the
  // model asks for.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 20s);
}

INSTANTIATE_TEST_SUITE_P(Transports, ShapedTimeout, ::testing::Values("inproc", "tcp", "zmq"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace gradex
