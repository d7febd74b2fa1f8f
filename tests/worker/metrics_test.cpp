// The worker's /metrics: served over HTTP by prometheus-cpp, in Prometheus's text format, with
// the documented names, labels and values.
#include "worker/metrics.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <regex>
#include <string>
#include <thread>

#include "scrape.hpp"

using trainbench::worker::BuildInfo;
using trainbench::worker::MetricLabels;
using trainbench::worker::WorkerMetrics;
using trainbench::test::scrape;
using trainbench::test::value;

namespace {

MetricLabels labels() { return {"bj", "1", "trainer", "3", "1", "mlp", "ddp", 4}; }

}  // namespace

TEST(WorkerMetrics, ServesStepsProgressAndProcessMetrics) {
  auto m = WorkerMetrics::serve("127.0.0.1:0", labels(), BuildInfo{"0.1.0", "1.13.1", "gloo", "cpu"});
  ASSERT_GT(m->port(), 0);
  m->set_planned_steps(5);
  m->observe_step(0.5, 0.1, 16, 1000, false);  // warm-up: progress and bytes only
  m->observe_step(0.2, 0.05, 16, 1000, true);
  m->observe_step(0.3, 0.1, 16, 1000, true);
  m->refresh_process();
  m->set_sent_bytes(1500);
  m->set_sent_bytes(4000);  // a running total: the counter grows by the difference
  const std::string text = scrape(m->port());
  ASSERT_FALSE(text.empty());

  const std::string series = R"(benchmark_job="bj",model="mlp",node="1",paradigm="ddp",rank="3",role="trainer",run="1")";
  EXPECT_NE(text.find("trainbench_steps_total{" + series + "} 3"), std::string::npos) << text;
  EXPECT_EQ(value(text, "trainbench_steps_planned"), 5);
  EXPECT_EQ(value(text, "trainbench_world_size"), 4);
  EXPECT_EQ(text.find("{job="), std::string::npos) << "\"job\" is Prometheus's target label";
  EXPECT_EQ(value(text, "trainbench_step_duration_seconds_count"), 2) << "warm-up steps are not timed";
  EXPECT_NEAR(value(text, "trainbench_step_duration_seconds_sum"), 0.5, 1e-9);
  EXPECT_EQ(value(text, "trainbench_step_duration_seconds_bucket", "le=\"0.25\""), 1);
  EXPECT_EQ(value(text, "trainbench_step_duration_seconds_bucket", "le=\"+Inf\""), 2);
  EXPECT_NEAR(value(text, "trainbench_communication_seconds_total"), 0.15, 1e-9);
  EXPECT_NEAR(value(text, "trainbench_compute_seconds_total"), 0.35, 1e-9);
  EXPECT_EQ(value(text, "trainbench_examples_total"), 32);
  EXPECT_NEAR(value(text, "trainbench_examples_per_second"), 16 / 0.3, 1e-6);
  EXPECT_EQ(value(text, "trainbench_allreduce_bytes_total"), 3000);
  EXPECT_EQ(value(text, "trainbench_collective_sent_bytes_total"), 4000);
  EXPECT_GT(value(text, "trainbench_memory_rss_bytes"), 1e6);
  EXPECT_GE(value(text, "trainbench_memory_peak_rss_bytes"), value(text, "trainbench_memory_rss_bytes"));
  EXPECT_GE(value(text, "trainbench_process_cpu_seconds_total"), 0);
  EXPECT_EQ(value(text, "trainbench_info", "libtorch_version=\"1.13.1\""), 1);
  // Counters carry _total, every family has HELP and TYPE.
  std::regex type_line("# TYPE (\\S+) (counter|gauge|histogram)");
  int families = 0;
  for (std::sregex_iterator it(text.begin(), text.end(), type_line), end; it != end; ++it) {
    const std::string name = (*it)[1], type = (*it)[2];
    if (name.rfind("exposer_", 0) == 0) continue;  // prometheus-cpp's own exposer metrics
    ++families;
    EXPECT_EQ(name.rfind("trainbench_", 0), 0u) << name;
    EXPECT_EQ(type == "counter", name.size() > 6 && name.substr(name.size() - 6) == "_total") << name;
    EXPECT_NE(text.find("# HELP " + name + " "), std::string::npos) << name;
  }
  EXPECT_GE(families, 15);
  EXPECT_EQ(text.find("trainbench_gpu_"), std::string::npos) << "no GPU metrics without a GPU";
}

TEST(WorkerMetrics, BusyPortIsAClearError) {
  auto first = WorkerMetrics::serve("127.0.0.1:0", labels(), BuildInfo{});
  const std::string taken = "127.0.0.1:" + std::to_string(first->port());
  try {
    WorkerMetrics::serve(taken, labels(), BuildInfo{});
    FAIL() << "a second exposer on a taken port must fail";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(taken), std::string::npos) << e.what();
  }
}

TEST(WorkerMetrics, AchievedFlopsAndUtilization) {
  auto m = WorkerMetrics::serve("127.0.0.1:0", labels(), BuildInfo{});
  m->observe_step(0.2, 0, 16, 0, true);
  EXPECT_EQ(scrape(m->port()).find("trainbench_achieved_flops"), std::string::npos) << "none before set_model_flops";
  m->set_model_flops(1.5e8, 1e11);  // 150 MFLOP per example, a 100 GFLOP/s peak
  m->observe_step(0.25, 0, 16, 0, true);
  std::string text = scrape(m->port());
  EXPECT_NEAR(value(text, "trainbench_achieved_flops"), 1.5e8 * 16 / 0.25, 1);
  EXPECT_NEAR(value(text, "trainbench_model_flops_utilization_ratio"), 1.5e8 * 16 / 0.25 / 1e11, 1e-9);
  // No peak known: FLOP/s only.
  auto n = WorkerMetrics::serve("127.0.0.1:0", labels(), BuildInfo{});
  n->set_model_flops(1.5e8, std::nullopt);
  n->observe_step(0.25, 0, 16, 0, true);
  text = scrape(n->port());
  EXPECT_GT(value(text, "trainbench_achieved_flops"), 0);
  EXPECT_EQ(text.find("trainbench_model_flops_utilization_ratio"), std::string::npos) << text;
}

// TRAINBENCH_METRICS_AWAIT_SCRAPE_SECONDS's wait: it ends at the first scrape, whether that came
// before it began or while it waits, and otherwise at its timeout. The first scrape already
// holds the step histogram, at zero (the sample a rate() over a short run starts from).
TEST(WorkerMetrics, AwaitScrapeEndsAtTheFirstScrapeOrItsTimeout) {
  auto m = WorkerMetrics::serve("127.0.0.1:0", labels(), BuildInfo{"0.1.0", "1.13.1", "gloo", "cpu"});
  EXPECT_FALSE(m->await_scrape(std::chrono::milliseconds(50))) << "nobody scraped it";
  auto later = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    return scrape(m->port());
  });
  EXPECT_TRUE(m->await_scrape(std::chrono::seconds(60))) << "a scrape while it waits ends the wait";
  const std::string first = later.get();
  EXPECT_EQ(value(first, "trainbench_step_duration_seconds_count"), 0) << first;
  EXPECT_EQ(value(first, "trainbench_step_duration_seconds_bucket", "le=\"+Inf\""), 0) << first;
  EXPECT_TRUE(m->await_scrape(std::chrono::milliseconds(0))) << "once scraped, no wait";
}
