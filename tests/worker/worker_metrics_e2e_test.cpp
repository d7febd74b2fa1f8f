// trainbench-worker with TRAINBENCH_METRICS_PORT: each rank serves /metrics on port + LOCAL_RANK
// while it trains and, with TRAINBENCH_METRICS_LINGER_SECONDS, a while after; the scraped values
// agree with the run's result.
#include <gtest/gtest.h>

#include <filesystem>
#include <future>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/results/run_result.hpp"
#include "scrape.hpp"
#include "worker_launcher.hpp"

namespace {

bool port_is_free(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  if (fd >= 0) ::close(fd);
  return ok;
}

/// The first of two consecutive free ports (ranks listen on base + LOCAL_RANK), below Linux's
/// ephemeral range (32768-60999) so that no socket bound to port 0 meanwhile (gloo's) can take
/// one; 0 when none.
int free_port_pair() {
  for (int candidate = 20000 + static_cast<int>(::getpid() % 5000) * 2; candidate < 32000; candidate += 2) {
    if (port_is_free(candidate) && port_is_free(candidate + 1)) return candidate;
  }
  return 0;
}

using trainbench::RunConfig;
using trainbench::test::read_file;
using trainbench::test::run_ranks;
using trainbench::test::scrape;
using trainbench::test::TempDir;
using trainbench::test::value;

TEST(WorkerMetricsE2E, EveryRankServesMetricsThatAgreeWithTheResult) {
  RunConfig c = trainbench::test::tiny_mlp_run("metrics-e2e", "ddp", 2);
  c.index = 1;
  c.warmup_steps = 2;
  c.measure_steps = 5;
  TempDir dir;
  const int base = free_port_pair();
  ASSERT_GT(base, 0);
  auto ranks = std::async(std::launch::async, [&] {
    return run_ranks(c, {{"TRAINBENCH_RESULT_FILE", dir.file("r.json")},
                         {"TRAINBENCH_METRICS_PORT", std::to_string(base)},
                         {"TRAINBENCH_METRICS_HOST", "127.0.0.1"},
                         {"TRAINBENCH_METRICS_LINGER_SECONDS", "5"}});
  });
  // Rank 0 writes the result, then lingers: scrape both ranks then.
  for (int i = 0; i < 600 && !std::filesystem::exists(dir.file("r.json")); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!std::filesystem::exists(dir.file("r.json"))) {
    for (const auto& o : ranks.get()) ADD_FAILURE() << "exit " << o.exit_code << ": " << o.output;
    FAIL() << "no result";
  }
  const auto result = trainbench::run_result_from_json(nlohmann::json::parse(read_file(dir.file("r.json"))));
  for (int rank = 0; rank < 2; ++rank) {
    const std::string text = scrape(base + rank);
    ASSERT_FALSE(text.empty()) << "rank " << rank << " does not serve /metrics on " << base + rank;
    const std::string me = "rank=\"" + std::to_string(rank) + "\"";
    EXPECT_NE(text.find("benchmark_job=\"metrics-e2e\""), std::string::npos);
    EXPECT_NE(text.find("run=\"1\""), std::string::npos);
    EXPECT_NE(text.find(me), std::string::npos);
    EXPECT_EQ(value(text, "trainbench_steps_total", me), 12) << "2 warm-up + 2 x 5 measured";
    EXPECT_EQ(value(text, "trainbench_steps_planned", me), 12);
    EXPECT_EQ(value(text, "trainbench_step_duration_seconds_count", me), 10);
    double sum = 0;
    for (const auto& rep : result.ranks[static_cast<std::size_t>(rank)].step_seconds) {
      for (double s : rep) sum += s;
    }
    EXPECT_NEAR(value(text, "trainbench_step_duration_seconds_sum", me), sum, 1e-6 * sum + 1e-9)
        << "the histogram holds the same step times as the report";
    EXPECT_EQ(value(text, "trainbench_examples_total", me), 80);
    // 16x32 + 32 + 32x4 + 4 = 676 fp32 gradients, all-reduced every step (warm-up included).
    EXPECT_EQ(value(text, "trainbench_allreduce_bytes_total", me), 12 * 676 * 4);
    EXPECT_GT(value(text, "trainbench_memory_peak_rss_bytes", me), 1 << 20);
    EXPECT_GT(value(text, "trainbench_process_cpu_seconds_total", me), 0);
  }
  const auto outs = ranks.get();
  for (const auto& o : outs) EXPECT_EQ(o.exit_code, 0) << o.output;
}

// TRAINBENCH_METRICS_AWAIT_SCRAPE_SECONDS: the rank serves /metrics and waits before its warm-up
// until it is scraped (a tiny run is otherwise over in milliseconds); the first scrape sees no
// step yet, and the run then trains to its result.
TEST(WorkerMetricsE2E, AwaitScrapeHoldsTheWarmUpUntilTheFirstScrape) {
  const RunConfig c = trainbench::test::tiny_mlp_run("await-scrape", "none", 1);
  TempDir dir;
  const int port = free_port_pair();
  ASSERT_GT(port, 0);
  auto ranks = std::async(std::launch::async, [&] {
    return run_ranks(c, {{"TRAINBENCH_RESULT_FILE", dir.file("r.json")},
                         {"TRAINBENCH_METRICS_PORT", std::to_string(port)},
                         {"TRAINBENCH_METRICS_HOST", "127.0.0.1"},
                         {"TRAINBENCH_METRICS_AWAIT_SCRAPE_SECONDS", "120"}});
  });
  // Serving (a path other than /metrics answers 404 and is no scrape).
  int status = 0;
  for (int i = 0; i < 600 && status == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    status = trainbench::test::http_request(port, "GET", "/healthz").status;
  }
  ASSERT_EQ(status, 404) << "the rank does not serve on " << port;
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_FALSE(std::filesystem::exists(dir.file("r.json"))) << "the run did not wait for its first scrape";
  const std::string first = scrape(port);
  EXPECT_EQ(value(first, "trainbench_steps_total"), 0) << first;
  EXPECT_EQ(value(first, "trainbench_step_duration_seconds_count"), 0) << first;
  const auto outs = ranks.get();
  ASSERT_EQ(outs.size(), 1U);
  EXPECT_EQ(outs[0].exit_code, 0) << outs[0].output;
  EXPECT_NE(outs[0].output.find("rank 0: waiting up to 120 s for a first scrape of /metrics"), std::string::npos)
      << outs[0].output;
  EXPECT_EQ(outs[0].output.find("no scrape"), std::string::npos) << outs[0].output;
  EXPECT_TRUE(std::filesystem::exists(dir.file("r.json")));
}

// Nobody scrapes: the wait ends at its bound, the log says so, and the run trains as usual.
TEST(WorkerMetricsE2E, AwaitScrapeEndsAtItsBoundWhenNobodyScrapes) {
  const RunConfig c = trainbench::test::tiny_mlp_run("await-scrape", "none", 1);
  TempDir dir;
  const int port = free_port_pair();
  ASSERT_GT(port, 0);
  const auto outs = run_ranks(c, {{"TRAINBENCH_RESULT_FILE", dir.file("r.json")},
                                  {"TRAINBENCH_METRICS_PORT", std::to_string(port)},
                                  {"TRAINBENCH_METRICS_HOST", "127.0.0.1"},
                                  {"TRAINBENCH_METRICS_AWAIT_SCRAPE_SECONDS", "1"}});
  ASSERT_EQ(outs.size(), 1U);
  EXPECT_EQ(outs[0].exit_code, 0) << outs[0].output;
  EXPECT_NE(outs[0].output.find("rank 0: no scrape of /metrics within 1 s: training without one"), std::string::npos)
      << outs[0].output;
  EXPECT_TRUE(std::filesystem::exists(dir.file("r.json")));
}

}  // namespace
