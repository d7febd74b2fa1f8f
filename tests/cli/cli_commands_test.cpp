// `trainbench validate`, `diff`, `report`, `version`, help and usage errors, through the real binary.
#include <fstream>
#include <map>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"
#include "core/plot/scaling_plot.hpp"
#include "core/report/report.hpp"
#include "core/report/report_format.hpp"

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

/// report-bucket25.json with run `run`'s repeats' p50 sec/iter set to `p50s` (the first run's
/// label is "no ddp", the third's "1M/2G"), written to `path`.
std::string with_repeats(const std::string& path, const std::map<int, std::vector<double>>& p50s) {
  nlohmann::json report = nlohmann::json::parse(read_file(data_dir() + "/report-bucket25.json"));
  for (const auto& [run, values] : p50s) {
    nlohmann::json reps = nlohmann::json::array();
    for (double v : values) reps.push_back({{"p50", v}, {"p75", v * 1.01}, {"p90", v * 1.02}, {"p95", v * 1.03}});
    report["runs"][run]["repeats"] = reps;
  }
  write_file(path, report.dump(2));
  return path;
}

std::vector<double> times(const std::vector<double>& v, double f) {
  std::vector<double> out;
  for (double x : v) out.push_back(x * f);
  return out;
}

const std::vector<double> kLowNoise = {0.990, 1.005, 1.000, 1.010, 0.995};  // about 1% between repeats
const std::vector<double> kNoisy = {0.94, 1.06, 1.00, 0.97, 1.03};          // about 6%

TEST(CliDiff, IdenticalReportsAreNoChangeAndPass) {
  TempDir dir;
  const std::string a = with_repeats(dir.file("a.json"), {{0, kLowNoise}, {2, kNoisy}});
  const CliResult r = run_cli({"diff", a, a, "--fail-on-regression", "5"}, {}, dir.path());
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "+0.0% [-1.1%, +1.2%]  ~ (p=1.000 n=5+5)")) << r.out;
  EXPECT_TRUE(contains(r.out,
                       "regression check: ok: no row significantly slower by more than 5% (p50 ex/sec; 4 rows "
                       "compared)\n"))
      << r.out;
}

TEST(CliDiff, TenPercentSlowerWithLowNoiseFailsTheRegressionCheck) {
  TempDir dir;
  const std::string base = with_repeats(dir.file("base.json"), {{2, kLowNoise}});
  const std::string test = with_repeats(dir.file("test.json"), {{2, times(kLowNoise, 1.1)}});
  CliResult r = run_cli({"diff", base, test, "--fail-on-regression", "5"}, {}, dir.path());
  EXPECT_EQ(r.code, 4) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, " 2 CPUs -- 1M/2G:  p75:")) << r.out;
  EXPECT_TRUE(contains(r.out, "-9.1% [")) << r.out;
  EXPECT_TRUE(contains(r.out, "slower (p=0.000 n=5+5)")) << r.out;
  EXPECT_TRUE(contains(r.out,
                       "regression check: REGRESSED: 1 of 4 compared rows significantly slower by more than 5% "
                       "(p50 ex/sec)\n  2 CPUs -- 1M/2G: ex/sec -9.1% ["))
      << r.out;
  // The same diff without the option, or with a threshold above the drop, exits 0.
  r = run_cli({"diff", base, test}, {}, dir.path());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(contains(r.out, "regression check")) << r.out;
  r = run_cli({"diff", base, test, "--fail-on-regression=10"}, {}, dir.path());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "regression check: ok: ")) << r.out;
}

TEST(CliDiff, ThreePercentInsideTheNoiseIsNoSignificantChange) {
  TempDir dir;
  const std::string base = with_repeats(dir.file("base.json"), {{2, kNoisy}});
  const std::string test = with_repeats(dir.file("test.json"), {{2, times({1.05, 0.96, 1.01, 1.08, 0.99}, 1.02)}});
  const CliResult r = run_cli({"diff", base, test, "--fail-on-regression", "1"}, {}, dir.path());
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "]  ~ (p=")) << r.out;
}

TEST(CliDiff, OneRepeatEachCannotTellAndRowsOnOneSideAreListed) {
  TempDir dir;
  const std::string base = with_repeats(dir.file("base.json"), {{2, {1.0}}});
  const std::string test = with_repeats(dir.file("test.json"), {{2, {2.0}}});
  CliResult r = run_cli({"diff", base, test, "--fail-on-regression", "5"}, {}, dir.path());
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "-  cannot tell (n=1+1)\n")) << r.out;
  // report-bucket1.json lacks no run of bucket25 but has one more (4 CPUs) and a failed one.
  r = run_cli({"diff", base, data_dir() + "/report-bucket1.json"}, {}, dir.path());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, " 4 CPUs -- 1M/4G:  only in test\n")) << r.out;
  EXPECT_TRUE(contains(r.out, " 2 CPUs -- 2M/1G:  failed in test\n")) << r.out;
  r = run_cli({"diff", base, test, "--fail-on-regression", "lots"}, {}, dir.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "--fail-on-regression: expected a percentage between 0 and 100, got \"lots\"")) << r.err;
}

TEST(CliDiff, JsonOutputHasEveryRowTheVerdictAndTheRegression) {
  TempDir dir;
  const std::string base = with_repeats(dir.file("base.json"), {{0, kLowNoise}, {2, kLowNoise}});
  const std::string test = with_repeats(dir.file("test.json"), {{0, kLowNoise}, {2, times(kLowNoise, 1.1)}});
  CliResult r = run_cli({"diff", base, test, "--fail-on-regression", "5", "--output", "json"}, {}, dir.path());
  EXPECT_EQ(r.code, 4) << r.out << r.err;  // the exit code is the text diff's
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("schemaVersion"), 1);
  ASSERT_EQ(j.at("rows").size(), 4U) << r.out;
  const nlohmann::json* slowed = nullptr;
  for (const auto& row : j.at("rows")) {
    EXPECT_EQ(row.at("in"), "both") << row;
    if (row.at("name") == "2 CPUs -- 1M/2G") slowed = &row;
  }
  ASSERT_NE(slowed, nullptr) << r.out;
  EXPECT_EQ(slowed->at("verdict"), "slower");
  EXPECT_EQ(slowed->at("samples"), (nlohmann::json{{"baseline", 5}, {"test", 5}}));
  EXPECT_NEAR(slowed->at("change").at("percent").get<double>(), -100.0 / 11, 0.01);  // 1/1.1 - 1
  EXPECT_LT(slowed->at("change").at("highPercent").get<double>(), 0) << *slowed;
  EXPECT_LT(slowed->at("change").at("pValue").get<double>(), 0.05);
  EXPECT_TRUE(slowed->at("regression").get<bool>());
  EXPECT_EQ(slowed->at("baseline").at("repeats"), 5);
  EXPECT_GT(slowed->at("baseline").at("examplesPerSec").get<double>(), 0);
  EXPECT_EQ(j.at("rows")[0].at("verdict"), "no-change") << j.at("rows")[0];
  EXPECT_FALSE(j.at("rows")[0].at("regression").get<bool>());
  EXPECT_EQ(j.at("regression").at("regressed"), true);
  EXPECT_EQ(j.at("regression").at("rows"), nlohmann::json::array({"2 CPUs -- 1M/2G"}));
  EXPECT_EQ(j.at("regression").at("headline"),
            "1 of 4 compared rows significantly slower by more than 5% (p50 ex/sec)");
  // Without a threshold: no regression members, exit 0; rows on one side and failed ones say so.
  r = run_cli({"diff", base, data_dir() + "/report-bucket1.json", "--output=json"}, {}, dir.path());
  EXPECT_EQ(r.code, 0) << r.err;
  const nlohmann::json k = nlohmann::json::parse(r.out);
  EXPECT_FALSE(k.contains("regression"));
  bool only_in_test = false, failed_in_test = false;
  for (const auto& row : k.at("rows")) {
    EXPECT_FALSE(row.contains("regression"));
    if (row.at("name") == "4 CPUs -- 1M/4G") {
      only_in_test = row.at("in") == "test" && !row.contains("baseline") && !row.contains("verdict");
    }
    if (row.at("name") == "2 CPUs -- 2M/1G") {
      failed_in_test = row.at("test").at("phase") == "Failed" &&
                       !row.at("test").at("error").get<std::string>().empty() && !row.contains("verdict") &&
                       !row.contains("examplesPerSecChangePercent");
    }
  }
  EXPECT_TRUE(only_in_test && failed_in_test) << r.out;
  r = run_cli({"diff", base, test, "--output", "yaml"}, {}, dir.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "--output: expected text or json, got \"yaml\"")) << r.err;
}

TEST(CliUsage, HelpVersionAndMistakes) {
  TempDir dir;
  CliResult r = run_cli({"--help"}, {}, dir.path());
  EXPECT_EQ(r.code, 0);
  EXPECT_TRUE(contains(r.out, "usage: trainbench")) << r.out;
  for (const char* cmd : {"run", "diff", "report", "validate"}) {
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

// A saved report prints as `run` printed it (the one formatter), and --plot writes its plot.
TEST(CliReport, PrintsTheRunLayoutAndWritesThePlot) {
  TempDir dir;
  const std::string file = data_dir() + "/report-bucket25.json";
  const Report report = load_report(file);
  CliResult r = run_cli({"report", file, "--plot", dir.file("scaling.svg")}, {}, dir.path());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, format_report(report));
  EXPECT_TRUE(contains(r.out, "2 CPUs -- 1M/2G:  p50:")) << r.out;
  EXPECT_EQ(read_file(dir.file("scaling.svg")), scaling_plot_svg(report));
  EXPECT_TRUE(contains(r.err, "wrote the scaling plot to " + dir.file("scaling.svg"))) << r.err;

  r = run_cli({"report", file}, {}, dir.path());  // no --plot: stdout only, nothing on stderr
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, format_report(report));
  EXPECT_EQ(r.err, "");
}

TEST(CliReport, MistakesExit2NamingTheFileAndField) {
  TempDir dir;
  CliResult r = run_cli({"report"}, {}, dir.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "expected a REPORT.json file")) << r.err;
  r = run_cli({"report", dir.file("missing.json")}, {}, dir.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, dir.file("missing.json"))) << r.err;
  auto j = nlohmann::json::parse(read_file(data_dir() + "/report-bucket25.json"));
  j["runs"][1]["secPerIter"]["p50"] = "fast";
  write_file(dir.file("bad.json"), j.dump());
  r = run_cli({"report", dir.file("bad.json"), "--plot", dir.file("bad.svg")}, {}, dir.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "runs[1].secPerIter.p50")) << r.err;
  EXPECT_FALSE(std::ifstream(dir.file("bad.svg")).good());
  r = run_cli({"report", data_dir() + "/report-bucket25.json", "--plot", dir.file("no-such-dir/x.svg")}, {},
              dir.path());
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(contains(r.err, "cannot write")) << r.err;
}

}  // namespace
}  // namespace trainbench::test
