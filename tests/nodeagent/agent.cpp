#include "agent.hpp"

#include <cstdio>
#include <filesystem>

#include "credentials.hpp"

namespace nodeagent {

namespace fs = std::filesystem;

namespace {

/// The pod network shim: --podnet-lib, else next to this binary, else where it is built.
std::string podnet_library(const Options& o) {
  if (o.podnet_library) return *o.podnet_library;
  std::error_code ec;
  const auto shim = fs::read_symlink("/proc/self/exe", ec).parent_path() / "libnodeagent_podnet.so";
  if (!ec && fs::exists(shim, ec)) return shim.string();
  return fs::exists(NODEAGENT_PODNET_LIB, ec) ? NODEAGENT_PODNET_LIB : "";
}

}  // namespace

Agent::Agent(Options options)
    : opts_(std::move(options)),
      block_(noderuntime::NetBlock::claim(opts_.net_block)),
      node_ip_(noderuntime::node_ip_in_block(block_.prefix(), 0)),
      client_(std::make_shared<const kube::Client>(node_client_config(opts_))) {
  if (opts_.images) images_ = std::make_unique<noderuntime::ImageRuntime>(*opts_.images);
}

Agent::~Agent() { shutdown(); }

noderuntime::RunnerOptions Agent::runner_options() const {
  noderuntime::RunnerOptions r;
  r.max_grace_s = opts_.max_grace_s;
  r.dns_wait_s = opts_.dns_wait_s;
  r.podnet_library = podnet_library(opts_);
  r.images = images_.get();
  r.keep_previous_log = true;
  return r;
}

NodeFacts Agent::node_facts() const {
  NodeFacts f;
  f.name = opts_.node;
  f.labels = opts_.labels;
  f.taints = opts_.taints;
  f.ip = node_ip_;
  f.port = opts_.port;
  f.cpus = opts_.cpus > 0 ? opts_.cpus : machine_cpus();
  f.memory = opts_.memory > 0 ? opts_.memory : machine_memory();
  f.max_pods = opts_.max_pods;
  f.gpus = opts_.gpus;
  f.runtime = opts_.pods == PodMode::kSimulated ? "simulated" : images_ ? "buildah" : "process";
  return f;
}

void Agent::start() {
  const std::string pki = write_serving_cert(opts_, node_ip_);
  if (images_) images_->check();
  const NodeFacts facts = node_facts();
  const nlohmann::json node = register_node(*client_, facts);
  const std::string uid = node.value("metadata", nlohmann::json::object()).value("uid", "");
  // Simulated pods run nothing, so nothing resolves service names: no cluster-wide watches.
  const auto dns = opts_.pods == PodMode::kSimulated ? std::nullopt : cluster_dns_config(opts_);
  view_ = std::make_unique<ApiView>(client_, dns ? std::make_shared<const kube::Client>(*dns) : nullptr,
                                    opts_.pod_api_server);
  view_->start();
  events_ = std::make_unique<EventRecorder>(client_, opts_.node);
  events_->start();
  pods_ = std::make_unique<NodePods>(client_, NodePodsConfig{opts_.node, node_ip_, opts_.dir + "/pods", block_.prefix(),
                                                             runner_options(), opts_.pods == PodMode::kSimulated},
                                     *view_, *events_);
  pods_->start();
  logs_ = std::make_unique<LogServer>(
      client_, *pods_,
      LogServerConfig{opts_.node, node_ip_, opts_.port, pki + "/kubelet.crt", pki + "/kubelet.key", opts_.ca_cert});
  logs_->start();
  heartbeat_ = std::make_unique<Heartbeat>(client_, facts, uid, opts_.lease_interval_s, opts_.status_interval_s);
  heartbeat_->start();
  std::printf("nodeagent ready %s %s:%d\n", opts_.node.c_str(), node_ip_.c_str(), opts_.port);
  std::fflush(stdout);
}

void Agent::lose() {
  if (lost_) return;
  lost_ = true;
  if (heartbeat_) heartbeat_->stop();
  if (events_) events_->silence();
  if (pods_) pods_->lose();
  if (logs_) logs_->stop();
  std::fprintf(stderr, "trainbench-nodeagent: node %s lost: no heartbeats, statuses or answers; pods frozen\n",
               opts_.node.c_str());
}

bool Agent::shutdown() {
  if (heartbeat_) heartbeat_->stop();
  if (logs_) logs_->stop();
  const bool ended = pods_ ? pods_->shutdown(std::chrono::seconds(5)) : true;
  if (events_) events_->stop();
  if (view_) view_->stop();
  if (images_) images_->close();
  return ended;
}

}  // namespace nodeagent
