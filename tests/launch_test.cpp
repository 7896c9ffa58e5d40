// `gradex launch` end to end: real processes on loopback finding each other
// through the rendezvous store, the same table as `gradex run`, a wrong
// token refused, and a worker killed mid-run ending the others with an
// error naming it, a non-zero exit and no results files. Also the
// environment a run joins from (gradex, Open MPI, Slurm variables).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "common/errors.h"
#include "transport/rendezvous.h"
#include "hostile_peer.h"
#include "process_fixture.h"
#include "runner/hostfile.h"
#include "runner/launch_env.h"

namespace gradex {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

using testing::free_port;
using testing::kGradex;

class Launch : public testing::ProcessTest {
 protected:
  void killed_worker_run(const std::string& transport);
};


TEST_F(Launch, PrintsTheRunTableAndWritesResults) {
  for (const std::string transport : {"tcp", "zmq"}) {
    SCOPED_TRACE(transport);
    fs::remove_all(dir_ / "out");
    const fs::path out = dir_ / "out";
    const fs::path sc = write("tcp.json", R"({"name": "tcp", "transport": "tcp", "workers": 2,
        "sizes": [4096, 65536], "iters": 2, "warmup_iters": 1, "schemes": ["ring", "ps"],
        "timeout_ms": 10000, "output": ")" + out.string() + R"("})");
    ASSERT_EQ(shell(kGradex + " launch -n 3 --transport " + transport + " " + sc.string()), 0)
        << slurp(dir_ / "stderr");
    const std::string o = slurp(dir_ / "stdout");
    EXPECT_NE(o.find("#wrong"), std::string::npos) << o;
    // 3 workers + 1 dedicated server
    EXPECT_NE(o.find("launched: 4 processes over " + transport), std::string::npos) << o;
    // nccl-tests' habit: the version, then one line per rank with its pid and host.
    EXPECT_NE(o.find("# gradex 0."), std::string::npos) << o;
    for (int r = 0; r < 4; ++r) {
      EXPECT_NE(o.find("#  rank   " + std::to_string(r) + " pid "), std::string::npos) << o;
    }
    EXPECT_NE(o.find("Out of bounds values : 0 OK"), std::string::npos) << o;
    EXPECT_NE(o.find("Traffic as declared   : OK"), std::string::npos) << o;
    EXPECT_TRUE(fs::exists(out / "results.csv"));
    EXPECT_TRUE(fs::exists(out / "results.json"));
  }
}

// --collective and --unshaped on launch, as on run: the processes it
// starts run the all-gather, unshaped, and check it; a scheme that does not
// provide the collective is bad input.
TEST_F(Launch, ItsProcessesTakeTheCollectiveAndUnshapedFlags) {
  const fs::path sc = write("ag.json", R"({"name": "ag", "transport": "tcp", "workers": 3,
      "sizes": [4100], "iters": 2, "warmup_iters": 1, "schemes": ["ring"], "timeout_ms": 10000,
      "network": {"inter_node": {"bandwidth": "10MB/s"}}})");
  ASSERT_EQ(shell(kGradex + " launch -n 3 --collective all_gather --unshaped --no-output " +
                  sc.string()),
            0)
      << slurp(dir_ / "stderr");
  const std::string o = slurp(dir_ / "stdout");
  EXPECT_NE(o.find("# all_gather, transport tcp"), std::string::npos) << o;
  EXPECT_NE(o.find("# network: unshaped"), std::string::npos) << o;
  EXPECT_NE(o.find("Out of bounds values : 0 OK"), std::string::npos) << o;
  EXPECT_EQ(
      shell(kGradex + " launch -n 3 --collective all_gather -s ps_hybrid --no-output " + sc.string()),
      2);
  EXPECT_NE(slurp(dir_ / "stderr").find("does not provide"), std::string::npos)
      << slurp(dir_ / "stderr");
}

TEST_F(Launch, InprocScenarioNeedsATransportFlag) {
  const fs::path sc = write("in.json", R"({"name": "in", "workers": 2, "sizes": [64]})");
  EXPECT_EQ(shell(kGradex + " launch -n 2 " + sc.string()), 2);
  EXPECT_NE(slurp(dir_ / "stderr").find("--transport tcp"), std::string::npos);
}

// The README's two-host recipe with two loopback addresses standing in for
// the hosts: ranks 0-1 listen on 127.0.0.1, ranks 2-3 on 127.0.0.2, each
// advertising its own, every rank started by hand from GRADEX_* variables.
TEST_F(Launch, TwoHostsRecipeOnTwoLoopbackAddresses) {
  const fs::path sc = write("hosts.json", R"({"name": "hosts", "transport": "tcp",
      "workers": 4, "ranks_per_node": 2, "sizes": [4096, 262144], "iters": 2,
      "warmup_iters": 1, "schemes": ["ring", "hierarchical"], "timeout_ms": 10000})");
  const std::string common = "GRADEX_WORLD_SIZE=4 GRADEX_TOKEN=s GRADEX_RENDEZVOUS=127.0.0.1:" +
                             std::to_string(free_port()) + " ";
  std::string line;
  for (int r = 0; r < 4; ++r) {
    const std::string host = r < 2 ? "127.0.0.1" : "127.0.0.2";
    line += common + "GRADEX_BIND=" + host + " GRADEX_ADVERTISE=" + host +
            " GRADEX_RANK=" + std::to_string(r) + " " + kGradex + " launch -n 4 --no-output " +
            sc.string() + (r == 0 ? "" : " > /dev/null") + " & p" + std::to_string(r) + "=$!; ";
  }
  ASSERT_EQ(shell(line + "f=0; for p in $p0 $p1 $p2 $p3; do wait $p || f=1; done; exit $f"), 0)
      << slurp(dir_ / "stderr");
  const std::string o = slurp(dir_ / "stdout");
  EXPECT_NE(o.find("launched: 4 processes over tcp (ranks from GRADEX variables)"),
            std::string::npos) << o;
  EXPECT_NE(o.find("Out of bounds values : 0 OK"), std::string::npos) << o;
}

// --hostfile: the ranks fill the hosts by slot in the file's order, and
// those on another host start through GRADEX_RSH. The stand-in here logs
// the host and its command and runs the command on this machine, as `ssh
// HOST CMD` would run it there; 127.0.0.2 and 127.0.0.3 are loopback
// addresses, so the ranks "on" them can bind and be dialled. The token
// reaches them on standard input, never on a command line.
TEST_F(Launch, AHostfilePlacesRanksBySlotThroughTheRemoteShell) {
  const fs::path sc = write("ps.json", R"({"name": "ps", "transport": "tcp", "workers": 3,
      "sizes": [65536], "iters": 2, "warmup_iters": 1, "schemes": ["ring", "ps"],
      "ps": {"servers": 1}, "timeout_ms": 10000})");
  const fs::path log = dir_ / "rsh.log";
  const fs::path rsh = write(
      "rsh.sh", "#!/bin/sh\nrank=$(printf '%s' \"$2\" | grep -o 'GRADEX_RANK=[0-9]*')\n"
                "printf '%s %s\\n' \"$1\" \"$rank\" >> " + log.string() +
                "\nprintf '%s\\n' \"$2\" >> " + log.string() + ".commands\nexec sh -c \"$2\"\n");
  fs::permissions(rsh, fs::perms::owner_all);
  struct Case {
    std::string hosts;
    std::vector<std::string> remote;  // the remote shell's calls: host and rank
  };
  for (const Case& c :
       {Case{"# rank 0 here\nlocalhost slots=1\n127.0.0.2 slots=2  # two\n127.0.0.3 slots=4\n",
             {"127.0.0.2 GRADEX_RANK=1", "127.0.0.2 GRADEX_RANK=2", "127.0.0.3 GRADEX_RANK=3"}},
        // Rank 0 elsewhere: the rendezvous is on its host.
        Case{"127.0.0.2 slots=2\nlocalhost slots=2\n",
             {"127.0.0.2 GRADEX_RANK=0", "127.0.0.2 GRADEX_RANK=1"}}}) {
    SCOPED_TRACE(c.hosts);
    fs::remove(log);
    fs::remove(log.string() + ".commands");
    const fs::path hosts = write("hosts", c.hosts);
    ASSERT_EQ(shell("GRADEX_TOKEN=hostfile-secret GRADEX_RSH=" + rsh.string() + " " + kGradex +
                    " launch -n 3 --no-output --hostfile " + hosts.string() + " " + sc.string()),
              0)
        << slurp(dir_ / "stderr");
    const std::string o = slurp(dir_ / "stdout");
    EXPECT_NE(o.find("launched: 4 processes over tcp"), std::string::npos) << o;
    EXPECT_NE(o.find("Out of bounds values : 0 OK"), std::string::npos) << o;
    std::vector<std::string> calls;  // they start concurrently: sorted
    std::istringstream lines(slurp(log));
    for (std::string line; std::getline(lines, line);) calls.push_back(line);
    std::sort(calls.begin(), calls.end());
    EXPECT_EQ(calls, c.remote);
    const std::string commands = slurp(log.string() + ".commands");
    EXPECT_EQ(commands.find("hostfile-secret"), std::string::npos) << commands;
    EXPECT_NE(commands.find("read -r GRADEX_TOKEN"), std::string::npos) << commands;
    EXPECT_NE(commands.find("'GRADEX_BIND=0.0.0.0'"), std::string::npos) << commands;
  }
}

// A hostfile with too few slots, a malformed line, or given to a rank
// rather than the launcher: exit 2, the file or flag named, nothing run.
TEST_F(Launch, ABadHostfileIsNamed) {
  const fs::path sc = write("ring.json", R"({"name": "r", "transport": "tcp", "workers": 2,
      "sizes": [4096], "iters": 1, "schemes": ["ring"], "timeout_ms": 10000})");
  const fs::path small = write("small", "localhost slots=1\n127.0.0.2\n");
  EXPECT_EQ(shell(kGradex + " launch -n 3 --no-output --hostfile " + small.string() + " " +
                  sc.string()),
            2);
  EXPECT_NE(slurp(dir_ / "stderr").find("--hostfile: the hosts have 2 slots for 3 processes"),
            std::string::npos)
      << slurp(dir_ / "stderr");
  const fs::path bad = write("bad", "localhost slots=2\nnode02 slot=4\n");
  EXPECT_EQ(shell(kGradex + " launch -n 2 --no-output --hostfile " + bad.string() + " " +
                  sc.string()),
            2);
  EXPECT_NE(slurp(dir_ / "stderr").find(bad.string() + ":2: unknown word 'slot=4'"),
            std::string::npos)
      << slurp(dir_ / "stderr");
  EXPECT_EQ(shell("GRADEX_RANK=0 GRADEX_WORLD_SIZE=2 GRADEX_RENDEZVOUS=127.0.0.1:1 " + kGradex +
                  " launch -n 2 --no-output --hostfile " + small.string() + " " + sc.string()),
            2);
  EXPECT_NE(slurp(dir_ / "stderr").find("--hostfile: applies to the launcher"), std::string::npos)
      << slurp(dir_ / "stderr");
}

// A host the remote shell cannot reach: its rank's shell fails, the
// launcher names that rank, ends the others and exits non-zero.
TEST_F(Launch, AnUnreachableHostEndsTheRunNamingItsRank) {
  const fs::path sc = write("ring.json", R"({"name": "r", "transport": "tcp", "workers": 2,
      "sizes": [4096], "iters": 1, "schemes": ["ring"], "timeout_ms": 2000})");
  const fs::path hosts = write("hosts", "localhost\nunreachable\n");
  EXPECT_NE(shell("GRADEX_RSH=false " + kGradex + " launch -n 2 --no-output --hostfile " +
                  hosts.string() + " " + sc.string()),
            0);
  EXPECT_NE(slurp(dir_ / "stderr").find("gradex launch: rank 1 (pid "), std::string::npos)
      << slurp(dir_ / "stderr");
}

TEST(Hostfile, ParsesOpenMpisFormatAndPlacesBySlot) {
  std::istringstream in("# cluster\n\nnode01 slots=2\n  node02   # one slot\nnode03 slots=3\n");
  const auto hosts = parse_hostfile(in, "h");
  ASSERT_EQ(hosts.size(), 3u);
  EXPECT_EQ(hosts[1].host, "node02");
  EXPECT_EQ(hosts[1].slots, 1);
  EXPECT_EQ(place_ranks(hosts, 4),
            (std::vector<std::string>{"node01", "node01", "node02", "node03"}));
  EXPECT_EQ(place_ranks(hosts, 6).back(), "node03");
  const auto error = [](const std::string& text) {
    std::istringstream bad(text);
    try {
      parse_hostfile(bad, "h");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error("a slots=0\n"), "h:1: slots must be a positive integer, got '0'");
  EXPECT_EQ(error("a slots=2x\n"), "h:1: slots must be a positive integer, got '2x'");
  EXPECT_EQ(error("a\nb\na slots=2\n"),
            "h:3: host 'a' is listed twice (give it one line with its slots)");
  EXPECT_EQ(error("slots=2\n"), "h:1: expected a host name first, got 'slots=2'");
  EXPECT_EQ(error("# nothing\n"), "h: lists no host");
  EXPECT_THROW(place_ranks(hosts, 7), ConfigError);
  EXPECT_TRUE(is_this_host("localhost"));
  EXPECT_FALSE(is_this_host("127.0.0.2"));
}

// The PS's server has nothing to do while the ring runs; it meets the
// workers after every size, so a ring run longer than the timeout does not
// time the idle server out. The network is shaped so that the times do not
// depend on the machine or a sanitizer: 64 KiB at 10 MB/s takes 6.5 ms, so
// each size (10 iterations) takes some 65 ms and the ring's 20 sizes 1.3 s,
// against a timeout of 600 ms.
TEST_F(Launch, AnIdleServerOutlastsARunLongerThanTheTimeout) {
  std::string sizes;
  for (int k = 0; k < 20; ++k) sizes += (k ? ", " : "") + std::to_string(65536 + 4 * k);
  const fs::path sc = write("idle.json", R"({"name": "idle", "transport": "tcp", "workers": 2,
      "sizes": [)" + sizes + R"(], "iters": 10, "warmup_iters": 0, "schemes": ["ring", "ps"],
      "timeout_ms": 600, "network": {"inter_node": {"bandwidth": "10MB/s", "latency": "0us"}}})");
  const gradex::testing::Outcome o = gradex("launch -n 2 -q --no-output " + sc.string());
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.err.find("timed out"), std::string::npos) << o.err;
}

// GRADEX_DEBUG=1: every process says where it is on the way (rendezvous,
// connections, each measurement, the launcher's children ending), one
// whole line each; any value but 0 and 1 is refused before anything runs.
TEST_F(Launch, DebugVariableLogsEachStepAndATypoIsRefused) {
  const fs::path sc = write("debug.json", R"({"name": "debug", "transport": "tcp", "workers": 2,
      "sizes": [4096], "iters": 1, "warmup_iters": 0, "schemes": ["ring"], "timeout_ms": 10000})");
  ASSERT_EQ(shell("GRADEX_DEBUG=1 " + kGradex + " launch -n 2 -q --no-output " + sc.string()), 0)
      << err();
  const std::string e = err();
  for (const char* line : {"(from GRADEX variables): tcp endpoint at", "(hosted here)",
                           "rendezvous store: rank 1 registered", "rank 0: connected to rank 1",
                           "rank 1: group of 2 formed", "rank 1: ring on 2 workers, 4096 bytes: starting",
                           "rank 0: ring at 4096 bytes: done", "launcher: rank 1 (pid "}) {
    EXPECT_NE(e.find(line), std::string::npos) << line << " in\n" << e;
  }
  for (std::size_t at = e.find("gradex debug ["); at != std::string::npos;
       at = e.find("gradex debug [", at + 1)) {
    EXPECT_TRUE(at == 0 || e[at - 1] == '\n') << "a line broken into at " << at << ":\n" << e;
  }
  const int typo = shell("GRADEX_DEBUG=yes " + kGradex + " validate " + sc.string());
  EXPECT_EQ(typo, 2);
  EXPECT_NE(err().find("GRADEX_DEBUG: expected 0 or 1, got 'yes'"), std::string::npos) << err();
}

// Listening on every interface with no address to advertise: each rank
// advertises the interface that routes to the rendezvous (here loopback).
TEST_F(Launch, AWildcardBindAdvertisesTheRouteToTheRendezvous) {
  const fs::path sc = write("wild.json", R"({"name": "wild", "transport": "tcp", "workers": 2,
      "sizes": [4096], "iters": 1, "warmup_iters": 0, "schemes": ["ring"], "timeout_ms": 10000})");
  const std::string common = "GRADEX_DEBUG=1 GRADEX_WORLD_SIZE=2 GRADEX_TOKEN=s GRADEX_BIND=0.0.0.0 "
                             "GRADEX_RENDEZVOUS=127.0.0.1:" + std::to_string(free_port()) + " ";
  const std::string args = " launch --no-output " + sc.string();
  ASSERT_EQ(shell(common + "GRADEX_RANK=1 " + kGradex + args + " > /dev/null & p=$!; " + common +
                  "GRADEX_RANK=0 " + kGradex + args + "; r=$?; wait $p || r=1; exit $r"),
            0)
      << err();
  EXPECT_NE(err().find("rank 1 of 2 (from GRADEX variables): tcp endpoint at 127.0.0.1:"),
            std::string::npos)
      << err();
  EXPECT_NE(out().find("Out of bounds values : 0 OK"), std::string::npos) << out();
}

// srun starts its tasks with SLURM_PROCID, SLURM_NTASKS, the job and step
// ids and the step's node list: no rendezvous variable is needed, rank 0
// hosts the store on the first node, named, not an address.
TEST_F(Launch, JoinsFromSlurmVariablesWithoutARendezvous) {
  const fs::path sc = write("slurm.json", R"({"name": "slurm", "transport": "tcp", "workers": 2,
      "sizes": [4096], "iters": 2, "warmup_iters": 1, "schemes": ["ring"], "timeout_ms": 10000})");
  int port = free_port();
  while (port >= 32000) port = free_port();
  const int step = port - 20000;  // slurm_port(0, step) == port
  ASSERT_EQ(slurm_port(0, step), port);
  const std::string common = "SLURM_NTASKS=2 SLURM_JOB_ID=0 SLURM_STEP_ID=" + std::to_string(step) +
                             " SLURM_STEP_NODELIST='localhost,node[2-3]' ";
  const std::string args = " launch --no-output " + sc.string();
  ASSERT_EQ(shell(common + "SLURM_PROCID=0 " + kGradex + args + " & p0=$!; " + common +
                  "SLURM_PROCID=1 " + kGradex + args + " > /dev/null; r=$?; wait $p0 || r=1; exit $r"),
            0)
      << slurp(dir_ / "stderr");
  const std::string o = slurp(dir_ / "stdout");
  EXPECT_NE(o.find("(ranks from SLURM variables)"), std::string::npos) << o;
  EXPECT_NE(o.find("Out of bounds values : 0 OK"), std::string::npos) << o;
}

// MPICH's mpiexec (Hydra) starts processes with PMI_RANK and PMI_SIZE.
TEST_F(Launch, JoinsFromPmiVariables) {
  const fs::path sc = write("pmi.json", R"({"name": "pmi", "transport": "tcp", "workers": 2,
      "sizes": [4096], "iters": 2, "warmup_iters": 1, "schemes": ["ring"], "timeout_ms": 10000})");
  const std::string common = "PMI_SIZE=2 GRADEX_TOKEN=s GRADEX_RENDEZVOUS=127.0.0.1:" +
                             std::to_string(free_port()) + " ";
  const std::string args = " launch --no-output " + sc.string();
  ASSERT_EQ(shell(common + "PMI_RANK=0 " + kGradex + args + " & p0=$!; " + common + "PMI_RANK=1 " +
                  kGradex + args + " > /dev/null; r=$?; wait $p0 || r=1; exit $r"),
            0)
      << slurp(dir_ / "stderr");
  const std::string o = slurp(dir_ / "stdout");
  EXPECT_NE(o.find("launched: 2 processes over tcp (ranks from PMI variables)"), std::string::npos)
      << o;
  EXPECT_NE(o.find("Out of bounds values : 0 OK"), std::string::npos) << o;
}

// torchrun starts its workers with RANK, WORLD_SIZE, LOCAL_RANK,
// MASTER_ADDR and MASTER_PORT: four such processes form a group, rank 0
// hosting the rendezvous at MASTER_ADDR:MASTER_PORT.
TEST_F(Launch, JoinsFromTorchrunVariables) {
  const fs::path sc = write("torchrun.json", R"({"name": "torchrun", "transport": "tcp", "workers": 4,
      "sizes": [4096], "iters": 2, "warmup_iters": 1, "schemes": ["ring"], "timeout_ms": 10000})");
  const std::string common = "WORLD_SIZE=4 GRADEX_TOKEN=s MASTER_ADDR=127.0.0.1 MASTER_PORT=" +
                             std::to_string(free_port()) + " ";
  const std::string args = " launch --no-output " + sc.string();
  std::string cmd;
  for (int r = 1; r < 4; ++r) {
    cmd += common + "RANK=" + std::to_string(r) + " LOCAL_RANK=" + std::to_string(r) + " " +
           kGradex + args + " > /dev/null & p" + std::to_string(r) + "=$!; ";
  }
  cmd += common + "RANK=0 LOCAL_RANK=0 " + kGradex + args +
         "; r=$?; for p in $p1 $p2 $p3; do wait $p || r=1; done; exit $r";
  ASSERT_EQ(shell(cmd), 0) << slurp(dir_ / "stderr");
  const std::string o = slurp(dir_ / "stdout");
  EXPECT_NE(o.find("launched: 4 processes over tcp (ranks from TORCHRUN variables)"),
            std::string::npos)
      << o;
  EXPECT_NE(o.find("Out of bounds values : 0 OK"), std::string::npos) << o;
}

// The same recipe across two network namespaces joined by a veth pair
// (scripts/two_hosts_netns.sh): two network stacks, each rank bound to the
// wildcard and dialled at its host's own address, the link between the
// hosts shaped by the kernel's token bucket. Needs root; skipped without.
TEST_F(Launch, TwoHostsRecipeAcrossNetworkNamespaces) {
  const fs::path sc = write("hosts.json", R"({"name": "hosts", "transport": "tcp",
      "workers": 4, "ranks_per_node": 2, "sizes": [4096, 262144], "iters": 2,
      "warmup_iters": 1, "schemes": ["ring", "hierarchical"], "timeout_ms": 10000,
      "network": {"inter_node": {"bandwidth": "250MB/s", "latency": "20us"}}})");
  const std::string build = fs::path(kGradex).parent_path().string();
  const std::string script = GRADEX_SOURCE_DIR "/scripts/two_hosts_netns.sh";
  const int code = shell("bash " + script + " --check --rate 2gbit --build " + build + " " +
                         sc.string() + " -- --no-output");
  if (code == 77) GTEST_SKIP() << slurp(dir_ / "stderr");
  ASSERT_EQ(code, 0) << slurp(dir_ / "stderr");
  const std::string o = slurp(dir_ / "stdout");
  EXPECT_NE(o.find("launched: 4 processes over tcp (ranks from GRADEX variables)"),
            std::string::npos) << o;
  // The kernel shapes the link; gradex must not shape it a second time.
  EXPECT_NE(o.find("# network: unshaped"), std::string::npos) << o;
  EXPECT_NE(o.find("Out of bounds values : 0 OK"), std::string::npos) << o;
  const std::string e = slurp(dir_ / "stderr");
  EXPECT_NE(e.find("(10.99.0.1)"), std::string::npos) << e;
  EXPECT_NE(e.find("(10.99.0.2)"), std::string::npos) << e;
  EXPECT_NE(e.find("Sent "), std::string::npos) << e;  // the shaper's counters
}

TEST_F(Launch, WrongTokenIsRefused) {
  const fs::path sc = write("tcp.json", R"({"name": "tcp", "transport": "tcp", "workers": 2,
      "sizes": [64], "schemes": ["ring"], "timeout_ms": 1500})");
  const std::string common =
      "GRADEX_WORLD_SIZE=2 GRADEX_RENDEZVOUS=127.0.0.1:" + std::to_string(free_port()) + " ";
  const std::string args = " launch --no-output -n 2 " + sc.string();
  const int code = shell(common + "GRADEX_RANK=0 GRADEX_TOKEN=right " + kGradex + args +
                         " 2> " + (dir_ / "rank0").string() + " & " + common +
                         "GRADEX_RANK=1 GRADEX_TOKEN=wrong " + kGradex + args + "; r=$?; wait; exit $r");
  EXPECT_NE(code, 0);
  EXPECT_NE(slurp(dir_ / "stderr").find("token mismatch"), std::string::npos)
      << slurp(dir_ / "stderr");
  EXPECT_NE(slurp(dir_ / "rank0").find("timed out"), std::string::npos) << slurp(dir_ / "rank0");
}

// Listening on every interface with no token would admit anyone: refused
// up front (exit 2), naming the variable to set.
TEST_F(Launch, BindingBeyondLoopbackWithoutATokenIsBadInput) {
  const fs::path sc = write("tcp.json", R"({"name": "tcp", "transport": "tcp", "workers": 2,
      "sizes": [64], "schemes": ["ring"], "timeout_ms": 1500})");
  const int code = shell("GRADEX_WORLD_SIZE=2 GRADEX_RANK=0 GRADEX_BIND=0.0.0.0 "
                         "GRADEX_ADVERTISE=127.0.0.1 GRADEX_RENDEZVOUS=127.0.0.1:" +
                         std::to_string(free_port()) + " " + kGradex + " launch --no-output -n 2 " +
                         sc.string());
  EXPECT_EQ(code, 2) << err();
  EXPECT_NE(err().find("GRADEX_TOKEN"), std::string::npos) << err();
}

// A rank that never starts: rank 0 says which ones never registered.
TEST_F(Launch, ARankThatNeverStartsIsNamed) {
  const fs::path sc = write("tcp.json", R"({"name": "tcp", "transport": "tcp", "workers": 3,
      "sizes": [64], "schemes": ["ring"], "timeout_ms": 1000})");
  const std::string common = "GRADEX_WORLD_SIZE=3 GRADEX_TOKEN=t GRADEX_RENDEZVOUS=127.0.0.1:" +
                             std::to_string(free_port()) + " ";
  const std::string args = " launch --no-output -n 3 " + sc.string();
  const int code = shell(common + "GRADEX_RANK=1 " + kGradex + args + " 2>/dev/null & " + common +
                         "GRADEX_RANK=0 " + kGradex + args + "; r=$?; wait; exit $r");
  EXPECT_EQ(code, 1) << err();
  EXPECT_NE(err().find("rank 2 never registered"), std::string::npos) << err();
}

// An admitted peer (it knows the token) announcing a 2^36-1 byte frame to a
// launched rank whose plan sends 4 KiB: refused before allocating, naming
// the peer. Rank 0 runs with 2 GB of address space, so an allocation of
// the announced size could not succeed anyway.
TEST_F(Launch, AnOversizedFrameIsRefusedByThePlansLimit) {
  const fs::path sc = write("tcp.json", R"({"name": "tcp", "transport": "tcp", "workers": 2,
      "sizes": [4096], "schemes": ["ring"], "timeout_ms": 4000})");
  const std::string rdv = "127.0.0.1:" + std::to_string(free_port());
  int code = -1;
  // A 2 GB address-space cap makes a 64 GiB allocation fail at once; the
  // sanitizers reserve terabytes of shadow memory, so there the error text
  // alone shows the frame was refused before anything was allocated.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  const std::string cap;
#else
  const std::string cap = "ulimit -v 2000000; ";
#endif
  std::thread rank0([&] {
    code = shell(cap + "GRADEX_WORLD_SIZE=2 GRADEX_RANK=0 GRADEX_TOKEN=t "
                 "GRADEX_RENDEZVOUS=" + rdv + " " + kGradex + " launch --no-output -n 2 " +
                 sc.string());
  });
  try {
    const auto table = tcp::rendezvous(rdv, 1, 2, "t", "127.0.0.1:1", 4000ms);
    testing::RawPeer peer(table[0]);
    EXPECT_EQ(peer.admit(1, 2, 0, "t"), wire::AckStatus::admitted);
    wire::FrameHeader h;
    h.tag = 1;
    h.length = (std::uint64_t{1} << 36) - 1;
    peer.write(h.encode());
    rank0.join();
  } catch (...) {
    rank0.join();
    throw;
  }
  EXPECT_EQ(code, 1) << err();
  EXPECT_NE(err().find("bad frame from rank 1"), std::string::npos) << err();
  EXPECT_NE(err().find("exceeds the limit"), std::string::npos) << err();
}

// The children of `pid`, oldest first (the launcher starts rank 0 first).
std::vector<pid_t> children_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  std::vector<pid_t> kids;
  for (pid_t k; in >> k;) kids.push_back(k);
  return kids;
}

void Launch::killed_worker_run(const std::string& transport) {
  const fs::path out = dir_ / "out";
  // Long enough to be killed mid-run; bounded by the iteration count anyway.
  const fs::path sc = write("long.json", R"({"name": "long", "transport": ")" + transport +
                                              R"(", "workers": 4,
      "sizes": ["1MiB"], "iters": 100000, "warmup_iters": 0, "schemes": ["ring"],
      "timeout_ms": 8000, "output": ")" + out.string() + R"("})");
  const pid_t launcher = ::fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {
    const std::string o = (dir_ / "stdout").string(), e = (dir_ / "stderr").string();
    if (!std::freopen(o.c_str(), "w", stdout) || !std::freopen(e.c_str(), "w", stderr)) _exit(126);
    ::execl(kGradex.c_str(), kGradex.c_str(), "launch", "-n", "4", sc.c_str(), nullptr);
    ::_exit(127);
  }
  // Wait until the run is under way (the group is connected).
  for (int i = 0; i < 200 && slurp(dir_ / "stdout").find("# launched") == std::string::npos; ++i) {
    std::this_thread::sleep_for(25ms);
  }
  std::this_thread::sleep_for(300ms);
  const auto kids = children_of(launcher);
  ASSERT_EQ(kids.size(), 4u);
  const auto t0 = std::chrono::steady_clock::now();
  ::kill(kids[2], SIGKILL);
  int status = 0;
  bool ended = false;
  for (int i = 0; i < 800 && !ended; ++i) {  // at most 20 s
    ended = ::waitpid(launcher, &status, WNOHANG) == launcher;
    if (!ended) std::this_thread::sleep_for(25ms);
  }
  if (!ended) {
    ::kill(launcher, SIGKILL);
    for (pid_t k : kids) ::kill(k, SIGKILL);
    ::waitpid(launcher, &status, 0);
    FAIL() << "the launcher did not end";
  }
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_LT(took, 8s) << "the survivors should not wait out their timeout";
  std::cerr << "run ended " << std::chrono::duration<double>(took).count()
            << " s after the kill\n";
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_NE(WEXITSTATUS(status), 0);
  const std::string err = slurp(dir_ / "stderr");
  EXPECT_NE(err.find("rank 2 (pid " + std::to_string(kids[2]) + ") was killed"), std::string::npos)
      << err;
  // Every survivor fails naming the lost peer (directly, or as reported by
  // the survivor that saw its connection drop).
  for (int r : {0, 1, 3}) {
    const std::string head = "gradex: run failed: rank " + std::to_string(r) + ": ";
    const auto at = err.find(head);
    ASSERT_NE(at, std::string::npos) << "rank " << r << ":\n" << err;
    const std::string line = err.substr(at, err.find('\n', at) - at);
    EXPECT_NE(line.find("rank 2"), std::string::npos) << line;
  }
  EXPECT_FALSE(fs::exists(out / "results.csv"));
  EXPECT_FALSE(fs::exists(out / "results.json"));
}

TEST_F(Launch, AKilledWorkerEndsTheRunWithAnErrorNamingIt) {
  for (const std::string transport : {"tcp", "zmq"}) {
    SCOPED_TRACE(transport);
    fs::remove_all(dir_ / "out");
    fs::remove(dir_ / "stdout");
    killed_worker_run(transport);
  }
}

// ---- the environment ------------------------------------------------------------

std::optional<LaunchEnv> from(const std::map<std::string, std::string>& vars) {
  return launch_env([&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

TEST(LaunchEnv, ReadsGradexOpenMpiPmiAndSlurmVariables) {
  EXPECT_FALSE(from({}).has_value());
  auto g = from({{"GRADEX_RANK", "1"}, {"GRADEX_WORLD_SIZE", "4"},
                 {"GRADEX_RENDEZVOUS", "10.0.0.1:29500"}, {"GRADEX_TOKEN", "t"}});
  ASSERT_TRUE(g);
  EXPECT_EQ(g->rank, 1);
  EXPECT_EQ(g->size, 4);
  EXPECT_EQ(g->bind_host, "127.0.0.1");
  auto o = from({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "5"},
                 {"GRADEX_RENDEZVOUS", "h:1"}});
  ASSERT_TRUE(o);
  EXPECT_EQ(o->rank, 3);
  EXPECT_EQ(o->source, "OMPI");
  EXPECT_EQ(o->size_variable, "OMPI_COMM_WORLD_SIZE");
  // MPICH's mpiexec (Hydra) sets PMI_RANK/PMI_SIZE.
  auto p = from({{"PMI_RANK", "2"}, {"PMI_SIZE", "3"}, {"GRADEX_RENDEZVOUS", "h:1"}});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->rank, 2);
  EXPECT_EQ(p->size, 3);
  EXPECT_EQ(p->source, "PMI");
  auto s = from({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"GRADEX_RENDEZVOUS", "h:1"},
                 {"GRADEX_BIND", "0.0.0.0"}, {"GRADEX_ADVERTISE", "10.1.2.3"},
                 {"GRADEX_TOKEN", "t"}});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->advertise, "10.1.2.3");
  // Beyond loopback a token is required; on loopback it may be empty.
  EXPECT_THROW(from({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"GRADEX_RENDEZVOUS", "h:1"},
                     {"GRADEX_BIND", "10.1.2.3"}}),
               ConfigError);
  EXPECT_TRUE(from({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"GRADEX_RENDEZVOUS", "h:1"},
                    {"GRADEX_BIND", "127.0.0.2"}}));
}

// Under srun without a rendezvous: the step's first node (task 0 runs
// there) and a port from the job and step ids, the same on every task.
TEST(LaunchEnv, UnderSrunTheRendezvousIsTheStepsFirstNode) {
  EXPECT_EQ(first_slurm_host("vm"), "vm");
  EXPECT_EQ(first_slurm_host("node3,node1"), "node3");
  EXPECT_EQ(first_slurm_host("gpu[07-09,12],cpu1"), "gpu07");
  EXPECT_EQ(first_slurm_host("gpu[12,07-09]-ib,cpu1"), "gpu12-ib");
  EXPECT_EQ(first_slurm_host("a1,b[2-3]"), "a1");
  for (const char* bad : {"", "[1-2]", "gpu[", "gpu[x]", "gpu]1", "gpu[1-2"}) {
    EXPECT_THROW(first_slurm_host(bad), ConfigError) << bad;
  }
  const auto task = [](const char* rank) {
    return from({{"SLURM_PROCID", rank}, {"SLURM_NTASKS", "4"}, {"SLURM_JOB_ID", "12345"},
                 {"SLURM_STEP_ID", "2"}, {"SLURM_STEP_NODELIST", "gpu[07-08]"},
                 {"SLURM_JOB_NODELIST", "gpu[05-08]"}});
  };
  ASSERT_TRUE(task("0"));
  EXPECT_EQ(task("0")->rendezvous, "gpu07:" + std::to_string(slurm_port(12345, 2)));
  EXPECT_EQ(task("3")->rendezvous, task("0")->rendezvous);
  EXPECT_EQ(task("0")->source, "SLURM");
  EXPECT_NE(slurm_port(12345, 2), slurm_port(12345, 3));  // concurrent steps
  for (long long job : {0LL, 1LL, 99999LL, 2147483647LL}) {
    EXPECT_GE(slurm_port(job, 0), 20000);
    EXPECT_LT(slurm_port(job, 0), 32000);
  }
  // The job's list when the step's is not set; GRADEX_RENDEZVOUS wins.
  EXPECT_EQ(from({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_ID", "7"},
                  {"SLURM_JOB_NODELIST", "n[1-2]"}})->rendezvous,
            "n1:" + std::to_string(slurm_port(7, 0)));
  EXPECT_EQ(from({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_ID", "7"},
                  {"SLURM_JOB_NODELIST", "n[1-2]"}, {"GRADEX_RENDEZVOUS", "h:1"}})->rendezvous,
            "h:1");
  // A malformed list names its variable.
  try {
    from({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_ID", "7"},
          {"SLURM_STEP_NODELIST", "n[1-"}});
    ADD_FAILURE() << "accepted a malformed host list";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "SLURM_STEP_NODELIST");
  }
}

// torchrun's variables: RANK and WORLD_SIZE give the rank, MASTER_ADDR and
// MASTER_PORT the rendezvous (GRADEX_RENDEZVOUS, when set, wins); the
// launchers' own variables come first.
TEST(LaunchEnv, ReadsTorchrunVariables) {
  auto t = from({{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"},
                 {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29500"}});
  ASSERT_TRUE(t);
  EXPECT_EQ(t->rank, 1);
  EXPECT_EQ(t->size, 4);
  EXPECT_EQ(t->source, "TORCHRUN");
  EXPECT_EQ(t->rendezvous, "127.0.0.1:29500");
  auto g = from({{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "127.0.0.1"},
                 {"MASTER_PORT", "29500"}, {"GRADEX_RENDEZVOUS", "127.0.0.1:31000"}});
  ASSERT_TRUE(g);
  EXPECT_EQ(g->rendezvous, "127.0.0.1:31000");
  auto o = from({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"OMPI_COMM_WORLD_RANK", "2"},
                 {"OMPI_COMM_WORLD_SIZE", "3"}, {"GRADEX_RENDEZVOUS", "h:1"}});
  ASSERT_TRUE(o);
  EXPECT_EQ(o->source, "OMPI");
}

TEST(LaunchEnv, BadVariablesNameThemselves) {
  auto field = [](const std::map<std::string, std::string>& vars) {
    try {
      from(vars);
    } catch (const ConfigError& e) {
      return e.field();
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(field({{"GRADEX_RANK", "0"}, {"GRADEX_WORLD_SIZE", "2"}}), "GRADEX_RENDEZVOUS");
  EXPECT_EQ(field({{"GRADEX_RANK", "2"}, {"GRADEX_WORLD_SIZE", "2"}, {"GRADEX_RENDEZVOUS", "h:1"}}),
            "GRADEX_RANK");
  EXPECT_EQ(field({{"GRADEX_RANK", "x"}, {"GRADEX_WORLD_SIZE", "2"}, {"GRADEX_RENDEZVOUS", "h:1"}}),
            "GRADEX_RANK");
  EXPECT_EQ(field({{"SLURM_PROCID", "0"}}), "SLURM_NTASKS");
  EXPECT_EQ(field({{"PMI_RANK", "0"}}), "PMI_SIZE");
  EXPECT_EQ(field({{"PMI_RANK", "3"}, {"PMI_SIZE", "3"}, {"GRADEX_RENDEZVOUS", "h:1"}}), "PMI_RANK");
  EXPECT_EQ(field({{"RANK", "0"}, {"WORLD_SIZE", "2"}}), "GRADEX_RENDEZVOUS");
  EXPECT_EQ(field({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}}), "MASTER_PORT");
  EXPECT_EQ(field({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "x"}}),
            "MASTER_PORT");
  // A wildcard bind advertises the interface routing to the rendezvous;
  // without a rendezvous (under mpirun) or as the address itself, it is refused.
  const auto wild = from({{"GRADEX_RANK", "0"}, {"GRADEX_WORLD_SIZE", "2"},
                          {"GRADEX_RENDEZVOUS", "h:1"}, {"GRADEX_BIND", "0.0.0.0"},
                          {"GRADEX_TOKEN", "t"}});
  ASSERT_TRUE(wild);
  EXPECT_EQ(wild->advertise, "");
  EXPECT_EQ(field({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"},
                   {"GRADEX_BIND", "0.0.0.0"}, {"GRADEX_TOKEN", "t"}}),
            "GRADEX_ADVERTISE");
  EXPECT_EQ(field({{"GRADEX_RANK", "0"}, {"GRADEX_WORLD_SIZE", "2"}, {"GRADEX_RENDEZVOUS", "h:1"},
                   {"GRADEX_BIND", "0.0.0.0"}, {"GRADEX_ADVERTISE", "::"}, {"GRADEX_TOKEN", "t"}}),
            "GRADEX_ADVERTISE");
}

}  // namespace
}  // namespace gradex
