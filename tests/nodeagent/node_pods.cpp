#include "node_pods.hpp"

#include <signal.h>

#include <cstdio>
#include <thread>

#include "kube/errors.hpp"
#include "runtime/simulated_run.hpp"
#include "service_account_token.hpp"

namespace nodeagent {

using json = nlohmann::json;
using noderuntime::RunPtr;

namespace {

std::string str(const json& o, const std::string& path) {
  const json* v = noderuntime::json_path(o, path);
  return v && v->is_string() ? v->get<std::string>() : "";
}

bool is_deleting(const json& pod) {
  const json* v = noderuntime::json_path(pod, "metadata.deletionTimestamp");
  return v && !v->is_null();
}

}  // namespace

NodePods::NodePods(std::shared_ptr<const kube::Client> client, NodePodsConfig config, ApiView& view,
                   EventRecorder& events)
    : client_(std::move(client)),
      config_(std::move(config)),
      view_(view),
      events_(events),
      writer_(client_, [this](const std::string& ns, const std::string& name) { return cached(ns, name); }),
      registry_(config_.ip_prefix),
      runner_(*this, config_.runner) {}

NodePods::~NodePods() {
  if (pods_) pods_->stop();
  writer_.stop();
}

void NodePods::start() {
  writer_.start();
  kube::ReflectorOptions options;
  options.field_selector = "spec.nodeName=" + config_.node;
  kube::ReflectorHandlers h;
  h.on_add = [this](const json& pod) { handle(pod); };
  h.on_update = [this](const json&, const json& pod) { handle(pod); };
  h.on_delete = [this](const json& pod) { removed(pod); };
  h.on_error = [](const std::string& message) {
    std::fprintf(stderr, "trainbench-nodeagent: pods: %s\n", message.c_str());
  };
  pods_ = std::make_unique<kube::Reflector>(client_, kube::resources::pods(), "", options, h);
  pods_->start();
}

std::optional<json> NodePods::cached(const std::string& ns, const std::string& name) const {
  return pods_ ? pods_->cache()->get(ns, name) : std::nullopt;
}

RunPtr NodePods::find(const std::string& ns, const std::string& name) const { return registry_.find(ns, name); }

void NodePods::handle(const json& pod) {
  if (lost_ || stopping_) return;
  const std::string uid = str(pod, "metadata.uid");
  const std::string ns = str(pod, "metadata.namespace"), name = str(pod, "metadata.name");
  const std::string phase = str(pod, "status.phase");
  const bool terminal = phase == "Succeeded" || phase == "Failed";
  RunPtr run = registry_.find(uid);
  if (!run) {
    if (is_deleting(pod)) {
      finish_deletion(ns, name, uid);  // nothing of it runs here
    } else if (!terminal) {
      start_run(pod);
    }
    return;
  }
  if (is_deleting(pod) && run->fake) {
    if (noderuntime::stop_simulated(*run, SIGTERM)) {  // once: its last status, then the deletion
      runner_.publish(run);
      finish_deletion(ns, name, uid);
    }
  } else if (is_deleting(pod)) {
    const double grace = static_cast<double>(pod["metadata"].value("deletionGracePeriodSeconds", 0LL));
    if (runner_.delete_requested(run, grace)) finish_deletion(ns, name, uid);
  }
}

void NodePods::removed(const json& pod) {
  if (lost_) return;
  RunPtr run = registry_.find(str(pod, "metadata.uid"));
  if (run && !registry_.pod_removed(run)) runner_.request_stop(run, 1, "");
}

void NodePods::start_run(const json& pod) {
  RunPtr run = noderuntime::make_pod_run(pod, config_.pods_dir, registry_.allocate_ip(), config_.node_ip);
  run->runtime = "nodeagent";
  if (config_.simulated) {  // no thread: Running at once
    noderuntime::start_simulated(*run);
    registry_.add(run);
    runner_.publish(run);
    return;
  }
  registry_.add(run);
  {
    std::lock_guard<std::mutex> lock(threads_mu_);
    ++live_threads_;
  }
  std::thread([this, run] {
    pod_main(run);
    std::lock_guard<std::mutex> lock(threads_mu_);
    --live_threads_;
    threads_cv_.notify_all();
  }).detach();
}

void NodePods::pod_main(const RunPtr& run) {
  runner_.run(run);
  const auto ending = registry_.run_ended(run);
  if (ending.delete_pod && !lost_ && !stopping_) finish_deletion(run->ns, run->name, run->uid);
}

void NodePods::finish_deletion(const std::string& ns, const std::string& name, const std::string& uid) {
  writer_.finish(ns, name, uid);  // after its last status; retried until the API server answers
}

json NodePods::current_pod(const noderuntime::PodRun& run) {
  std::optional<json> pod = cached(run.ns, run.name);
  if (!pod || str(*pod, "metadata.uid") != run.uid) return nullptr;
  // The addresses are the node's to give (the downward API reads them before the status that
  // carries them has come back through the watch), as a kubelet's own status cache has them.
  json& st = (*pod)["status"];
  if (!st.is_object()) st = json::object();
  st["podIP"] = run.ip;
  st["podIPs"] = json::array({{{"ip", run.ip}}});
  st["hostIP"] = run.host_ip;
  st["hostIPs"] = json::array({{{"ip", run.host_ip}}});
  return *pod;
}

void NodePods::publish(const noderuntime::PodRun& run, const noderuntime::PodStatusReport& status) {
  if (!lost_) writer_.update(run.ns, run.name, run.uid, status);
}

void NodePods::event(const noderuntime::PodRun&, const json& pod, const std::string& type, const std::string& reason,
                     const std::string& message) {
  if (!lost_) events_.record(pod, type, reason, message);
}

std::optional<std::string> NodePods::service_account_token(const noderuntime::PodRun&, const json& pod) {
  return request_service_account_token(*client_, pod);
}

void NodePods::lose() {
  lost_ = true;
  writer_.silence();
  for (const auto& run : registry_.all()) noderuntime::freeze_containers(*run);
}

bool NodePods::shutdown(std::chrono::milliseconds wait) {
  stopping_ = true;
  if (pods_) pods_->stop();
  noderuntime::PodRunner::kill_all(registry_.all(), wait);
  std::unique_lock<std::mutex> lock(threads_mu_);
  const bool ended = threads_cv_.wait_for(lock, wait, [&] { return live_threads_ == 0; });
  lock.unlock();
  writer_.stop();
  return ended;
}

}  // namespace nodeagent
