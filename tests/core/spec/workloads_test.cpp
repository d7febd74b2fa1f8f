// spec.workloads end to end inside core: the plan (workloads x sweep), a program's rank records
// (core/results/program_record: the probe protocol's reader) and the report's per-workload rows,
// baselines and the workload diff (workload_report).

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "core/plot/scaling_plot.hpp"
#include "core/report/report.hpp"
#include "core/report/report_format.hpp"
#include "core/report/report_workloads.hpp"
#include "core/results/program_record.hpp"
#include "core/spec/spec_workloads.hpp"

namespace trainbench {
namespace {

const char* kMixed = R"(apiVersion: trainbench.dev/v1alpha1
kind: BenchmarkJob
metadata: {name: frameworks}
spec:
  benchmark: {model: mlp, batchSizePerDevice: 10, warmupSteps: 1, measureSteps: 4, repeats: 3}
  sweep:
    - {nodes: 1, devicesPerNode: 1, paradigm: none}
    - {nodes: 1, devicesPerNode: 2}
  workloads:
    - name: built-in
    - name: python-ddp
      program:
        command: [python3, train.py]
        args: [--model, mlp]
        env: [{name: LOG_LEVEL, value: debug}]
        flopsPerExample: 2.0e6
)";

TEST(Workloads, PlanRunsEveryWorkloadOverTheWholeSweep) {
  const auto runs = plan_runs(parse_benchmark_job(kMixed), 2);
  ASSERT_EQ(runs.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(runs[i].index, i);
  EXPECT_EQ(runs[0].workload, "built-in");
  EXPECT_FALSE(runs[0].program);
  EXPECT_EQ(runs[0].model, "mlp");
  EXPECT_EQ(runs[0].label(), "built-in no ddp");
  EXPECT_EQ(runs[1].label(), "built-in 1M/2G");
  EXPECT_EQ(runs[2].workload, "python-ddp");
  ASSERT_TRUE(runs[2].program);
  EXPECT_EQ(runs[2].program->command, (std::vector<std::string>{"python3", "train.py"}));
  EXPECT_EQ(runs[2].model, "") << "a program brings its own model";
  EXPECT_EQ(runs[2].paradigm, Paradigm::kDdp) << "the sweep's paradigm none is the built-in worker's";
  EXPECT_EQ(runs[2].label(), "python-ddp 1M/1G");
  EXPECT_EQ(runs[3].label(), "python-ddp 1M/2G");
}

TEST(Workloads, RunConfigCarriesTheProgram) {
  const RunConfig c = plan_runs(parse_benchmark_job(kMixed), 2)[3];
  const RunConfig back = run_config_from_json(nlohmann::json::parse(to_json(c).dump()));
  EXPECT_EQ(back.workload, "python-ddp");
  ASSERT_TRUE(back.program);
  EXPECT_EQ(back.program->args, (std::vector<std::string>{"--model", "mlp"}));
  ASSERT_EQ(back.program->env.size(), 1u);
  EXPECT_EQ(back.program->env[0].value, "debug");
  EXPECT_DOUBLE_EQ(back.program->flops_per_example.value_or(0), 2.0e6);
  // A job without workloads writes neither field: its workers' config is as before.
  const auto plain = to_json(plan_runs(parse_benchmark_job(R"(apiVersion: trainbench.dev/v1alpha1
kind: BenchmarkJob
metadata: {name: plain}
spec: {benchmark: {model: mlp}, sweep: [{}]}
)"),
                                       2)[0]);
  EXPECT_FALSE(plain.contains("workload"));
  EXPECT_FALSE(plain.contains("program"));
}

TEST(Workloads, SpecRoundTripsThroughJson) {
  const BenchmarkJob job = parse_benchmark_job(kMixed);
  const BenchmarkJob back = parse_benchmark_job(to_json(job).dump());
  ASSERT_EQ(back.workloads.size(), 2u);
  EXPECT_FALSE(back.workloads[0].program);
  ASSERT_TRUE(back.workloads[1].program);
  EXPECT_EQ(to_json(back), to_json(job));
}

TEST(Workloads, ExecutorVariablesAreReserved) {
  for (const char* n : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "TRAINBENCH_RANK_RECORD_FILE", "OMP_NUM_THREADS"}) {
    EXPECT_TRUE(is_executor_variable(n)) << n;
  }
  for (const char* n : {"PYTHONPATH", "NCCL_DEBUG", "RANKS", "MY_TRAINBENCH_X"}) EXPECT_FALSE(is_executor_variable(n)) << n;
}

// ---- the rank record ----

RunConfig program_run() { return plan_runs(parse_benchmark_job(kMixed), 2)[3]; }  // 2 ranks, 3 x 4 steps

nlohmann::json good_record(int rank) {
  return nlohmann::json::parse(R"({"kind": "trainbench.dev/rank-record", "version": 1, "rank": )" +
                               std::to_string(rank) + R"(, "worldSize": 2,
    "stepSeconds": [[0.1, 0.1, 0.1, 0.1], [0.2, 0.2, 0.2, 0.2], [0.1, 0.1, 0.1, 0.3]],
    "communicationSeconds": [[0.05, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0.1]],
    "initialLoss": 2.5, "finalLoss": 1.25, "peakMemoryBytes": 1048576, "parameterCount": 1000,
    "environment": {"framework": "torch 2.15.0, Python 3.11.2", "hostname": "h", "deviceName": "cpu x"}})");
}

TEST(ProgramRecord, ReadsARecordAndSplitsComputeFromCommunication) {
  const ProgramRankRecord r = program_rank_record_from_json(good_record(1), program_run(), 1);
  EXPECT_EQ(r.result.rank, 1);
  EXPECT_EQ(r.result.local_rank, 1);
  ASSERT_EQ(r.result.step_seconds.size(), 3u);
  EXPECT_DOUBLE_EQ(r.result.compute_seconds[0][0], 0.05);
  EXPECT_DOUBLE_EQ(r.result.compute_seconds[2][3], 0.2);
  EXPECT_DOUBLE_EQ(r.result.final_loss, 1.25);
  EXPECT_EQ(r.environment.framework, "torch 2.15.0, Python 3.11.2");
  EXPECT_EQ(r.environment.backend, "gloo") << "the run's, unless the record names one";
}

struct BadRecord {
  std::string name;
  std::function<void(nlohmann::json&)> change;
  std::string fragment;
};

TEST(ProgramRecord, NamesWhatIsWrong) {
  const std::vector<BadRecord> cases = {
      {"kind", [](auto& j) { j["kind"] = "x"; }, "kind: must be \"trainbench.dev/rank-record\""},
      {"version", [](auto& j) { j["version"] = 2; }, "version: this trainbench reads version 1, got 2"},
      {"rank", [](auto& j) { j["rank"] = 0; }, "rank: the record of rank 1 says rank 0"},
      {"world", [](auto& j) { j["worldSize"] = 3; }, "worldSize: 3, the run has 2 ranks"},
      {"repeats", [](auto& j) { j["stepSeconds"].erase(2); }, "stepSeconds: has 2 repeats, the run measures 3"},
      {"steps", [](auto& j) { j["stepSeconds"][1].erase(0); }, "stepSeconds[1]: has 3 steps, the run measures 4"},
      {"negative", [](auto& j) { j["stepSeconds"][0][2] = -1; }, "stepSeconds[0][2]: must be a finite number >= 0"},
      {"text", [](auto& j) { j["stepSeconds"][0][2] = "0.1"; }, "stepSeconds[0][2]"},
      {"comm", [](auto& j) { j["communicationSeconds"][0][0] = 0.5; }, "communicationSeconds[0][0]: longer than its step"},
      {"memory", [](auto& j) { j["peakMemoryBytes"] = -5; }, "peakMemoryBytes: must be >= 0"},
      {"missing", [](auto& j) { j.erase("stepSeconds"); }, "stepSeconds"},
  };
  for (const auto& c : cases) {
    nlohmann::json j = good_record(1);
    c.change(j);
    try {
      program_rank_record_from_json(j, program_run(), 1);
      ADD_FAILURE() << c.name << ": accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(c.fragment), std::string::npos) << c.name << ": " << e.what();
    }
  }
}

TEST(ProgramRecord, TextThatIsNotARecord) {
  EXPECT_THROW(parse_program_rank_record("{\"kind\": ", program_run(), 0), std::runtime_error);
  try {
    parse_program_rank_record(std::string(kMaxRankRecordBytes + 1, ' '), program_run(), 0);
    ADD_FAILURE();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("is larger than 64 MiB"), std::string::npos) << e.what();
  }
  const auto r = parse_program_rank_record(good_record(0).dump(), program_run(), 0);
  EXPECT_EQ(r.result.rank, 0);
}

TEST(ProgramRecord, AssemblesTheRunResult) {
  const RunConfig run = program_run();
  const RunResult res = assemble_program_result(run, {program_rank_record_from_json(good_record(0), run, 0),
                                                      program_rank_record_from_json(good_record(1), run, 1)});
  EXPECT_EQ(res.run_index, 3);
  EXPECT_EQ(res.world_size, 2);
  EXPECT_EQ(res.parameter_count, 1000);
  ASSERT_EQ(res.ranks.size(), 2u);
  // The report reads it as it reads the built-in worker's: MFU from the program's flopsPerExample.
  const RunReport rr = summarize_run(run, res);
  ASSERT_TRUE(rr.mfu);
  EXPECT_DOUBLE_EQ(rr.mfu->flops_per_example, 2.0e6);
  EXPECT_EQ(rr.framework, "torch 2.15.0, Python 3.11.2");
  ASSERT_TRUE(rr.stragglers);
  EXPECT_THROW(assemble_program_result(run, {program_rank_record_from_json(good_record(0), run, 0)}), std::runtime_error);
}

// ---- the report ----

RunResult result_of(const RunConfig& run, double step) {
  std::vector<ProgramRankRecord> records;
  for (int r = 0; r < run.world_size(); ++r) {
    nlohmann::json j = good_record(r);
    j["worldSize"] = run.world_size();
    for (auto& rep : j["stepSeconds"]) {
      for (auto& s : rep) s = step * (1 + 0.01 * r);
    }
    j.erase("communicationSeconds");
    records.push_back(program_rank_record_from_json(j, run, r));
  }
  return assemble_program_result(run, records);
}

Report mixed_report() {
  const BenchmarkJob job = parse_benchmark_job(kMixed);
  const auto runs = plan_runs(job, 2);
  std::vector<RunOutcome> outcomes;
  const double steps[] = {0.1, 0.1, 0.4, 0.5};
  for (std::size_t i = 0; i < runs.size(); ++i) outcomes.push_back({result_of(runs[i], steps[i]), ""});
  return build_report(job, runs, outcomes);
}

TEST(WorkloadReport, EachWorkloadAgainstItsOwnBaseline) {
  const Report rep = mixed_report();
  ASSERT_EQ(rep.runs.size(), 4u);
  EXPECT_EQ(rep.runs[2].workload, "python-ddp");
  EXPECT_EQ(rep.runs[1].speedup_baseline_run, 0);
  EXPECT_EQ(rep.runs[3].speedup_baseline_run, 2);
  EXPECT_NEAR(*rep.runs[1].speedup, 2.0, 0.05);  // twice the devices, same step time
  EXPECT_NEAR(*rep.runs[3].speedup, 1.6, 0.05);  // 2 x 0.4 / 0.5
  const Report back = report_from_json(to_json(rep));
  EXPECT_EQ(back.runs[3].workload, "python-ddp");
  EXPECT_EQ(back.runs[3].speedup_baseline_run, 2);
  EXPECT_EQ(back.runs[3].framework, "torch 2.15.0, Python 3.11.2");
}

TEST(WorkloadReport, TheDiffOfTwoWorkloadsMatchesShapes) {
  const Report rep = mixed_report();
  const Report base = workload_report(rep, "built-in");
  const Report test = workload_report(rep, "python-ddp");
  ASSERT_EQ(base.runs.size(), 2u);
  EXPECT_EQ(base.runs[0].label, "1M/1G") << "the no-ddp row is the one-device shape";
  EXPECT_EQ(test.runs[0].label, "1M/1G");
  EXPECT_EQ(test.runs[1].label, "1M/2G");
  EXPECT_EQ(base.baseline_run, 0);
  EXPECT_EQ(test.baseline_run, 0);
  EXPECT_EQ(test.environment.framework, "torch 2.15.0, Python 3.11.2");
  EXPECT_EQ(test.environment.libtorch_version, "") << "the built-in worker's libtorch is not the program's";
  try {
    workload_report(rep, "fsdp");
    ADD_FAILURE();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("its workloads: \"built-in\", \"python-ddp\""), std::string::npos) << e.what();
  }
}

TEST(WorkloadReport, TheWorkloadsSideBySide) {
  const Report rep = mixed_report();
  const std::string table = format_workloads_table(rep);
  EXPECT_NE(table.find("built-in"), std::string::npos) << table;
  EXPECT_NE(table.find("python-ddp"), std::string::npos) << table;
  // one row per shape, each workload's p50 ex/sec and speedup (rank 1 steps 1% slower: 1.99x, 1.59x)
  EXPECT_NE(table.find("1M/1G"), std::string::npos) << table;
  const auto row = table.substr(table.find("1M/2G"));
  EXPECT_NE(row.find("199/s  1.99x"), std::string::npos) << table;
  EXPECT_NE(row.find("39.8/s  1.59x"), std::string::npos) << table;
  EXPECT_NE(format_report(rep).find("Workloads side by side"), std::string::npos);
  // A report of one workload (or none) has no such table.
  EXPECT_EQ(format_workloads_table(workload_report(rep, "built-in")), "");
}

std::size_t count(const std::string& s, const std::string& part) {
  std::size_t n = 0;
  for (auto at = s.find(part); at != std::string::npos; at = s.find(part, at + 1)) ++n;
  return n;
}

TEST(WorkloadReport, ThePlotDrawsOneLinePerWorkload) {
  const std::string svg = scaling_plot_svg(mixed_report());
  // two panels (throughput, efficiency) x one series per workload; the legend names each once
  EXPECT_EQ(count(svg, "<g class=\"series\" data-paradigm=\"none\" fill=\"#0072B2\" data-workload=\"built-in\">"), 2u)
      << "the built-in workload's no-ddp and ddp runs are one line";
  EXPECT_EQ(count(svg, "data-workload=\"python-ddp\">"), 3u) << svg.substr(0, 2000);
  EXPECT_EQ(count(svg, "class=\"series-line\""), 4u);
  EXPECT_EQ(count(svg, "data-kind=\"series\""), 2u);
}

}  // namespace
}  // namespace trainbench
