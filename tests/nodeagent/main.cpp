// trainbench-nodeagent: a node agent that is a client of the real API server (README.md).
//
//   trainbench-nodeagent --kubeconfig NODE_KUBECONFIG --node NAME --dir DIR --ca-cert CA --ca-key KEY
//                        [--label K=V]... [--gpus N] [--images buildah] ...
//
// Prints `nodeagent ready NAME IP:PORT` once the node is registered and its pods are watched.
// SIGUSR1: the node is lost (no heartbeats, statuses or answers; pods frozen). SIGTERM/SIGINT:
// its pods' processes are killed and it exits 0, leaving no process and no mount.

#include <signal.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>

#include "agent.hpp"
#include "options.hpp"

int main(int argc, char** argv) {
  nodeagent::Options options = nodeagent::parse_options(argc, argv);
  std::signal(SIGPIPE, SIG_IGN);
  // SIGTERM, SIGINT and SIGUSR1 are taken by sigwait below; every thread inherits the mask, and
  // the pods' processes start with a clean one (runtime/process.hpp).
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGTERM, SIGINT, SIGUSR1}) sigaddset(&signals, s);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::unique_ptr<nodeagent::Agent> agent;
  try {
    agent = std::make_unique<nodeagent::Agent>(std::move(options));
    agent->start();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trainbench-nodeagent: cannot start: %s\n", e.what());
    if (agent) agent->shutdown();
    return 1;
  }
  for (;;) {
    int sig = 0;
    if (sigwait(&signals, &sig) != 0) continue;
    if (sig == SIGUSR1) {
      agent->lose();
      continue;
    }
    const bool ended = agent->shutdown();
    if (!ended) std::fprintf(stderr, "trainbench-nodeagent: some pods' threads had not ended; exiting anyway\n");
    std::fflush(stderr);
    std::_Exit(0);  // a pod thread still waiting (e.g. on buildah) must not run into destroyed objects
  }
}
