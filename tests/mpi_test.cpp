// The MPI baselines: planned only where they can run, and, under mpirun,
// side by side with gradex's own schemes in one table, correct for every
// dtype (16-bit types through user-defined MPI ops) and on a sub-group of
// the job (workers plus a dedicated server).
#include <gtest/gtest.h>

#include "baselines/mpi_job.h"
#include "common/errors.h"
#include "config/scenario.h"
#include "process_fixture.h"
#include "runner/plan.h"

namespace gradex {
namespace {

using testing::free_port;
using testing::kGradex;

TEST(MpiPlan, AllLeavesTheBaselinesOutOfAnMpiJob) {
  const RunPlan plan = plan_runs(parse_scenario(
      nlohmann::json::parse(R"({"name": "a", "workers": 2, "sizes": [64], "schemes": "all"})")));
  for (const PlannedRun& run : plan.runs) EXPECT_NE(run.scheme.rfind("mpi", 0), 0u) << run.scheme;
}

TEST(MpiPlan, NamedBaselineOutsideMpirunIsAConfigError) {
  if (!mpi_built()) GTEST_SKIP() << "built without MPI";
  try {
    plan_runs(parse_scenario(nlohmann::json::parse(
        R"({"name": "a", "workers": 2, "sizes": [64], "schemes": ["ring", "mpi"]})")));
    FAIL() << "planned";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/schemes"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("mpirun"), std::string::npos) << e.what();
  }
}

TEST(MpiPlan, ShapedNetworkRejectsTheBaselines) {
  if (!mpi_built()) GTEST_SKIP() << "built without MPI";
  try {
    plan_runs(parse_scenario(nlohmann::json::parse(R"({"name": "a", "workers": 2,
        "sizes": [64], "schemes": ["mpi_reduce_bcast"],
        "network": {"inter_node": {"bandwidth": "1GB/s"}}})")));
    FAIL() << "planned";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "/schemes/0");
    EXPECT_NE(std::string(e.what()).find("cannot shape"), std::string::npos) << e.what();
  }
}

class Mpirun : public testing::ProcessTest {
 protected:
  void SetUp() override {
    if (!mpi_built()) GTEST_SKIP() << "built without MPI";
    if (std::system("command -v mpirun > /dev/null") != 0) GTEST_SKIP() << "no mpirun";
    ProcessTest::SetUp();
  }
  // mpirun over loopback TCP, as root if need be; Open MPI's allocations
  // that live until exit are not gradex's leaks. Its session directory goes
  // under this test's own folder: two mpiruns of concurrent test processes
  // sharing /tmp/ompi.<host>.<uid> race, one removing it as the other
  // creates its part ("A call to mkdir was unable to create ...").
  // `rendezvous` false: no GRADEX_RENDEZVOUS, the MPI job carries it.
  std::string mpirun(int n, bool rendezvous = true) const {
    return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
           "OMPI_MCA_orte_tmpdir_base=" + dir_.string() + " "
           "ASAN_OPTIONS=detect_leaks=0 timeout 120 mpirun -n " +
           std::to_string(n) +
           " --oversubscribe --mca btl tcp,self --mca pml ob1 --mca btl_tcp_if_include lo "
           "-x ASAN_OPTIONS " +
           (rendezvous ? "-x GRADEX_RENDEZVOUS=127.0.0.1:" + std::to_string(free_port()) + " " : "") +
           "-x GRADEX_TOKEN=t " + kGradex + " launch ";
  }
};

TEST_F(Mpirun, BaselinesBesideTheRingInOneTable) {
  // Every dtype once; the 16-bit ones (gradex's kernels inside MPI user
  // ops) with each kind of op.
  const std::pair<std::string, std::string> cases[] = {
      {"float", "sum"}, {"double", "avg"},   {"int32", "max"},
      {"half", "sum"},  {"bfloat16", "avg"}, {"bfloat16", "min"}};
  for (const auto& [dtype, op] : cases) {
    {
      SCOPED_TRACE(dtype + " " + op);
      const auto sc = write("m.json", R"({"name": "m", "transport": "tcp", "workers": 3,
          "sizes": [0, 8, 4104, 131072], "iters": 2, "warmup_iters": 1, "dtype": ")" + dtype +
                                           R"(", "op": ")" + op + R"(",
          "schemes": ["ring", "mpi", "mpi_reduce_bcast"], "timeout_ms": 20000})");
      ASSERT_EQ(shell(mpirun(3) + sc.string() + " --no-output"), 0) << out() << err();
      const std::string o = out();
      EXPECT_NE(o.find("ranks from OMPI variables"), std::string::npos) << o;
      EXPECT_NE(o.find("# mpi: "), std::string::npos) << o;
      EXPECT_NE(o.find("# mpi_reduce_bcast: "), std::string::npos) << o;
      EXPECT_NE(o.find("Out of bounds values : 0 OK"), std::string::npos) << o;
    }
  }
}

// The library's other collectives beside the ring's, on gradex's block
// layout and checked the same way.
TEST_F(Mpirun, CollectivesBesideTheRing) {
  for (const char* collective : {"reduce_scatter", "all_gather", "broadcast"}) {
    SCOPED_TRACE(collective);
    const auto sc = write("c.json", std::string(R"({"name": "c", "transport": "tcp", "workers": 3,
        "sizes": [0, 8, 4104, 131072], "iters": 2, "warmup_iters": 1, "dtype": "half",
        "collective": ")") + collective + R"(", "schemes": ["ring", "mpi"], "timeout_ms": 20000})");
    ASSERT_EQ(shell(mpirun(3) + sc.string() + " --no-output"), 0) << out() << err();
    const std::string o = out();
    EXPECT_NE(o.find("# mpi: "), std::string::npos) << o;
    EXPECT_NE(o.find("Out of bounds values : 0 OK"), std::string::npos) << o;
  }
}

// Under mpirun no rendezvous variable is needed: rank 0 picks a free port
// and the MPI job broadcasts where its store listens.
TEST_F(Mpirun, FormsTheGroupWithoutARendezvousVariable) {
  const auto sc = write("m.json", R"({"name": "m", "transport": "tcp", "workers": 4,
      "sizes": [4096], "iters": 2, "warmup_iters": 1, "schemes": ["ring", "mpi"],
      "timeout_ms": 20000})");
  ASSERT_EQ(shell("GRADEX_DEBUG=1 " + mpirun(4, false) + sc.string() + " --no-output"), 0)
      << out() << err();
  EXPECT_NE(out().find("launched: 4 processes over tcp (ranks from OMPI variables)"),
            std::string::npos)
      << out();
  EXPECT_NE(out().find("Out of bounds values : 0 OK"), std::string::npos) << out();
  EXPECT_NE(err().find("rank 3: rendezvous 127.0.0.1:"), std::string::npos) << err();
}

TEST_F(Mpirun, BaselineOnTheWorkersOfALargerJob) {
  // 3 workers + the PS's dedicated server: 4 processes, and the MPI
  // baseline runs on a communicator of the first 3.
  const auto sc = write("m.json", R"({"name": "m", "transport": "zmq", "workers": 3,
      "sizes": [4096, 65536], "iters": 2, "warmup_iters": 1,
      "schemes": ["ps", "mpi", "ring"], "timeout_ms": 20000, "output": ")" +
                                       (dir_ / "out").string() + R"("})");
  ASSERT_EQ(shell(mpirun(4) + sc.string()), 0) << out() << err();
  EXPECT_NE(out().find("Out of bounds values : 0 OK"), std::string::npos) << out();
  const std::string csv = slurp(dir_ / "out" / "results.csv");
  EXPECT_NE(csv.find("\nmpi,3,"), std::string::npos) << csv;
}

TEST_F(Mpirun, WrongProcessCountNamesTheVariable) {
  const auto sc = write("m.json", R"({"name": "m", "transport": "tcp", "workers": 2,
      "sizes": [64], "schemes": ["mpi"], "timeout_ms": 5000})");
  EXPECT_NE(shell(mpirun(3) + sc.string() + " --no-output"), 0);
  EXPECT_NE(err().find("OMPI_COMM_WORLD_SIZE"), std::string::npos) << err();
}

}  // namespace
}  // namespace gradex
