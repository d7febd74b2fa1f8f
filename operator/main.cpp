// trainbench-operator: runs BenchmarkJobs on a Kubernetes cluster (docs/operator.md).
//
//   trainbench-operator [--kubeconfig PATH] [--context NAME] [--namespace NS]
//                       [--leader-elect=true|false] [--lease-namespace NS] [--lease-name NAME]
//                       [--workers N] [--qps Q] [--burst B]
//
// Without --kubeconfig: $KUBECONFIG, else the in-cluster service account, else ~/.kube/config.
// SIGTERM / SIGINT: stop taking work, finish the reconciles in flight, release the lease, exit 0.
#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/version.hpp"
#include "operator/controller/controller.hpp"
#include "operator/controller/leader_election.hpp"
#include "operator/kube/config.hpp"
#include "operator/kube/errors.hpp"

namespace {

std::atomic<bool> g_stop{false};

void on_signal(int) { g_stop = true; }

struct Flags {
  std::string kubeconfig, context, watch_namespace, lease_namespace, lease_name = "trainbench-operator";
  bool leader_elect = true;
  int workers = 2;
  double qps = 50;
  int burst = 200;
};

[[noreturn]] void usage_error(const std::string& message) {
  std::cerr << "trainbench-operator: " << message << "\n(see --help)\n";
  std::exit(2);
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
    if (a == "--help" || a == "-h") {
      std::cout << "usage: trainbench-operator [--kubeconfig PATH] [--context NAME] [--namespace NS]\n"
                   "       [--leader-elect=true|false] [--lease-namespace NS] [--lease-name NAME]\n"
                   "       [--workers N] [--qps Q] [--burst B]\n";
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
    } else if (a == "--workers") {
      f.workers = static_cast<int>(number(next()));
    } else if (a == "--qps") {
      f.qps = number(next());
    } else if (a == "--burst") {
      f.burst = static_cast<int>(number(next()));
    } else {
      usage_error("unknown argument \"" + args[i] + "\"");
    }
  }
  return f;
}

std::string identity() {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  std::random_device rd;
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, "%08x", rd());
  return std::string(host) + "_" + suffix;
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
    trainbench::kube::ClientConfig config = flags.kubeconfig.empty()
                                                ? trainbench::kube::load_default_config(flags.context)
                                                : trainbench::kube::load_kubeconfig(flags.kubeconfig, flags.context);
    config.qps = flags.qps;
    config.burst = flags.burst;
    const std::string lease_ns = !flags.lease_namespace.empty() ? flags.lease_namespace
                                 : !config.default_namespace.empty() ? config.default_namespace
                                                                : "default";
    auto client = std::make_shared<const trainbench::kube::Client>(config);
    std::cerr << "trainbench-operator " << trainbench::kVersion << ": API server " << config.server << ", watching "
              << (flags.watch_namespace.empty() ? "all namespaces" : "namespace " + flags.watch_namespace) << "\n";

    std::unique_ptr<trainbench::op::LeaderElector> elector;
    if (flags.leader_elect) {
      trainbench::op::LeaderElectionConfig le;
      le.lease_namespace = lease_ns;
      le.lease_name = flags.lease_name;
      le.identity = identity();
      elector = std::make_unique<trainbench::op::LeaderElector>(client, le);
      std::cerr << "trainbench-operator: waiting for the lease " << lease_ns << "/" << flags.lease_name << " as "
                << le.identity << "\n";
      if (!elector->acquire(g_stop)) return 0;
      std::cerr << "trainbench-operator: leading\n";
      elector->keep_renewing([] {
        std::cerr << "trainbench-operator: lost the lease; stopping\n";
        g_stop = true;
      });
    }
    trainbench::op::ControllerOptions co;
    co.watch_namespace = flags.watch_namespace;
    co.workers = flags.workers;
    {
      trainbench::op::Controller controller(client, co);
      controller.run(g_stop);
    }
    if (elector) elector->release();
    std::cerr << "trainbench-operator: stopped\n";
    return 0;
  } catch (const trainbench::kube::ConfigError& e) {
    std::cerr << "trainbench-operator: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "trainbench-operator: " << e.what() << "\n";
    return 1;
  }
}
