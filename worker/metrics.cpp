#include "worker/metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <unistd.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <fstream>
#include <iterator>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "worker/system_probe.hpp"

namespace trainbench::worker {
namespace {

using prometheus::Counter;
using prometheus::Gauge;
using prometheus::Histogram;

/// 1 ms to 60 s, about three buckets per decade.
Histogram::BucketBoundaries step_buckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

struct ProcSample {
  double cpu_seconds = 0;
  std::int64_t rss_bytes = 0;
  std::int64_t rx_bytes = 0;
  std::int64_t tx_bytes = 0;
};

/// utime + stime and RSS from /proc/self/stat; bytes from /proc/self/net/dev (the network
/// namespace's interfaces: on Kubernetes, the pod's own traffic).
ProcSample sample_process() {
  ProcSample s;
  std::ifstream stat("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  if (close != std::string::npos) {
    std::istringstream fields(text.substr(close + 2));
    std::vector<std::string> f{std::istream_iterator<std::string>(fields), std::istream_iterator<std::string>()};
    // After "pid (comm) ": state is field 3, utime 14, stime 15, rss 24 (1-based) -> index - 3.
    if (f.size() > 21) {
      const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
      s.cpu_seconds = (std::stod(f[11]) + std::stod(f[12])) / ticks;
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

/// A minimal HTTP/1.1 server for GET /metrics (Boost.Beast, one thread, one connection at a
/// time: Prometheus scrapes a target with one connection). Not prometheus-cpp's civetweb
/// exposer: Debian's civetweb starts its threads with a fixed 100 KiB stack, and in a process
/// with libtorch loaded (whose static thread-local storage is larger) pthread_create fails with
/// EINVAL, so the exposer cannot start in the worker (docs/observability.md).
class MetricsHttpServer {
 public:
  MetricsHttpServer(const std::string& listen, std::shared_ptr<prometheus::Registry> registry)
      : registry_(std::move(registry)), acceptor_(io_) {
    namespace ip = boost::asio::ip;
    const auto colon = listen.rfind(':');
    if (colon == std::string::npos) throw std::runtime_error("expected HOST:PORT");
    std::string host = listen.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    const auto port = static_cast<unsigned short>(std::stoi(listen.substr(colon + 1)));
    const ip::tcp::endpoint ep(ip::make_address(host), port);
    acceptor_.open(ep.protocol());
    acceptor_.set_option(boost::asio::socket_base::reuse_address(true));
    acceptor_.bind(ep);
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
    thread_ = std::thread([this] { serve(); });
  }
  ~MetricsHttpServer() {
    stopping_ = true;
    boost::system::error_code ignored;
    acceptor_.cancel(ignored);
    acceptor_.close(ignored);
    // A blocking accept() is not woken by close() on every platform: connect once to wake it.
    try {
      boost::asio::io_context io;
      boost::asio::ip::tcp::socket s(io);
      s.connect(endpoint_for_wakeup(), ignored);
    } catch (const std::exception&) {
    }
    if (thread_.joinable()) thread_.join();
  }
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;
  int port() const { return port_; }

 private:
  boost::asio::ip::tcp::endpoint endpoint_for_wakeup() const {
    return {boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port_)};
  }

  void serve() {
    namespace http = boost::beast::http;
    while (!stopping_) {
      boost::asio::ip::tcp::socket socket(io_);
      boost::system::error_code ec;
      acceptor_.accept(socket, ec);
      if (ec || stopping_) {
        if (stopping_ || ec == boost::asio::error::operation_aborted || ec == boost::asio::error::bad_descriptor) return;
        continue;
      }
      try {
        boost::beast::flat_buffer buffer;
        for (;;) {  // keep-alive: answer requests until the client closes
          http::request<http::string_body> req;
          http::read(socket, buffer, req);
          http::response<http::string_body> res;
          res.version(req.version());
          res.keep_alive(req.keep_alive());
          if (req.method() == http::verb::get && req.target() == "/metrics") {
            res.result(http::status::ok);
            res.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
            res.body() = prometheus::TextSerializer().Serialize(registry_->Collect());
          } else {
            res.result(http::status::not_found);
            res.set(http::field::content_type, "text/plain");
            res.body() = "only GET /metrics is served here\n";
          }
          res.prepare_payload();
          http::write(socket, res);
          if (!res.keep_alive()) break;
        }
      } catch (const std::exception&) {
        // The scraper went away or sent garbage: drop the connection.
      }
      socket.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
    }
  }

  std::shared_ptr<prometheus::Registry> registry_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  int port_ = 0;
};

}  // namespace

struct WorkerMetrics::Impl {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  std::unique_ptr<MetricsHttpServer> server;
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
  Gauge* gpu_allocated = nullptr;
  Gauge* gpu_peak = nullptr;

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
  impl->labels = {{"job", l.job},   {"run", l.run},     {"role", l.role},        {"rank", l.rank},
                  {"node", l.node}, {"model", l.model}, {"paradigm", l.paradigm}};
  const auto& L = impl->labels;
  auto& r = *impl;
  r.add(prometheus::BuildGauge(), "trainbench_info", "Versions of this worker (value 1).")
      .Add({{"version", build.version},
            {"libtorch_version", build.libtorch_version},
            {"backend", build.backend},
            {"device", build.device},
            {"job", l.job},
            {"run", l.run},
            {"rank", l.rank}})
      .Set(1);
  r.step_seconds = &r.add(prometheus::BuildHistogram(), "trainbench_step_duration_seconds",
                          "Wall time of one measured training step, device synchronized.")
                        .Add(L, step_buckets());
  r.communication_seconds =
      &r.add(prometheus::BuildHistogram(), "trainbench_communication_duration_seconds",
             "Time a measured step waited for gradient communication after its backward pass.")
           .Add(L, step_buckets());
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
  r.last = sample_process();
  try {
    impl->server = std::make_unique<MetricsHttpServer>(listen, impl->registry);
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot serve metrics on " + listen + ": " + e.what());
  }
  return std::unique_ptr<WorkerMetrics>(new WorkerMetrics(std::move(impl)));
}

WorkerMetrics::WorkerMetrics(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
WorkerMetrics::~WorkerMetrics() = default;

int WorkerMetrics::port() const { return impl_->server->port(); }

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
  r.communication_seconds_total->Increment(communication_seconds);
  r.compute_seconds_total->Increment(step_seconds > communication_seconds ? step_seconds - communication_seconds : 0.0);
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

}  // namespace trainbench::worker
