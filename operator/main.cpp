// trainbench-operator: runs BenchmarkJobs on a Kubernetes cluster (docs/operator.md).
//
//   trainbench-operator [--kubeconfig PATH] [--context NAME] [--namespace NS]
//                       [--leader-elect=true|false] [--lease-namespace NS] [--lease-name NAME]
//                       [--leader-elect-lease-duration S] [--leader-elect-renew-deadline S]
//                       [--leader-elect-retry-period S] [--node-lost-after S]
//                       [--workers N] [--qps Q] [--burst B] [--progress-interval S]
//                       [--metrics-bind-address HOST:PORT|0] [--health-probe-bind-address HOST:PORT|0]
//                       [--kueue] [--pod-create-parallelism N]
//
// --kueue: jobs labelled kueue.x-k8s.io/queue-name wait for Kueue's admission, through a Workload
// each (operator/controller/kueue_workload.hpp; Kueue's CRDs must be installed).
//
// GET /metrics on the metrics address (default :8080), GET /healthz and /readyz on the probe
// address (default :8081); "0" turns either off. Each chosen address is logged (port 0 picks one).
//
// Without --kubeconfig: $KUBECONFIG, else the in-cluster service account, else ~/.kube/config.
// SIGTERM / SIGINT: stop taking work, finish the reconciles in flight, release the lease, exit 0.
#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/spec/image_reference.hpp"
#include "core/util/version.hpp"
#include "operator/controller/controller.hpp"
#include "operator/controller/leader_election.hpp"
#include "kube/config.hpp"
#include "kube/errors.hpp"
#include "operator/metrics/operator_metrics.hpp"
#include "telemetry/http_endpoint.hpp"
#include "telemetry/prometheus_handler.hpp"

namespace {

namespace tel = trainbench::telemetry;

std::atomic<bool> g_stop{false};

/// What /readyz answers: ready while waiting for the lease (a standby replica is healthy) and,
/// once leading, when every informer cache has synced.
enum class Readiness { kStarting, kStandby, kSyncing, kReady };
std::atomic<Readiness> g_readiness{Readiness::kStarting};

void on_signal(int) { g_stop = true; }

struct Flags {
  std::string kubeconfig, context, watch_namespace, lease_namespace, lease_name = "trainbench-operator";
  bool leader_elect = true;
  int lease_duration_s = 15, renew_deadline_s = 10, retry_period_s = 2;
  int node_lost_after_s = 60;
  int progress_interval_s = 10;  ///< status.progressDetail at most this often per job; 0: off
  bool kueue = false;            ///< --kueue: queue labelled jobs through Kueue Workloads
  int pod_create_parallelism = 32;  ///< pod creates in flight at once (slow-start batches)
  int workers = 2;
  double qps = 50;
  int burst = 200;
  std::string metrics_address = ":8080", health_address = ":8081";
  double api_timeout_s = 30;  ///< per API request (not watches), as kubectl's --request-timeout
  trainbench::op::WorkerImages worker_images;  ///< --worker-image, --worker-cuda-image
};

[[noreturn]] void usage_error(const std::string& message) {
  std::cerr << "trainbench-operator: " << message << "\n(see --help)\n";
  std::exit(2);
}

/// A duration flag's value: whole seconds in [0, 86400], with or without Go's "s" suffix.
int whole_seconds(const std::string& flag, std::string v) {
  if (!v.empty() && v.back() == 's') v.pop_back();
  std::size_t used = 0;
  int n = -1;
  try {
    n = std::stoi(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (v.empty() || used != v.size() || n < 0 || n > 86400) {
    usage_error(flag + " must be whole seconds in [0, 86400], got \"" + v + "\"");
  }
  return n;
}

void print_usage() {
  std::cout << "usage: trainbench-operator [--kubeconfig PATH] [--context NAME] [--namespace NS]\n"
               "       [--leader-elect=true|false] [--lease-namespace NS] [--lease-name NAME]\n"
               "       [--leader-elect-lease-duration S] [--leader-elect-renew-deadline S]\n"
               "       [--leader-elect-retry-period S] [--node-lost-after S (0: off)]\n"
               "       [--workers N] [--qps Q] [--burst B] [--progress-interval S (0: off)]\n"
               "       [--metrics-bind-address HOST:PORT|0] [--health-probe-bind-address HOST:PORT|0]\n"
               "       [--kube-api-timeout SECONDS (per API request, default 30)] [--kueue]\n"
               "       [--pod-create-parallelism N (pod creates in flight at once, default 32)]\n"
               "       [--worker-image IMAGE (default " +
                   trainbench::PodTemplate::default_worker_image(trainbench::Device::kCpu) +
                   ")] [--worker-cuda-image IMAGE (default " +
                   trainbench::PodTemplate::default_worker_image(trainbench::Device::kCuda) +
                   ")]\n"
               "       (the image of a job's pods, by spec.device, when its spec.template.image is unset)\n";
}

/// --worker-image / --worker-cuda-image: an image reference, checked as spec.template.image is.
std::string image_flag(const std::string& flag, const std::string& value) {
  if (value.empty() || value.size() > static_cast<std::size_t>(trainbench::kMaxImageLength))
    usage_error(flag + " must be an image reference of 1 to " + std::to_string(trainbench::kMaxImageLength) + " characters");
  if (const std::string message = trainbench::image_reference_message(value); !message.empty())
    usage_error(flag + " " + message);
  return value;
}

Flags parse(int argc, char** argv) {
  Flags f;
  std::vector<std::string> args(argv + 1, argv + argc);
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i], value;
    const auto eq = a.find('=');
    const bool has_inline = eq != std::string::npos;
    if (has_inline) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
    }
    auto next = [&]() -> std::string {
      if (has_inline) return value;
      if (i + 1 >= args.size()) usage_error(a + " needs a value");
      return args[++i];
    };
    auto number = [&](const std::string& v) {
      try {
        return std::stod(v);
      } catch (const std::exception&) {
        usage_error(a + " must be a number, got \"" + v + "\"");
      }
    };
    auto seconds = [&](const std::string& v) { return whole_seconds(a, v); };
    if (a == "--help" || a == "-h") {
      print_usage();
      std::exit(0);
    } else if (a == "--kubeconfig") {
      f.kubeconfig = next();
    } else if (a == "--context") {
      f.context = next();
    } else if (a == "--namespace") {
      f.watch_namespace = next();
    } else if (a == "--lease-namespace") {
      f.lease_namespace = next();
    } else if (a == "--lease-name") {
      f.lease_name = next();
    } else if (a == "--leader-elect") {
      const std::string v = has_inline ? value : "true";
      if (v != "true" && v != "false") usage_error("--leader-elect must be true or false");
      f.leader_elect = v == "true";
    } else if (a == "--leader-elect-lease-duration") {
      f.lease_duration_s = seconds(next());
    } else if (a == "--leader-elect-renew-deadline") {
      f.renew_deadline_s = seconds(next());
    } else if (a == "--leader-elect-retry-period") {
      f.retry_period_s = seconds(next());
    } else if (a == "--node-lost-after") {
      f.node_lost_after_s = seconds(next());
    } else if (a == "--progress-interval") {
      f.progress_interval_s = seconds(next());
    } else if (a == "--kueue") {
      f.kueue = true;
    } else if (a == "--pod-create-parallelism") {
      f.pod_create_parallelism = static_cast<int>(number(next()));
      if (f.pod_create_parallelism < 1 || f.pod_create_parallelism > 1000)
        usage_error("--pod-create-parallelism must be in [1, 1000]");
    } else if (a == "--worker-image" || a == "--worker-cuda-image") {
      (a == "--worker-image" ? f.worker_images.cpu : f.worker_images.cuda) = image_flag(a, next());
    } else if (a == "--workers") {
      f.workers = static_cast<int>(number(next()));
    } else if (a == "--qps") {
      f.qps = number(next());
    } else if (a == "--burst") {
      f.burst = static_cast<int>(number(next()));
    } else if (a == "--metrics-bind-address") {
      f.metrics_address = next();
    } else if (a == "--health-probe-bind-address") {
      f.health_address = next();
    } else if (a == "--kube-api-timeout") {
      f.api_timeout_s = number(next());
      if (!(f.api_timeout_s >= 0.1 && f.api_timeout_s <= 3600))
        usage_error("--kube-api-timeout must be in [0.1, 3600]");
    } else {
      usage_error("unknown argument \"" + args[i] + "\"");
    }
  }
  return f;
}

/// The API client's settings: the kubeconfig (or in-cluster config), rate limit and timeout.
trainbench::kube::ClientConfig client_config(const Flags& flags) {
  trainbench::kube::ClientConfig config = flags.kubeconfig.empty()
                                              ? trainbench::kube::load_default_config(flags.context)
                                              : trainbench::kube::load_kubeconfig(flags.kubeconfig, flags.context);
  config.qps = flags.qps;
  config.burst = flags.burst;
  config.timeout = std::chrono::milliseconds(static_cast<long long>(flags.api_timeout_s * 1000));
  return config;
}

std::string identity() {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  std::random_device rd;
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, "%08x", rd());
  return std::string(host) + "_" + suffix;
}

trainbench::op::LeaderElectionConfig election_config(const Flags& flags, const std::string& lease_ns) {
  trainbench::op::LeaderElectionConfig le;
  le.lease_namespace = lease_ns;
  le.lease_name = flags.lease_name;
  le.identity = identity();
  le.lease_duration = std::chrono::seconds(flags.lease_duration_s);
  le.renew_deadline = std::chrono::seconds(flags.renew_deadline_s);
  le.retry_period = std::chrono::seconds(flags.retry_period_s);
  return le;
}

/// GET /metrics on --metrics-bind-address; null when it is "0".
std::unique_ptr<tel::HttpEndpoint> serve_metrics(const Flags& flags,
                                                 const std::shared_ptr<trainbench::op::OperatorMetrics>& metrics) {
  if (flags.metrics_address == "0") return nullptr;
  auto endpoint = std::make_unique<tel::HttpEndpoint>(
      flags.metrics_address,
      std::map<std::string, tel::HttpHandler>{
          {"/metrics", tel::prometheus_handler(metrics->registry(), [metrics] { metrics->refresh(); })}});
  std::cerr << "trainbench-operator: serving metrics on "
            << flags.metrics_address.substr(0, flags.metrics_address.rfind(':')) << ":" << endpoint->port()
            << "/metrics\n";
  return endpoint;
}

/// What GET /readyz answers in each Readiness.
tel::HttpReply readiness_reply() {
  switch (g_readiness.load()) {
    case Readiness::kStandby:
      return tel::HttpReply{200, "text/plain; charset=utf-8", "ok (standby: waiting for the lease)\n"};
    case Readiness::kReady:
      return tel::HttpReply{200, "text/plain; charset=utf-8", "ok\n"};
    case Readiness::kSyncing:
      return tel::HttpReply{503, "text/plain; charset=utf-8", "informer caches not synced yet\n"};
    case Readiness::kStarting:
      break;
  }
  return tel::HttpReply{503, "text/plain; charset=utf-8", "starting\n"};
}

/// GET /healthz and /readyz on --health-probe-bind-address; null when it is "0".
std::unique_ptr<tel::HttpEndpoint> serve_probes(const Flags& flags) {
  if (flags.health_address == "0") return nullptr;
  auto ok = [] { return tel::HttpReply{200, "text/plain; charset=utf-8", "ok\n"}; };
  auto endpoint = std::make_unique<tel::HttpEndpoint>(
      flags.health_address, std::map<std::string, tel::HttpHandler>{{"/healthz", ok}, {"/readyz", readiness_reply}});
  std::cerr << "trainbench-operator: serving /healthz and /readyz on "
            << flags.health_address.substr(0, flags.health_address.rfind(':')) << ":" << endpoint->port() << "\n";
  return endpoint;
}

/// --lease-namespace, else the kubeconfig's (or service account's) namespace, else "default".
std::string lease_namespace(const Flags& flags, const trainbench::kube::ClientConfig& config) {
  if (!flags.lease_namespace.empty()) return flags.lease_namespace;
  return !config.default_namespace.empty() ? config.default_namespace : "default";
}

/// Waits for the lease, then renews it in the background; losing it stops the operator.
/// Null when stopped (SIGTERM, SIGINT) before the lease was acquired.
std::unique_ptr<trainbench::op::LeaderElector> lead(const Flags& flags,
                                                    std::shared_ptr<const trainbench::kube::Client> client,
                                                    const std::string& lease_ns,
                                                    std::shared_ptr<trainbench::op::OperatorMetrics> metrics) {
  const trainbench::op::LeaderElectionConfig le = election_config(flags, lease_ns);
  auto elector = std::make_unique<trainbench::op::LeaderElector>(std::move(client), le);
  std::cerr << "trainbench-operator: waiting for the lease " << lease_ns << "/" << flags.lease_name << " as "
            << le.identity << "\n";
  g_readiness = Readiness::kStandby;
  if (!elector->acquire(g_stop)) return nullptr;
  std::cerr << "trainbench-operator: leading\n";
  elector->keep_renewing([metrics = std::move(metrics)] {
    std::cerr << "trainbench-operator: lost the lease; stopping\n";
    metrics->set_leader(false);
    g_stop = true;
  });
  return elector;
}

/// Runs the controller until g_stop; /readyz turns ready once its informers have synced.
void run_controller(const Flags& flags, std::shared_ptr<const trainbench::kube::Client> client,
                    const std::shared_ptr<trainbench::op::OperatorMetrics>& metrics) {
  trainbench::op::ControllerOptions co;
  co.watch_namespace = flags.watch_namespace;
  co.workers = flags.workers;
  co.node_lost_after = std::chrono::seconds(flags.node_lost_after_s);
  co.progress_interval = std::chrono::seconds(flags.progress_interval_s);
  co.kueue = flags.kueue;
  co.pod_create_parallelism = flags.pod_create_parallelism;
  co.worker_images = flags.worker_images;
  co.metrics = metrics;
  trainbench::op::Controller controller(std::move(client), co);
  metrics->set_snapshot_source([&controller] {
    const auto snap = controller.snapshot();
    if (snap.synced) g_readiness = Readiness::kReady;
    return snap;
  });
  std::thread readiness([&] {  // /readyz turns ready without waiting for a scrape
    while (!g_stop && !controller.snapshot().synced) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!g_stop) g_readiness = Readiness::kReady;
  });
  controller.run(g_stop);
  readiness.join();
  metrics->set_snapshot_source({});
}

/// Everything after the flags: the API client, the endpoints, the lease, the controller.
int run(const Flags& flags) {
  trainbench::kube::ClientConfig config = client_config(flags);
  auto metrics = std::make_shared<trainbench::op::OperatorMetrics>(trainbench::kVersion);
  config.observe = metrics->request_observer();
  const auto metrics_endpoint = serve_metrics(flags, metrics);
  const auto health_endpoint = serve_probes(flags);
  const std::string lease_ns = lease_namespace(flags, config);
  auto client = std::make_shared<const trainbench::kube::Client>(config);
  std::cerr << "trainbench-operator " << trainbench::kVersion << ": API server " << config.server << ", watching "
            << (flags.watch_namespace.empty() ? "all namespaces" : "namespace " + flags.watch_namespace) << "\n";
  std::unique_ptr<trainbench::op::LeaderElector> elector;
  if (flags.leader_elect) {
    elector = lead(flags, client, lease_ns, metrics);
    if (!elector) return 0;  // stopped while waiting for the lease
  }
  metrics->set_leader(true);
  g_readiness = Readiness::kSyncing;
  run_controller(flags, client, metrics);
  if (elector) elector->release();
  std::cerr << "trainbench-operator: stopped\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Dozens of mostly idle threads (informers, cpprestsdk's pool): glibc would give many of them
  // an arena of their own, each holding on to freed memory. Two arenas keep the footprint flat
  // (measured in docs/performance.md); MALLOC_ARENA_MAX in the environment still wins.
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr) mallopt(M_ARENA_MAX, 2);
  const Flags flags = parse(argc, argv);
  std::signal(SIGTERM, on_signal);
  std::signal(SIGINT, on_signal);
  std::signal(SIGPIPE, SIG_IGN);  // a peer closing a connection is an error return, not a death
  try {
    return run(flags);
  } catch (const trainbench::kube::ConfigError& e) {
    std::cerr << "trainbench-operator: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "trainbench-operator: " << e.what() << "\n";
    return 1;
  }
}
