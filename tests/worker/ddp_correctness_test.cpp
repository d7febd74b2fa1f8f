// DDP with trainbench's reducer must be equivalent to one process training on the global batch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <ostream>

#include <nlohmann/json.hpp>

#include "core/results/run_result.hpp"
#include "worker_launcher.hpp"

namespace {

using trainbench::Paradigm;
using trainbench::parse_gradient_compression;
using trainbench::RunConfig;
using trainbench::test::ProcessOutcome;
using trainbench::test::read_file;
using trainbench::test::read_float32_file;
using trainbench::test::run_ranks;
using trainbench::test::TempDir;

constexpr int kSteps = 5;

RunConfig small_mlp(int world, double bucket_cap_mb) {
  RunConfig c;
  c.job_name = "worker-ddp-test";
  c.paradigm = world > 0 ? Paradigm::kDdp : Paradigm::kNone;
  c.nodes = 1;
  c.devices_per_node = std::max(world, 1);
  c.model = "mlp";
  c.mlp.input_size = 32;
  c.mlp.hidden_sizes = {64, 64};
  c.mlp.num_classes = 10;
  c.batch_size_per_device = 16;
  c.warmup_steps = 0;
  c.measure_steps = kSteps;
  c.repeats = 1;
  c.seed = 1234;
  c.learning_rate = 0.05;
  c.threads_per_process = 1;
  c.ddp.bucket_cap_mb = bucket_cap_mb;
  c.collective_timeout_seconds = 60;
  return c;
}

void expect_all_ok(const std::vector<ProcessOutcome>& outs) {
  for (std::size_t r = 0; r < outs.size(); ++r) {
    ASSERT_EQ(outs[r].exit_code, 0) << "rank " << r << (outs[r].timed_out ? " timed out" : "")
                                    << ":\n" << outs[r].output;
  }
}

/// Parameters after a paradigm-none run on the global batch of `world` ranks
/// (learning_rate 0: the initial parameters).
std::vector<float> reference_params(int world, double learning_rate, const TempDir& dir) {
  RunConfig c = small_mlp(0, 25);
  c.learning_rate = learning_rate;
  const std::string prefix = dir.file("ref-lr" + std::to_string(learning_rate));
  expect_all_ok(run_ranks(c, {{"TRAINBENCH_DUMP_PARAMS", prefix},
                              {"TRAINBENCH_REFERENCE_WORLD_SIZE", std::to_string(world)},
                              {"TRAINBENCH_RESULT_FILE", dir.file("ref-result.json")}}));
  return read_float32_file(prefix + ".rank0.bin");
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(double(a[i]) - double(b[i])));
  return m;
}

struct DdpCase {
  std::string implementation;  ///< spec.benchmark.ddp.implementation
  int world;
  double bucket_cap_mb;
  std::string compression;
  bool many_buckets;
  double tolerance;  ///< max |ddp - reference|
};

std::ostream& operator<<(std::ostream& os, const DdpCase& c) {
  return os << c.implementation << ", world " << c.world << ", bucketCapMB " << c.bucket_cap_mb << ", compression "
            << c.compression;
}

class DdpCorrectness : public ::testing::TestWithParam<DdpCase> {};

TEST_P(DdpCorrectness, MatchesGlobalBatchReference) {
  const DdpCase& tc = GetParam();
  TempDir dir;
  RunConfig c = small_mlp(tc.world, tc.bucket_cap_mb);
  c.ddp.gradient_compression = parse_gradient_compression(tc.compression).value();
  c.ddp.implementation = trainbench::parse_enum<trainbench::DdpImplementation>(tc.implementation).value();
  const std::string prefix = dir.file("ddp");
  const std::string result_file = dir.file("result.json");
  expect_all_ok(run_ranks(c, {{"TRAINBENCH_DUMP_PARAMS", prefix},
                              {"TRAINBENCH_RESULT_FILE", result_file}}));

  // Every rank ends with bitwise identical parameters.
  const std::vector<float> rank0 = read_float32_file(prefix + ".rank0.bin");
  const std::int64_t expected_count = 32 * 64 + 64 + 64 * 64 + 64 + 64 * 10 + 10;
  ASSERT_EQ(static_cast<std::int64_t>(rank0.size()), expected_count);
  for (int r = 1; r < tc.world; ++r) {
    const auto other = read_float32_file(prefix + ".rank" + std::to_string(r) + ".bin");
    ASSERT_EQ(other.size(), rank0.size());
    EXPECT_EQ(std::memcmp(other.data(), rank0.data(), rank0.size() * sizeof(float)), 0)
        << "rank " << r << " differs from rank 0 (max diff " << max_abs_diff(other, rank0) << ")";
  }

  // Equivalent to one process on the global batch; and training really moved the parameters.
  const auto reference = reference_params(tc.world, c.learning_rate, dir);
  const auto initial = reference_params(tc.world, 0.0, dir);
  ASSERT_EQ(reference.size(), rank0.size());
  double worst_rel = 0;
  for (std::size_t i = 0; i < rank0.size(); ++i) {
    const double d = std::fabs(double(rank0[i]) - double(reference[i]));
    worst_rel = std::max(worst_rel, d / (std::fabs(double(reference[i])) + 1e-3));
  }
  const double diff = max_abs_diff(rank0, reference);
  EXPECT_LE(diff, tc.tolerance) << "DDP differs from the global-batch reference";
  EXPECT_LE(worst_rel, tc.tolerance * 100) << "relative difference";
  const double moved = max_abs_diff(reference, initial);
  std::cout << "max |ddp - reference| = " << diff << ", max relative " << worst_rel
            << ", max |reference - initial| = " << moved << "\n";
  EXPECT_GT(moved, 1e-3) << "parameters did not change: the test could not fail";
  EXPECT_GT(moved, 100 * diff);

  // Result: bucket count and shape, and whose DDP ran.
  const auto result = trainbench::run_result_from_json(nlohmann::json::parse(read_file(result_file)));
  EXPECT_EQ(result.environment.ddp, tc.implementation);
  EXPECT_EQ(result.world_size, tc.world);
  EXPECT_EQ(result.parameter_count, expected_count);
  if (tc.many_buckets) {
    EXPECT_GT(result.ddp_bucket_count, 1);
  } else {
    EXPECT_EQ(result.ddp_bucket_count, 1);
  }
  ASSERT_EQ(static_cast<int>(result.ranks.size()), tc.world);
  for (int r = 0; r < tc.world; ++r) {
    EXPECT_EQ(result.ranks[static_cast<std::size_t>(r)].rank, r);
    ASSERT_EQ(result.ranks[static_cast<std::size_t>(r)].step_seconds.size(), 1U);
    EXPECT_EQ(result.ranks[static_cast<std::size_t>(r)].step_seconds[0].size(), std::size_t{kSteps});
  }
}

// 0.01 MB splits the 32-64-64-10 mlp (27 KB of fp32 gradients) into 2 buckets (fc3+fc2, fc1);
// 1000 MB: one (the first bucket closes at 1 MiB, more than the model). PyTorch's reducer starts
// with one bucket and rebuilds them after the first backward pass, in the order gradients
// became ready: the same two here.
INSTANTIATE_TEST_SUITE_P(
    Worker, DdpCorrectness,
    ::testing::Values(DdpCase{"pytorch", 2, 0.01, "none", true, 1e-5}, DdpCase{"pytorch", 2, 1000, "none", false, 1e-5},
                      DdpCase{"pytorch", 3, 0.01, "none", true, 1e-5}, DdpCase{"pytorch", 2, 0.01, "fp16", true, 1e-3},
                      DdpCase{"pytorch", 2, 0.01, "bf16", true, 1e-2},
                      DdpCase{"trainbench", 2, 0.01, "none", true, 1e-5},
                      DdpCase{"trainbench", 2, 1000, "none", false, 1e-5},
                      DdpCase{"trainbench", 3, 0.01, "none", true, 1e-5},
                      DdpCase{"trainbench", 3, 1000, "none", false, 1e-5},
                      DdpCase{"trainbench", 2, 0.01, "fp16", true, 1e-3},
                      DdpCase{"trainbench", 2, 0.01, "bf16", true, 1e-2}),
    [](const auto& tc_info) {
      std::string cap = tc_info.param.bucket_cap_mb < 1 ? "SmallBuckets" : "OneBucket";
      return tc_info.param.implementation + "_World" + std::to_string(tc_info.param.world) + cap +
             (tc_info.param.compression == "none" ? "" : "_" + tc_info.param.compression);
    });

}  // namespace
