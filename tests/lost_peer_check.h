// The survivors' half of the "a killed process" tests, the same for every
// process transport: ranks 0 and 1 connect to a group whose rank 2 (a
// forked child) dies without a goodbye; each, blocked on a receive, must
// fail with PeerLostError naming rank 2 well within its timeout.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "common/errors.h"
#include "transport/group_endpoint.h"

namespace gradex::testing {

inline void expect_survivors_name_the_lost_peer(GroupEndpoint& a, GroupEndpoint& b,
                                                const std::vector<std::string>& addresses,
                                                pid_t child) {
  using namespace std::chrono_literals;
  const auto t0 = std::chrono::steady_clock::now();
  std::string error_b;
  std::thread tb([&] {
    try {
      b.connect(addresses);
      int x = 0;
      b.recv(2, &x, sizeof x, 1);
    } catch (const PeerLostError& e) {
      if (e.peer() == 2) error_b = e.what();
    } catch (const std::exception& e) {
      error_b = std::string("wrong error: ") + e.what();
    }
  });
  std::string error_a;
  try {
    a.connect(addresses);
    int x = 0;
    a.recv(1, &x, sizeof x, 1);  // blocked on a survivor, not on the dead rank
  } catch (const PeerLostError& e) {
    error_a = e.what();
    EXPECT_EQ(e.peer(), 2) << e.what();
  }
  tb.join();
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_NE(error_a.find("rank 2"), std::string::npos) << error_a;
  EXPECT_NE(error_b.find("rank 2"), std::string::npos) << error_b;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
}

}  // namespace gradex::testing
