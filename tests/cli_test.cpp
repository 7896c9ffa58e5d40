// The gradex binary end to end: exit codes, one-line errors that name the
// field, no output files on failure, and complete results on success.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/link_presets.h"
#include "config/node_presets.h"
#include "process_fixture.h"
#include "schemes/registry.h"

namespace {

namespace fs = std::filesystem;

using gradex::testing::Outcome;

class Cli : public gradex::testing::ProcessTest {};

// Every registered scheme and every link and node preset, each name on its own line
// and set apart from its description (a name as long as the column once ran
// into its text: "recursive_doublingrecursive doubling").
TEST_F(Cli, ListNamesEverySchemeAndPresetInAColumn) {
  const Outcome o = gradex("list");
  EXPECT_EQ(o.code, 0);
  std::vector<std::string> names;
  for (const auto& e : gradex::scheme_registry()) names.emplace_back(e.name);
  for (const auto& p : gradex::link_presets()) names.emplace_back(p.name);
  for (const auto& p : gradex::node_presets()) names.emplace_back(p.name);
  for (const std::string& name : names) {
    EXPECT_NE(o.out.find("\n  " + name + "  "), std::string::npos) << name << " in\n" << o.out;
  }
}

TEST_F(Cli, HelpDescribesTheSubcommands) {
  const Outcome o = gradex("--help");
  EXPECT_EQ(o.code, 0);
  for (const char* word : {"run", "validate", "list"}) EXPECT_NE(o.out.find(word), std::string::npos);
  const Outcome r = gradex("run --help");
  EXPECT_EQ(r.code, 0);
  for (const char* word : {"--output", "--schemes", "--workers", "--no-output"}) {
    EXPECT_NE(r.out.find(word), std::string::npos) << word;
  }
}

TEST_F(Cli, AloneItPrintsHelpAndTheVersionNamesTheCommit) {
  const Outcome o = gradex("");
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("SUBCOMMAND"), std::string::npos) << o.out;
  const Outcome v = gradex("--version");
  EXPECT_EQ(v.code, 0);
  // "gradex 1.2.3 (commit abc123)\n"
  const auto commit = v.out.find(" (commit ");
  ASSERT_NE(commit, std::string::npos) << v.out;
  const std::string version = v.out.substr(7, commit - 7);
  EXPECT_EQ(v.out.rfind("gradex ", 0), 0u) << v.out;
  EXPECT_EQ(std::count(version.begin(), version.end(), '.'), 2) << v.out;
  EXPECT_EQ(version.find_first_not_of("0123456789."), std::string::npos) << v.out;
  EXPECT_GT(v.out.size(), commit + 10) << v.out;
  // The first line ends with the commit; the second says what GPU support
  // the build has.
  const std::string first = v.out.substr(0, v.out.find('\n'));
  EXPECT_EQ(first.back(), ')') << v.out;
  const std::string second = v.out.substr(first.size() + 1);
  EXPECT_NE(second.find("CUDA"), std::string::npos) << v.out;
}

// results.json says what ran: the scenario after every override of the
// command line (so that it re-runs the same plan), the command itself,
// gradex's version and commit, and the libraries' versions.
TEST_F(Cli, ResultsHoldTheEffectiveScenarioAndTheirProvenance) {
  const fs::path out = dir_ / "ov";
  const fs::path sc = write("ov.json", R"({"name": "ov", "sizes": [64], "workers": [2, 3, 4],
      "schemes": ["ps", "ring"], "timeout_ms": 20000, "output": ")" + (dir_ / "elsewhere").string() + R"("})");
  const std::string command = "run " + sc.string() + " --schemes ring --workers 2 -o " + out.string();
  const Outcome o = gradex(command);
  ASSERT_EQ(o.code, 0) << o.err;
  const auto doc = nlohmann::json::parse(slurp(out / "results.json"));
  const auto& scenario = doc["scenario"];
  EXPECT_EQ(scenario["schemes"], nlohmann::json::array({"ring"}));
  EXPECT_EQ(scenario["workers"], nlohmann::json::array({2}));
  EXPECT_EQ(scenario["output"], out.string());
  const auto& machine = doc["machine"];
  EXPECT_NE(machine["command"].get<std::string>().find(command), std::string::npos) << machine;
  for (const char* key : {"gradex", "commit", "hostname", "timestamp_utc"}) {
    EXPECT_TRUE(machine[key].is_string()) << key << " in " << machine;
  }
  for (const char* lib : {"boost", "zeromq", "eigen"}) {
    EXPECT_TRUE(machine["libraries"][lib].is_string()) << lib << " in " << machine;
  }
  // The embedded scenario, run again, plans what ran.
  const fs::path again = write("again.json", scenario.dump());
  const Outcome v = gradex("validate " + again.string());
  ASSERT_EQ(v.code, 0) << v.err;
  EXPECT_NE(v.out.find("1 runs"), std::string::npos) << v.out;
  // Moved onto the simulator, it drops the wall-clock fields the simulator refuses.
  const fs::path sim_out = dir_ / "sim";
  ASSERT_EQ(gradex("simulate " + sc.string() + " -o " + sim_out.string()).code, 0);
  const auto sim = nlohmann::json::parse(slurp(sim_out / "results.json"))["scenario"];
  EXPECT_EQ(sim["transport"], "sim");
  EXPECT_FALSE(sim.contains("timeout_ms")) << sim;
  EXPECT_EQ(gradex("validate " + write("sim.json", sim.dump()).string()).code, 0);
}

// A simulated row says what it cost the event engine, in counts that are
// the same on every machine: a 4-rank ring sends 2 x 3 messages per rank.
// A measured row has no engine to report.
TEST_F(Cli, SimulatedRowsReportTheEngineCounts) {
  const fs::path out = dir_ / "engine";
  const Outcome o = gradex("simulate -s ring -n 4 -b 4KiB --segment 1MiB -o " + out.string());
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("messages"), std::string::npos) << o.out;
  const auto row = nlohmann::json::parse(slurp(out / "results.json"))["results"][0];
  const auto& engine = row["engine"];
  EXPECT_EQ(engine["messages"], 24) << row;
  EXPECT_GE(engine["peak_operations"].get<int>(), 8) << row;
  EXPECT_LE(engine["peak_operations"].get<int>(), 48) << row;
  EXPECT_GE(engine["events"].get<int>(), 24) << row;
  EXPECT_GT(engine["context_switches"].get<int>(), 0) << row;
  const fs::path measured = dir_ / "measured";
  ASSERT_EQ(gradex("run -s ring -n 2 -b 64 --iters 1 --warmup 0 -o " + measured.string()).code, 0);
  const auto real = nlohmann::json::parse(slurp(measured / "results.json"))["results"][0];
  EXPECT_FALSE(real.contains("engine")) << real;
}

// --node names a machine: its ranks per node and links reach the run,
// which says which node it modelled.
TEST_F(Cli, ANodePresetFromAFlagShapesTheRun) {
  const Outcome o = gradex("simulate -s hierarchical -n 16 -b 1MiB --node dgx_a100 --no-output");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("dgx_a100 nodes, ranks per node 8; intra-node 300 GB/s"), std::string::npos)
      << o.out;
}

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// auto says on each line which scheme it ran, and the CSV keeps it.
TEST_F(Cli, AutoNamesTheSchemeItRanAtEachSize) {
  const fs::path out = dir_ / "auto";
  const Outcome o = gradex("run -s auto -n 3 -b 8 -e 8KiB -f 32 --iters 2 -o " + out.string());
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(count_of(o.out, "  (ran "), 3u) << o.out;
  const std::string csv = slurp(out / "results.csv");
  const auto rows = count_of(csv, "\nauto,");
  EXPECT_EQ(rows, 3u) << csv;
  for (const auto& e : gradex::scheme_registry()) {
    if (e.name != "auto" && csv.find(",measured," + e.name + ",,all_reduce\n") != std::string::npos) return;
  }
  ADD_FAILURE() << "no row names a registered scheme in 'chose':\n" << csv;
}

// gradex tune measures auto's candidates and writes the fastest per size;
// auto then runs exactly those, and the table is refused where it does
// not apply.
TEST_F(Cli, TuneWritesATableThatAutoRuns) {
  const fs::path out = dir_ / "tuned";
  const Outcome t = gradex("tune -n 2 -b 4KiB -e 64KiB -f 16 --iters 1 --warmup 0 --rounds 2 -o " +
                           out.string());
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("round 2 of 2"), std::string::npos) << t.out;
  const auto table = nlohmann::json::parse(slurp(out / "tuned.json"));
  EXPECT_EQ(table["transport"], "inproc");
  ASSERT_EQ(table["choices"].size(), 2u) << table;
  std::map<std::size_t, std::string> chosen;
  for (const auto& c : table["choices"]) {
    EXPECT_EQ(c["workers"], 2);
    // The choice is the fastest of the times it records.
    double best = 1e300;
    std::string fastest;
    for (const auto& [name, t] : c["seconds"].items()) {
      if (t.get<double>() < best) {
        best = t.get<double>();
        fastest = name;
      }
    }
    EXPECT_EQ(c["scheme"], fastest) << c;
    EXPECT_GE(c["seconds"].size(), 4u) << "every candidate measured: " << c;
    chosen[c["bytes"].get<std::size_t>()] = fastest;
  }
  const std::string table_path = (out / "tuned.json").string();
  const fs::path sc = write("auto.json", R"({"name": "a", "workers": 2, "schemes": ["auto"],
      "sizes": [4096, 8192, 65536], "iters": 1, "auto": {"table": ")" + table_path + R"("}})");
  const Outcome r = gradex("run " + sc.string() + " --no-output");
  ASSERT_EQ(r.code, 0) << r.err;
  // 8 KiB was not tuned: the nearest tuned size below it decides.
  for (const auto& [bytes, scheme] : std::map<std::size_t, std::string>{
           {4096, chosen[4096]}, {8192, chosen[4096]}, {65536, chosen[65536]}}) {
    const auto line = r.out.find("\n" + std::string(12 - std::to_string(bytes).size(), ' ') +
                                 std::to_string(bytes) + " ");
    ASSERT_NE(line, std::string::npos) << bytes << " in\n" << r.out;
    EXPECT_EQ(r.out.substr(line, r.out.find('\n', line + 1) - line).find("(ran " + scheme + ")") !=
                  std::string::npos,
              true)
        << bytes << " should run " << scheme << ":\n" << r.out;
  }
  for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
           {"run " + sc.string() + " --transport tcp", "was tuned on inproc"},
           {"run " + sc.string() + " -n 3", "has no sizes tuned on 3 workers"},
           {"run " + sc.string() + " -s ring", "applies to the auto scheme"},
           {"tune " + sc.string() + " -o " + out.string(), "tune writes a table; it does not read one"},
           {"tune -n 2 -b 4K -s ring -o " + out.string(), "--schemes: tune measures auto's candidates"},
           {"tune -n 2 -b 4K --transport sim -o " + out.string(), "--transport: tune measures a real transport"},
           {"tune -n 2 -b 4K", "-o: missing"},
           {"tune -n 2 -b 4K --rounds 0 -o " + out.string(), "--rounds: must be at least 1"},
           {"tune -n 2 -b 4K --confirm-rounds -1 -o " + out.string(),
            "--confirm-rounds: must not be negative"},
           {"tune -n 2 -b 4K --processes -o " + out.string(), "--processes: applies to tcp and zmq"}}) {
    const Outcome bad = gradex(args);
    EXPECT_EQ(bad.code, 2) << args;
    EXPECT_NE(bad.err.find(message), std::string::npos) << args << ": " << bad.err;
  }
  // Tuned as gradex launch runs: one process per rank, over tcp; the
  // launched rank 0's tables stay out of tune's output.
  const fs::path tcp = dir_ / "tcp";
  const Outcome p = gradex("tune -n 2 -b 4KiB --iters 1 --warmup 0 --rounds 1 --transport tcp "
                           "--processes -o " + tcp.string());
  ASSERT_EQ(p.code, 0) << p.output();
  EXPECT_NE(p.out.find("transport tcp between processes"), std::string::npos) << p.out;
  EXPECT_EQ(p.out.find("Avg bus bandwidth"), std::string::npos) << p.out;
  const auto launched = nlohmann::json::parse(slurp(tcp / "tuned.json"));
  EXPECT_EQ(launched["transport"], "tcp");
  EXPECT_EQ(launched["about"]["processes"], true);
  EXPECT_EQ(launched["choices"].size(), 1u);
  // A table that is not one names the value at fault.
  const fs::path broken = write("broken.json", R"({"transport": "inproc", "choices": [{"workers": 2}]})");
  const fs::path uses = write("uses.json", R"({"name": "a", "workers": 2, "schemes": ["auto"],
      "sizes": [4096], "auto": {"table": ")" + broken.string() + R"("}})");
  const Outcome bad = gradex("validate " + uses.string());
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("broken.json)#/choices/0/bytes: missing"), std::string::npos) << bad.err;
}

// An nccl-tests log turned into gradex's CSV, and gradex plot drawing it
// beside a gradex run: the figure is chosen from what the files hold, and
// files of different kinds are refused.
TEST_F(Cli, PlotDrawsGradexRowsBesideImportedNcclTests) {
  const fs::path run = dir_ / "run";
  ASSERT_EQ(gradex("run -s ring -n 2 -b 4K -e 64K -f 4 --iters 1 -o " + run.string()).code, 0);
  const fs::path log = write("nccl.log", R"(# nThread 1 nGpus 1 minBytes 8 maxBytes 1024 step: 2(factor)
#
# Using devices
#  Rank  0 Group  0 Pid  11 on    node1 device  0 [0x07] NVIDIA A100-SXM4-80GB
#  Rank  1 Group  0 Pid  12 on    node2 device  0 [0x07] NVIDIA A100-SXM4-80GB
#
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2     float     sum      -1    19.90    0.00    0.00      0    19.51    0.00    0.00      0
        1024           256     float     sum      -1    21.02    0.05    0.05      0    20.87    0.05    0.05      0
# Avg bus bandwidth    : 0.0251
)");
  const fs::path imported = dir_ / "nccl";
  fs::create_directories(imported);
  const std::string import = "/usr/bin/python3 " GRADEX_SOURCE_DIR "/scripts/import_nccl_tests.py " +
                             log.string() + " -o " + (imported / "results.csv").string() +
                             " > /dev/null";
  ASSERT_EQ(std::system(import.c_str()), 0);
  const std::string csv = slurp(imported / "results.csv");
  EXPECT_NE(csv.find("\nnccl,2,2,8,2,f32,sum,1.99e-05,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",nccl-tests,,,all_reduce\n"), std::string::npos) << csv;
  const fs::path png = dir_ / "busbw.png";
  const Outcome p = gradex("plot " + (run / "results.csv").string() + " " +
                           (imported / "results.csv").string() + " -o " + png.string());
  ASSERT_EQ(p.code, 0) << p.output();
  EXPECT_NE(p.out.find("(busbw, 5 rows)"), std::string::npos) << p.out;
  EXPECT_GT(fs::file_size(png), 10'000u);
  const fs::path epochs = write("train.csv", "scheme,workers,epoch,train_loss,test_accuracy,train_seconds\nring,2,1,0.5,0.8,1.0\n");
  const Outcome mixed = gradex("plot " + (run / "results.csv").string() + " " + epochs.string() +
                               " -o " + png.string());
  EXPECT_NE(mixed.code, 0);
  EXPECT_NE(mixed.err.find("different kinds of rows; give --kind"), std::string::npos) << mixed.err;
  // Bad files are named with the line and the column, exit 2.
  const fs::path bad = write("bad.csv", "scheme,workers,bytes,time_s,busbw_Bps\nring,2,4096,abc,1\n");
  const Outcome b = gradex("plot " + bad.string() + " -o " + png.string());
  EXPECT_EQ(b.code, 2);
  EXPECT_NE(b.err.find("bad.csv:2: time_s is 'abc', not a number"), std::string::npos) << b.err;
  // Training rows at several worker counts (an emulated model's: no loss,
  // no accuracy): the step against workers; their loss cannot be drawn.
  const fs::path steps = write("steps.csv",
                               "scheme,workers,epoch,train_loss,test_accuracy,train_seconds,"
                               "iteration_s,exposed_s\nring,8,1,,,1,0.045,0.0001\n"
                               "ring,64,1,,,1,0.046,0.001\n");
  const Outcome s = gradex("plot " + steps.string() + " -o " + png.string());
  ASSERT_EQ(s.code, 0) << s.output();
  EXPECT_NE(s.out.find("(train_scaling, 2 rows, 1 line)"), std::string::npos) << s.out;
  // The same scheme at more workers in a second run's file (a sweep run
  // in parts) joins its line; the same count in both keeps a line per run.
  const std::string header = "scheme,workers,epoch,train_loss,test_accuracy,train_seconds,"
                             "iteration_s,exposed_s\n";
  fs::create_directories(dir_ / "more");
  fs::create_directories(dir_ / "again");
  const fs::path more = write("more/results.csv", header + "ring,512,1,,,1,0.05,0.005\n");
  const fs::path again = write("again/results.csv", header + "ring,64,1,,,1,0.047,0.002\n");
  const Outcome joined = gradex("plot " + steps.string() + " " + more.string() + " -o " + png.string());
  ASSERT_EQ(joined.code, 0) << joined.output();
  EXPECT_NE(joined.out.find("(train_scaling, 3 rows, 1 line)"), std::string::npos) << joined.out;
  const Outcome apart = gradex("plot " + steps.string() + " " + again.string() + " -o " + png.string());
  ASSERT_EQ(apart.code, 0) << apart.output();
  EXPECT_NE(apart.out.find("(train_scaling, 3 rows, 2 lines)"), std::string::npos) << apart.out;
  const Outcome losses = gradex("plot " + steps.string() + " --kind training -o " + png.string());
  EXPECT_EQ(losses.code, 2) << losses.output();
  EXPECT_NE(losses.err.find("steps.csv:2: train_loss is empty (an emulated model computes no loss"),
            std::string::npos) << losses.err;
  const Outcome help = gradex("plot --help");
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("--kind"), std::string::npos) << help.out;
}

// A list at a sweepable field runs one point per value (per combination
// when several sweep), in one table and one CSV whose rows name their
// point; results.json re-runs the whole sweep; a bad value is named by
// its index; the commands that run one point refuse a sweep.
TEST_F(Cli, ListsAtSweepableFieldsRunEveryCombination) {
  const fs::path sc = write("sweep.json", R"({"name": "sweep", "workers": 4, "schemes": ["ring", "ps"],
      "sizes": ["1MiB"], "transport": "sim", "ps": {"servers": [1, 2]},
      "network": {"inter_node": {"bandwidth": ["1GB/s", "10GB/s"], "latency": "5us"}}})");
  const fs::path out = dir_ / "out";
  const Outcome o = gradex("simulate " + sc.string() + " -o " + out.string());
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("# sweep point: ps.servers=2 network.inter_node.bandwidth=\"10GB/s\""),
            std::string::npos)
      << o.out;
  const std::string csv = slurp(out / "results.csv");
  EXPECT_EQ(count_of(csv, "\n"), 1u + 4u * 2u) << csv;  // 4 points x 2 schemes
  EXPECT_NE(csv.find(",\"ps.servers=1 network.inter_node.bandwidth=\"\"1GB/s\"\"\",all_reduce\n"),
            std::string::npos)
      << csv;
  const auto doc = nlohmann::json::parse(slurp(out / "results.json"));
  EXPECT_EQ(doc["scenario"]["ps"]["servers"], nlohmann::json::array({1, 2})) << doc["scenario"];
  EXPECT_EQ(doc["results"][0]["sweep"], "ps.servers=1 network.inter_node.bandwidth=\"1GB/s\"");
  const Outcome v = gradex("validate " + write("again.json", doc["scenario"].dump()).string());
  ASSERT_EQ(v.code, 0) << v.err;
  EXPECT_NE(v.out.find("4 sweep points x 2 runs x 1 sizes"), std::string::npos) << v.out;
  // Each point ran its own values: the ring's time falls with the
  // bandwidth (1 MiB at 1 and 10 GB/s), the PS's with the servers.
  std::map<std::string, double> time;
  std::istringstream lines(csv);
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> f;
    std::istringstream cells(line);
    for (std::string c; std::getline(cells, c, ',');) f.push_back(c);
    if (f.size() < 8 || f[0] == "scheme") continue;
    const std::string point = line.substr(line.find(",simulated,,") + 12,
                                          line.rfind(",all_reduce") - line.find(",simulated,,") - 12);
    time[f[0] + " " + point] = std::stod(f[7]);
  }
  const std::string at1 = "\"ps.servers=1 network.inter_node.bandwidth=\"\"1GB/s\"\"\"";
  const std::string at10 = "\"ps.servers=1 network.inter_node.bandwidth=\"\"10GB/s\"\"\"";
  const std::string two = "\"ps.servers=2 network.inter_node.bandwidth=\"\"1GB/s\"\"\"";
  ASSERT_EQ(time.size(), 8u) << csv;
  EXPECT_GT(time["ring " + at1], 5 * time["ring " + at10]) << csv;
  EXPECT_GT(time["ps " + at1], 1.5 * time["ps " + two]) << csv;
  for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
           {"validate " + write("bad.json", R"({"name": "b", "sizes": [4], "ps": {"servers": [1, -2]}})").string(),
            "bad.json#/ps/servers/1: must be between"},
           {"validate " + write("empty.json", R"({"name": "b", "sizes": [4], "segment_bytes": []})").string(),
            "empty.json#/segment_bytes: an empty list sweeps nothing"},
           {"launch -n 4 " + sc.string() + " --transport tcp", "sweep.json#/ps/servers: a list here sweeps"},
           {"tune -b 4K --servers 1,2 -o " + out.string(), "--servers: a list here sweeps"}}) {
    const Outcome bad = gradex(args);
    EXPECT_EQ(bad.code, 2) << args << ": " << bad.output();
    EXPECT_NE(bad.err.find(message), std::string::npos) << args << ": " << bad.err;
  }
}

// nccl-tests' habit: a run from flags alone. The scenario it embeds holds
// every field the flags set and re-runs to the same plan; a bad value
// names the flag that gave it; a field flag over a file overrides it.
TEST_F(Cli, FlagsAloneMakeTheScenario) {
  const fs::path out = dir_ / "flags";
  const Outcome o = gradex("run -s ring -n 2,3 -b 4KiB -e 64KiB -f 4 --iters 2 --warmup 0 "
                           "--link 2GB/s --latency 5us -o " + out.string());
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("# gradex run: flags"), std::string::npos) << o.out;
  const auto doc = nlohmann::json::parse(slurp(out / "results.json"));
  EXPECT_EQ(doc["results"].size(), 2u * 3u);  // 2 worker counts x 4, 16, 64 KiB
  const auto& scenario = doc["scenario"];
  EXPECT_EQ(scenario["sizes"]["factor"], 4);
  EXPECT_EQ(scenario["network"]["inter_node"]["bandwidth"], "2GB/s");
  const Outcome v = gradex("validate " + write("again.json", scenario.dump()).string());
  ASSERT_EQ(v.code, 0) << v.err;
  EXPECT_NE(v.out.find("2 runs x 3 sizes"), std::string::npos) << v.out;
  for (const auto& [flags, named] : std::vector<std::pair<std::string, std::string>>{
           {"-s ring", "-b: missing"},
           {"-s ring -b 4K -e 1K", "-e: must not be below"},
           {"-s ring -b 4K --link moon", "--link: unknown link preset 'moon'"},
           {"-s ring -b 4K --latency 5us", "--latency: applies with --link only"},
           {"-s ring -b 4K --node dgx_h100 --link 1GB/s", "--link: the node preset 'dgx_h100' fixes it"},
           {"-s ring -b 4K --node dgx_h100 --ranks-per-node 4", "--ranks-per-node: the node preset"},
           {"-s ring -b 4K --node moon", "--node: unknown node preset 'moon'"},
           {"-s ring -b 4K --iters 0", "--iters: must be between 1"}}) {
    const Outcome bad = gradex("run " + flags);
    EXPECT_EQ(bad.code, 2) << flags;
    EXPECT_NE(bad.err.find(named), std::string::npos) << flags << ": " << bad.err;
  }
  // Over a file: -b and -e replace its sizes.
  const fs::path sc = write("f.json", R"({"name": "f", "sizes": [64, 128], "workers": 2,
      "schemes": ["ring"]})");
  const Outcome over = gradex("validate " + sc.string() + " -b 1KiB -e 4KiB");
  ASSERT_EQ(over.code, 0) << over.err;
  EXPECT_NE(over.out.find("1 runs x 3 sizes"), std::string::npos) << over.out;
}

TEST_F(Cli, WrongFlagIsBadInput) {
  const Outcome o = gradex("run --frobnicate x.json");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("frobnicate"), std::string::npos) << o.err;
}

TEST_F(Cli, MalformedScenarioGivesOneLineNoFiles) {
  const fs::path out = dir_ / "out";
  const fs::path sc = write("bad.json", R"({"name": "bad", "sizes": [4096], "workers": 2,
      "network": {"inter_node": {"bandwidth": "fast"}}, "output": ")" + out.string() + R"("})");
  const Outcome o = gradex("run " + sc.string());
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("/network/inter_node/bandwidth"), std::string::npos) << o.err;
  EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(Cli, UnknownSchemeOnTheCommandLine) {
  const fs::path sc = write("ok.json", R"({"name": "ok", "sizes": [64], "workers": 2})");
  const Outcome o = gradex("run --no-output --schemes ring,rnig " + sc.string());
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("--schemes: unknown scheme 'rnig' (did you mean 'ring'?)"), std::string::npos) << o.err;
}

TEST_F(Cli, RunWritesCompleteResults) {
  const fs::path out = dir_ / "out";
  const fs::path sc = write("ok.json", R"({"name": "ok", "sizes": [4096, 65536], "workers": [2, 3],
      "iters": 2, "warmup_iters": 1, "schemes": "all", "output": ")" + out.string() + R"("})");
  const Outcome o = gradex("run " + sc.string());
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("#wrong"), std::string::npos);
  EXPECT_NE(o.out.find("Out of bounds values : 0 OK"), std::string::npos) << o.out;
  const std::string csv = slurp(out / "results.csv");
  const auto doc = nlohmann::json::parse(slurp(out / "results.json"));
  const std::size_t rows = doc["results"].size();
  EXPECT_EQ(static_cast<std::size_t>(std::count(csv.begin(), csv.end(), '\n')), rows + 1);
  EXPECT_EQ(doc["scenario"]["name"], "ok");
  EXPECT_TRUE(doc["machine"].contains("cpu"));
  for (const auto& row : doc["results"]) {
    EXPECT_EQ(row["wrong"], 0);
    EXPECT_EQ(row["source"], "measured");
    EXPECT_TRUE(row["traffic_matches"].get<bool>());
  }
  // Nothing but the two results files is left behind (no temporaries).
  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(out)) ++files;
  EXPECT_EQ(files, 2);
}

// --unshaped drops the scenario's network: the real one (say, a link
// shaped with tc between hosts) sets the pace instead.
TEST_F(Cli, UnshapedIgnoresTheScenariosNetwork) {
  const fs::path sc = write("shaped.json", R"({"name": "shaped", "sizes": [4096], "workers": 2,
      "iters": 1, "warmup_iters": 0, "schemes": ["ring"],
      "network": {"inter_node": {"bandwidth": "100MB/s", "latency": "1ms"}}})");
  const Outcome shaped = gradex("run --no-output " + sc.string());
  ASSERT_EQ(shaped.code, 0) << shaped.err;
  EXPECT_NE(shaped.out.find("# network (shaped)"), std::string::npos) << shaped.out;
  const Outcome unshaped = gradex("run --no-output --unshaped " + sc.string());
  ASSERT_EQ(unshaped.code, 0) << unshaped.err;
  EXPECT_NE(unshaped.out.find("# network: unshaped"), std::string::npos) << unshaped.out;
  EXPECT_EQ(unshaped.out.find("# network (shaped)"), std::string::npos) << unshaped.out;
}

TEST_F(Cli, ValidateChecksWithoutRunning) {
  const fs::path sc = write("ok.json", R"({"name": "ok", "sizes": [64], "workers": 2})");
  const Outcome o = gradex("validate " + sc.string());
  EXPECT_EQ(o.code, 0);
  EXPECT_NE(o.out.find("valid"), std::string::npos);
}

}  // namespace
