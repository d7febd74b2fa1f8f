// Every BenchmarkJob under examples/ runs end to end through `trainbench run --quick` with the
// real worker: the example's own model, batch, precision, paradigms and sweep, shortened to
// 1 warmup step, 2 measured steps and 1 repeat. The report has one succeeded run per sweep entry,
// with the labels core plans, and records the shortened steps. Cases are listed when ctest runs
// (a new example is picked up without a rebuild). Skipped when the build has no trainbench-worker.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"
#include "core/run_config.hpp"
#include "core/spec.hpp"

namespace trainbench::test {
namespace {

namespace fs = std::filesystem;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::vector<std::string> example_files() {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(TRAINBENCH_EXAMPLES_DIR)) {
    const std::string ext = e.path().extension().string();
    if (e.is_regular_file() && (ext == ".yaml" || ext == ".yml")) files.push_back(e.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

class ExampleRun : public ::testing::TestWithParam<std::string> {};

TEST_P(ExampleRun, QuickRunPrintsAReport) {
  if (real_worker_exe().empty()) GTEST_SKIP() << "this build has no trainbench-worker";
  const std::string path = std::string(TRAINBENCH_EXAMPLES_DIR) + "/" + GetParam();
  const BenchmarkJob job = load_benchmark_job(path);
  const std::vector<RunConfig> planned = plan_runs(job, 2);

  TempDir dir;
  const CliResult r = run_cli({"run", path, "--quick", "--json", dir.file("report.json")},
                              {{"TMPDIR", dir.path()}, {"TRAINBENCH_WORKER", real_worker_exe()}}, dir.path(), 170);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "trainbench distributed benchmark suite")) << r.out;

  const auto rep = nlohmann::json::parse(read_file(dir.file("report.json")));
  EXPECT_EQ(rep["benchmark"]["warmupSteps"], std::min(job.benchmark.warmup_steps, 1));
  EXPECT_EQ(rep["benchmark"]["measureSteps"], 2);
  EXPECT_EQ(rep["benchmark"]["repeats"], 1);
  ASSERT_EQ(rep["runs"].size(), planned.size()) << rep.dump();
  for (std::size_t i = 0; i < planned.size(); ++i) {
    const auto& run = rep["runs"][i];
    SCOPED_TRACE(run.dump());
    EXPECT_EQ(run["label"], planned[i].label());
    EXPECT_EQ(run["phase"], "Succeeded");
    EXPECT_GT(run["secPerIter"]["p50"].get<double>(), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, ExampleRun, ::testing::ValuesIn(example_files()), [](const auto& tc_info) {
  std::string n = tc_info.param.substr(0, tc_info.param.rfind('.'));
  for (auto& ch : n) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return n;
});

}  // namespace
}  // namespace trainbench::test
