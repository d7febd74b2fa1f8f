// `trainbench validate`, `diff`, `version`, help and usage errors, through the real binary.
#include <fstream>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"

namespace trainbench::test {
namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(CliValidate, GoodJob) {
  TempDir dir;
  const std::string job = dir.file("good.yaml");
  write_file(job, mlp_job_yaml("good-job", 2, 10, 2,
                               "    - {nodes: 1, devicesPerNode: 1, paradigm: none}\n"
                               "    - {nodes: 1, devicesPerNode: 1}\n"
                               "    - {nodes: 1, devicesPerNode: 2}\n"));
  const CliResult r = run_cli({"validate", job}, {}, dir.path());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, job + ": valid BenchmarkJob good-job (3 runs)\n");
  EXPECT_EQ(r.err, "");
}

TEST(CliValidate, BadJobNamesEveryField) {
  TempDir dir;
  const std::string job = dir.file("bad.yaml");
  write_file(job, mlp_job_yaml("bad-job", 2, 10, 2,
                               "    - {nodes: 1, devicesPerNode: 0}\n"
                               "    - {nodes: 0, devicesPerNode: 1}\n"));
  const CliResult r = run_cli({"validate", job}, {}, dir.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(contains(r.err, job + ": spec.sweep[0].devicesPerNode: must be >= 1, got 0\n")) << r.err;
  EXPECT_TRUE(contains(r.err, job + ": spec.sweep[1].nodes: must be >= 1, got 0\n")) << r.err;
}

TEST(CliValidate, MissingFileAndNotYaml) {
  TempDir dir;
  const CliResult missing = run_cli({"validate", dir.file("nope.yaml")}, {}, dir.path());
  EXPECT_EQ(missing.code, 2);
  EXPECT_TRUE(contains(missing.err, "nope.yaml")) << missing.err;
  write_file(dir.file("junk.yaml"), "{{{ not: [yaml\n");
  const CliResult junk = run_cli({"validate", dir.file("junk.yaml")}, {}, dir.path());
  EXPECT_EQ(junk.code, 2);
  EXPECT_TRUE(contains(junk.err, "junk.yaml: <yaml>: not valid YAML")) << junk.err;
}

TEST(CliRun, InvalidSpecExits2WithoutRunning) {
  TempDir dir;
  const std::string job = dir.file("bad.yaml");
  write_file(job, mlp_job_yaml("bad-job", 2, 10, 2, "    - {nodes: 1, devicesPerNode: 0}\n"));
  const CliResult r = run_cli({"run", job, "--json", dir.file("out.json")}, {{"TRAINBENCH_WORKER", "/bin/false"}},
                              dir.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, job + ": spec.sweep[0].devicesPerNode: must be >= 1, got 0")) << r.err;
  EXPECT_FALSE(std::ifstream(dir.file("out.json")).good());
}

TEST(CliDiff, GoldenOutput) {
  TempDir dir;
  const CliResult r = run_cli(
      {"diff", data_dir() + "/report-bucket25.json", data_dir() + "/report-bucket1.json"}, {}, dir.path());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, read_file(data_dir() + "/diff-bucket25-vs-bucket1.txt"));
  EXPECT_EQ(r.err, "");
}

TEST(CliDiff, BadReportsExit2NamingFileAndField) {
  TempDir dir;
  const std::string good = data_dir() + "/report-bucket25.json";
  const nlohmann::json report = nlohmann::json::parse(read_file(good));

  nlohmann::json missing = report;
  missing["runs"][1].erase("secPerIter");
  write_file(dir.file("missing.json"), missing.dump());
  CliResult r = run_cli({"diff", good, dir.file("missing.json")}, {}, dir.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(contains(r.err, "missing.json")) << r.err;
  EXPECT_TRUE(contains(r.err, "runs[1].secPerIter")) << r.err;

  write_file(dir.file("notjson.json"), "this is not json\n");
  r = run_cli({"diff", dir.file("notjson.json"), good}, {}, dir.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "notjson.json")) << r.err;
  EXPECT_TRUE(contains(r.err, "not valid JSON")) << r.err;

  nlohmann::json future = report;
  future["schemaVersion"] = 99;
  write_file(dir.file("future.json"), future.dump());
  r = run_cli({"diff", good, dir.file("future.json")}, {}, dir.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "future.json")) << r.err;
  EXPECT_TRUE(contains(r.err, "schemaVersion")) << r.err;

  r = run_cli({"diff", good, dir.file("absent.json")}, {}, dir.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "absent.json")) << r.err;
}

TEST(CliUsage, HelpVersionAndMistakes) {
  TempDir dir;
  CliResult r = run_cli({"--help"}, {}, dir.path());
  EXPECT_EQ(r.code, 0);
  EXPECT_TRUE(contains(r.out, "usage: trainbench")) << r.out;
  for (const char* cmd : {"run", "diff", "validate"}) {
    r = run_cli({cmd, "--help"}, {}, dir.path());
    EXPECT_EQ(r.code, 0) << cmd;
    EXPECT_TRUE(contains(r.out, std::string("usage: trainbench ") + cmd)) << r.out;
  }
  r = run_cli({"version"}, {}, dir.path());
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "trainbench 0.1.0\n");

  r = run_cli({}, {}, dir.path());
  EXPECT_EQ(r.code, 2);
  r = run_cli({"frobnicate"}, {}, dir.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "unknown command \"frobnicate\"")) << r.err;
  r = run_cli({"run"}, {}, dir.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "expected a JOB.yaml file")) << r.err;
  r = run_cli({"run", "a.yaml", "--json"}, {}, dir.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "--json needs a value")) << r.err;
  r = run_cli({"diff", "only-one.json"}, {}, dir.path());
  EXPECT_EQ(r.code, 2);
  r = run_cli({"validate", "--bogus", "x.yaml"}, {}, dir.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "unknown option --bogus")) << r.err;
}

}  // namespace
}  // namespace trainbench::test
