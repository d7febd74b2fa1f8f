#include "worker/metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "telemetry/http_endpoint.hpp"
#include "telemetry/prometheus_handler.hpp"
#include "worker/system_probe.hpp"

namespace trainbench::worker {
namespace {

using prometheus::Counter;
using prometheus::Gauge;
using prometheus::Histogram;


struct ProcSample {
  double cpu_seconds = 0;
  std::int64_t rss_bytes = 0;
  std::int64_t rx_bytes = 0;
  std::int64_t tx_bytes = 0;
};

/// CPU time from getrusage (as the report's utilization), RSS from /proc/self/stat; bytes from
/// /proc/self/net/dev (the network namespace's interfaces: on Kubernetes, the pod's own traffic).
ProcSample sample_process() {
  ProcSample s;
  s.cpu_seconds = process_cpu_seconds();
  std::ifstream stat("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  if (close != std::string::npos) {
    std::istringstream fields(text.substr(close + 2));
    std::vector<std::string> f{std::istream_iterator<std::string>(fields), std::istream_iterator<std::string>()};
    // After "pid (comm) ": state is field 3, rss 24 (1-based) -> index - 3.
    if (f.size() > 21) {
      s.rss_bytes = std::stoll(f[21]) * sysconf(_SC_PAGESIZE);
    }
  }
  std::ifstream dev("/proc/self/net/dev");
  std::string line;
  while (std::getline(dev, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::istringstream nums(line.substr(colon + 1));
    std::int64_t v[16] = {};
    for (auto& x : v) nums >> x;
    if (!nums.fail()) {
      s.rx_bytes += v[0];
      s.tx_bytes += v[8];
    }
  }
  return s;
}

/// Scrapes of /metrics served so far: what await_scrape() waits on.
struct ScrapeCount {
  std::mutex mu;
  std::condition_variable served;
  std::int64_t n = 0;
};

/// The registry's exposition, counting each reply in `count` once its body is built (the values
/// it holds are fixed then).
telemetry::HttpHandler counted_metrics(const std::shared_ptr<prometheus::Registry>& registry,
                                       std::shared_ptr<ScrapeCount> count) {
  return [inner = telemetry::prometheus_handler(registry), count = std::move(count)] {
    telemetry::HttpReply reply = inner();
    {
      const std::lock_guard<std::mutex> lock(count->mu);
      ++count->n;
    }
    count->served.notify_all();
    return reply;
  };
}

}  // namespace

struct WorkerMetrics::Impl {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  std::unique_ptr<telemetry::HttpEndpoint> server;
  std::shared_ptr<ScrapeCount> scrapes = std::make_shared<ScrapeCount>();
  prometheus::Labels labels;

  Histogram* step_seconds = nullptr;
  Histogram* communication_seconds = nullptr;
  Gauge* examples_per_second = nullptr;
  Counter* examples = nullptr;
  Counter* allreduce_bytes = nullptr;
  Counter* compute_seconds_total = nullptr;
  Counter* communication_seconds_total = nullptr;
  Counter* steps = nullptr;
  Gauge* steps_planned = nullptr;
  Gauge* rss = nullptr;
  Gauge* peak_rss = nullptr;
  Counter* cpu_seconds = nullptr;
  Counter* rx = nullptr;
  Counter* tx = nullptr;
  Counter* sent = nullptr;
  std::int64_t sent_so_far = 0;  ///< guarded by `mutex`
  Gauge* world_size = nullptr;
  Gauge* gpu_allocated = nullptr;
  Gauge* gpu_peak = nullptr;
  Gauge* gpu_utilization = nullptr;
  Gauge* gpu_memory_used = nullptr;
  Gauge* achieved_flops = nullptr;  ///< set_model_flops registers these
  Gauge* flops_utilization = nullptr;
  double flops_per_example = 0;
  double peak_flops = 0;

  std::mutex mutex;  ///< guards `last` (counters grow by the difference of two samples)
  ProcSample last;

  template <typename Builder>
  auto& add(Builder builder, const std::string& name, const std::string& help) {
    return builder.Name(name).Help(help).Register(*registry);
  }
};

std::unique_ptr<WorkerMetrics> WorkerMetrics::serve(const std::string& listen, const MetricLabels& l,
                                                    const BuildInfo& build) {
  auto impl = std::make_unique<Impl>();
  impl->labels = {{"benchmark_job", l.benchmark_job},
                  {"run", l.run},
                  {"role", l.role},
                  {"rank", l.rank},
                  {"node", l.node},
                  {"model", l.model},
                  {"paradigm", l.paradigm}};
  const auto& L = impl->labels;
  auto& r = *impl;
  r.add(prometheus::BuildGauge(), "trainbench_info", "Versions of this worker (value 1).")
      .Add({{"version", build.version},
            {"libtorch_version", build.libtorch_version},
            {"backend", build.backend},
            {"device", build.device},
            {"benchmark_job", l.benchmark_job},
            {"run", l.run},
            {"rank", l.rank}})
      .Set(1);
  r.step_seconds = &r.add(prometheus::BuildHistogram(), "trainbench_step_duration_seconds",
                          "Wall time of one measured training step, device synchronized.")
                        .Add(L, telemetry::duration_buckets_seconds());
  r.communication_seconds =
      &r.add(prometheus::BuildHistogram(), "trainbench_communication_duration_seconds",
             "Time a measured step waited on other ranks (exposed communication: the gradients' all-reduce, a "
             "pipeline neighbour, a parameter server, ZeRO's all-gather).")
           .Add(L, telemetry::duration_buckets_seconds());
  r.examples_per_second = &r.add(prometheus::BuildGauge(), "trainbench_examples_per_second",
                                 "Examples per second of this rank over its last measured step.")
                               .Add(L);
  r.examples = &r.add(prometheus::BuildCounter(), "trainbench_examples_total",
                      "Examples this rank processed in measured steps.")
                    .Add(L);
  r.allreduce_bytes = &r.add(prometheus::BuildCounter(), "trainbench_allreduce_bytes_total",
                             "Bytes of gradients this rank all-reduced.")
                           .Add(L);
  r.compute_seconds_total = &r.add(prometheus::BuildCounter(), "trainbench_compute_seconds_total",
                                   "Measured step time not spent waiting for communication.")
                                 .Add(L);
  r.communication_seconds_total =
      &r.add(prometheus::BuildCounter(), "trainbench_communication_seconds_total",
             "Measured step time spent waiting for communication.")
           .Add(L);
  r.steps = &r.add(prometheus::BuildCounter(), "trainbench_steps_total", "Steps done, warm-up included.").Add(L);
  r.steps_planned =
      &r.add(prometheus::BuildGauge(), "trainbench_steps_planned", "Steps this rank will run, warm-up included.")
           .Add(L);
  r.rss = &r.add(prometheus::BuildGauge(), "trainbench_memory_rss_bytes", "Resident set size of this process.")
               .Add(L);
  r.peak_rss = &r.add(prometheus::BuildGauge(), "trainbench_memory_peak_rss_bytes",
                      "Peak resident set size of this process.")
                    .Add(L);
  r.cpu_seconds = &r.add(prometheus::BuildCounter(), "trainbench_process_cpu_seconds_total",
                         "User and system CPU time of this process.")
                       .Add(L);
  r.rx = &r.add(prometheus::BuildCounter(), "trainbench_network_receive_bytes_total",
                "Bytes received on the network interfaces of this process's network namespace.")
              .Add(L);
  r.tx = &r.add(prometheus::BuildCounter(), "trainbench_network_transmit_bytes_total",
                "Bytes sent on the network interfaces of this process's network namespace.")
              .Add(L);
  r.sent = &r.add(prometheus::BuildCounter(), "trainbench_collective_sent_bytes_total",
                  "Bytes this rank sent to other ranks (all-reduce 2(p-1)/p of its size, all-gather (p-1) x, sends), "
                  "as the report's networkBytesPerStep counts them; warm-up included.")
                .Add(L);
  r.world_size = &r.add(prometheus::BuildGauge(), "trainbench_world_size",
                        "Ranks in this rank's run (scaling efficiency divides by it).")
                      .Add(L);
  r.world_size->Set(static_cast<double>(l.world_size));
  r.last = sample_process();
  try {
    std::map<std::string, telemetry::HttpHandler> routes{{"/metrics", counted_metrics(impl->registry, impl->scrapes)}};
    impl->server = std::make_unique<telemetry::HttpEndpoint>(listen, std::move(routes));
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot serve metrics: " + std::string(e.what()));
  }
  return std::unique_ptr<WorkerMetrics>(new WorkerMetrics(std::move(impl)));
}

WorkerMetrics::WorkerMetrics(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
WorkerMetrics::~WorkerMetrics() = default;

int WorkerMetrics::port() const { return impl_->server->port(); }

bool WorkerMetrics::await_scrape(std::chrono::milliseconds timeout) const {
  ScrapeCount& c = *impl_->scrapes;
  std::unique_lock<std::mutex> lock(c.mu);
  return c.served.wait_for(lock, timeout, [&c] { return c.n > 0; });
}

void WorkerMetrics::set_planned_steps(std::int64_t steps) { impl_->steps_planned->Set(static_cast<double>(steps)); }

void WorkerMetrics::observe_step(double step_seconds, double communication_seconds, std::int64_t examples,
                                 std::int64_t allreduce_bytes, bool measured) {
  Impl& r = *impl_;
  r.steps->Increment();
  if (allreduce_bytes > 0) r.allreduce_bytes->Increment(static_cast<double>(allreduce_bytes));
  if (!measured) return;
  r.step_seconds->Observe(step_seconds);
  r.communication_seconds->Observe(communication_seconds);
  r.examples->Increment(static_cast<double>(examples));
  if (step_seconds > 0) r.examples_per_second->Set(static_cast<double>(examples) / step_seconds);
  if (step_seconds > 0 && r.achieved_flops != nullptr) {
    const double achieved = r.flops_per_example * static_cast<double>(examples) / step_seconds;
    r.achieved_flops->Set(achieved);
    if (r.flops_utilization != nullptr) r.flops_utilization->Set(achieved / r.peak_flops);
  }
  r.communication_seconds_total->Increment(communication_seconds);
  r.compute_seconds_total->Increment(step_seconds > communication_seconds ? step_seconds - communication_seconds : 0.0);
}

void WorkerMetrics::set_model_flops(double flops_per_example, std::optional<double> peak_flops) {
  Impl& r = *impl_;
  if (flops_per_example <= 0 || r.achieved_flops != nullptr) return;
  r.flops_per_example = flops_per_example;
  r.achieved_flops = &r.add(prometheus::BuildGauge(), "trainbench_achieved_flops",
                            "Model FLOP/s of this rank over its last measured step: training FLOPs per example (3 x "
                            "forward, 2 per multiply-add) x examples / step time.")
                          .Add(r.labels);
  if (!peak_flops || *peak_flops <= 0) return;
  r.peak_flops = *peak_flops;
  r.flops_utilization = &r.add(prometheus::BuildGauge(), "trainbench_model_flops_utilization_ratio",
                               "Model FLOPs utilization: trainbench_achieved_flops / the device's peak FLOP/s for the "
                               "run's precision (datasheet, spec.benchmark.peakTFLOPS or a GEMM measured on CPU).")
                             .Add(r.labels);
}

void WorkerMetrics::refresh_process() {
  Impl& r = *impl_;
  const ProcSample now = sample_process();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.rss->Set(static_cast<double>(now.rss_bytes));
  r.peak_rss->Set(static_cast<double>(peak_rss_bytes()));
  if (now.cpu_seconds > r.last.cpu_seconds) r.cpu_seconds->Increment(now.cpu_seconds - r.last.cpu_seconds);
  if (now.rx_bytes > r.last.rx_bytes) r.rx->Increment(static_cast<double>(now.rx_bytes - r.last.rx_bytes));
  if (now.tx_bytes > r.last.tx_bytes) r.tx->Increment(static_cast<double>(now.tx_bytes - r.last.tx_bytes));
  r.last = now;
}

void WorkerMetrics::set_sent_bytes(std::int64_t total_bytes) {
  Impl& r = *impl_;
  std::lock_guard<std::mutex> lock(r.mutex);
  if (total_bytes > r.sent_so_far) r.sent->Increment(static_cast<double>(total_bytes - r.sent_so_far));
  r.sent_so_far = std::max(r.sent_so_far, total_bytes);
}

void WorkerMetrics::set_gpu_memory(std::int64_t allocated_bytes, std::int64_t peak_allocated_bytes) {
  Impl& r = *impl_;
  if (r.gpu_allocated == nullptr) {
    r.gpu_allocated = &r.add(prometheus::BuildGauge(), "trainbench_gpu_memory_allocated_bytes",
                             "Bytes held by the CUDA caching allocator's live tensors.")
                           .Add(r.labels);
    r.gpu_peak = &r.add(prometheus::BuildGauge(), "trainbench_gpu_memory_peak_allocated_bytes",
                        "Peak of trainbench_gpu_memory_allocated_bytes.")
                      .Add(r.labels);
  }
  r.gpu_allocated->Set(static_cast<double>(allocated_bytes));
  r.gpu_peak->Set(static_cast<double>(peak_allocated_bytes));
}

void WorkerMetrics::set_gpu_utilization(double utilization_ratio, std::int64_t memory_used_bytes) {
  Impl& r = *impl_;
  if (r.gpu_utilization == nullptr) {
    r.gpu_utilization = &r.add(prometheus::BuildGauge(), "trainbench_gpu_utilization_ratio",
                               "Fraction of the last sample period the GPU was busy (NVML), 0 to 1.")
                             .Add(r.labels);
    r.gpu_memory_used = &r.add(prometheus::BuildGauge(), "trainbench_gpu_memory_used_bytes",
                               "Memory in use on the GPU by all processes (NVML).")
                             .Add(r.labels);
  }
  r.gpu_utilization->Set(utilization_ratio);
  r.gpu_memory_used->Set(static_cast<double>(memory_used_bytes));
}

}  // namespace trainbench::worker
