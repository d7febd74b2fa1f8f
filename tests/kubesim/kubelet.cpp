#include "kubelet.hpp"

#include <cctype>

#include <signal.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <set>
#include <thread>

#include "node_lifecycle.hpp"
#include "runtime/image_runtime.hpp"
#include "runtime/netblock.hpp"
#include "runtime/pod_registry.hpp"
#include "runtime/pod_runner.hpp"
#include "selectors.hpp"
#include "store_view.hpp"

namespace kubesim {

using noderuntime::ContainerRun;
using noderuntime::PodRun;
using noderuntime::RunPtr;

namespace {

std::string str(const json& o, const std::string& path) {
  const json* v = json_path(o, path);
  return v && v->is_string() ? v->get<std::string>() : "";
}

bool is_deleting(const json& pod) {
  const json* v = json_path(pod, "metadata.deletionTimestamp");
  return v && !v->is_null();
}

bool tolerates(const json& tolerations, const json& taint) {
  if (!tolerations.is_array()) return false;
  for (const auto& t : tolerations) {
    std::string eff = t.value("effect", "");
    if (!eff.empty() && eff != taint.value("effect", "")) continue;
    std::string key = t.value("key", "");
    std::string op = t.value("operator", "Equal");
    if (key.empty() && op == "Exists") return true;
    if (key != taint.value("key", "")) continue;
    if (op == "Exists" || t.value("value", "") == taint.value("value", "")) return true;
  }
  return false;
}

bool node_fits(const json& pod, const json& node) {
  const json labels = node["metadata"].value("labels", json::object());
  const json spec = pod.value("spec", json::object());
  if (!LabelSelector::from_map(spec.value("nodeSelector", json::object())).matches(labels)) return false;
  const json* terms = json_path(spec, "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms");
  if (terms && terms->is_array() && !terms->empty()) {
    bool any = false;
    for (const auto& term : *terms) {
      json sel = {{"matchExpressions", term.value("matchExpressions", json::array())}};
      any = any || LabelSelector::from_object(sel).matches(labels);
    }
    if (!any) return false;
  }
  if (node.value("spec", json::object()).value("unschedulable", false)) return false;
  for (const auto& taint : node.value("spec", json::object()).value("taints", json::array())) {
    std::string eff = taint.value("effect", "");
    if ((eff == "NoSchedule" || eff == "NoExecute") && !tolerates(spec.value("tolerations", json::array()), taint)) {
      return false;
    }
  }
  return true;
}

}  // namespace

struct Kubelet::Impl : noderuntime::PodHost {
  Api& api;
  const TokenAuthority& tokens;
  KubeletOptions opts;
  std::mutex mu;
  unsigned rr = 0;
  std::set<std::string> unschedulable_reported;
  std::thread controller;
  std::atomic<bool> stopping{false};
  std::shared_ptr<Watcher> watcher;
  NodeLifecycle lifecycle;
  std::unique_ptr<noderuntime::ImageRuntime> images;  ///< image mode (--images buildah), else null
  StoreView view;
  noderuntime::PodRegistry registry;
  noderuntime::PodRunner runner;

  Impl(Api& a, const TokenAuthority& t, KubeletOptions o)
      : api(a),
        tokens(t),
        opts(std::move(o)),
        lifecycle(a, opts.node_grace_s),
        images(opts.images ? std::make_unique<noderuntime::ImageRuntime>(*opts.images) : nullptr),
        view(a),
        registry(opts.ip_prefix),
        runner(*this, runner_options()) {}

  noderuntime::RunnerOptions runner_options() const {
    noderuntime::RunnerOptions r;
    r.max_grace_s = opts.max_grace_s;
    r.dns_wait_s = opts.dns_wait_s;
    r.podnet_library = opts.podnet_library;
    r.images = images.get();
    r.passthrough_env = opts.passthrough_env;
    return r;
  }

  // ---------- PodHost ----------

  noderuntime::ClusterView& cluster() override { return view; }

  json current_pod(const PodRun& run) override {
    std::lock_guard<std::recursive_mutex> lock(api.store().mu());
    ObjPtr p = api.store().get("pods", run.ns, run.name);
    if (!p || str(*p, "metadata.uid") != run.uid) return nullptr;
    return *p;
  }

  /// Writes the run's state into the pod's status (if the pod is still the same object).
  void publish(const PodRun& run, const noderuntime::PodStatusReport& report) override {
    if (lifecycle.lost(run.node)) return;  // a lost node's kubelet reports nothing
    api.mutate("pods", run.ns, run.name, [&](json& pod) {
      if (str(pod, "metadata.uid") != run.uid) return false;
      return noderuntime::apply_pod_status(pod["status"], report);
    });
  }

  void event(const PodRun& run, const json& pod, const std::string& type, const std::string& reason,
             const std::string& message) override {
    api.record_event(Api::present(*api.types().by_key("pods"), pod), type, reason, message, "kubelet", run.node);
  }

  /// A pod-bound token of the pod's ServiceAccount, minted here (absent when it does not exist or
  /// automountServiceAccountToken is false).
  std::optional<std::string> service_account_token(const PodRun& run, const json& pod) override {
    std::string sa = pod["spec"].value("serviceAccountName", "default");
    json sa_obj;
    {
      std::lock_guard<std::recursive_mutex> lock(api.store().mu());
      ObjPtr p = api.store().get("serviceaccounts", run.ns, sa);
      if (!p) return std::nullopt;
      sa_obj = *p;
    }
    bool mount = sa_obj.value("automountServiceAccountToken", true);
    if (pod["spec"].contains("automountServiceAccountToken")) mount = pod["spec"]["automountServiceAccountToken"].get<bool>();
    if (!mount) return std::nullopt;
    return tokens
        .mint(run.ns, sa, str(sa_obj, "metadata.uid"), 3607, {TokenAuthority::issuer()}, "Pod", run.name, run.uid)
        .token;
  }

  // ---------- controller ----------

  void register_nodes() {
    int i = 0;
    for (const auto& n : opts.nodes) {
      json labels = {{"kubernetes.io/hostname", n.name}, {"kubernetes.io/os", "linux"}, {"kubernetes.io/arch", "amd64"}};
      for (const auto& kv : n.labels) labels[kv.first] = kv.second;
      std::string ip = noderuntime::node_ip_in_block(opts.ip_prefix, i++);
      api.ensure("nodes", "",
                 {{"apiVersion", "v1"},
                  {"kind", "Node"},
                  {"metadata", {{"name", n.name}, {"labels", labels}}},
                  {"spec", json::object()},
                  {"status", {{"addresses", json::array({{{"type", "InternalIP"}, {"address", ip}},
                                                         {{"type", "Hostname"}, {"address", n.name}}})}}}});
    }
  }

  void start() {
    if (images) images->check();
    register_nodes();
    lifecycle.start();
    std::vector<ObjPtr> existing;
    {
      std::lock_guard<std::recursive_mutex> lock(api.store().mu());
      watcher = api.store().watch_now("*", "");
      existing = api.store().list("pods", "");
    }
    controller = std::thread([this, existing] {
      for (const auto& p : existing) handle_pod(*p);
      while (!stopping) {
        WatchEvent ev;
        if (!watcher->next(ev, std::chrono::milliseconds(500))) continue;
        try {
          if (ev.ref.key == "pods") {
            if (ev.type == "DELETED") on_pod_deleted(*ev.object);
            else handle_pod(*ev.object);
          } else if (ev.ref.key == "nodes" && ev.type != "DELETED") {
            reschedule();
          }
        } catch (const std::exception& e) {
          std::fprintf(stderr, "kubesim kubelet: %s\n", e.what());
        }
      }
    });
  }

  void reschedule() {
    std::vector<ObjPtr> pods;
    {
      std::lock_guard<std::recursive_mutex> lock(api.store().mu());
      pods = api.store().list("pods", "");
    }
    for (const auto& p : pods) {
      if (str(*p, "spec.nodeName").empty()) handle_pod(*p);
    }
  }

  void finalize_delete(const std::string& ns, const std::string& name, const std::string& uid) {
    DeleteOptions o;
    o.grace = 0;
    o.precondition_uid = uid;
    api.delete_internal("pods", ns, name, o);
  }

  bool node_exists(const std::string& node) {
    std::lock_guard<std::recursive_mutex> lock(api.store().mu());
    return api.store().get("nodes", "", node) != nullptr;
  }

  void handle_pod(const json& pod) {
    if (opts.mode == KubeletMode::None || stopping) return;
    const std::string uid = str(pod, "metadata.uid");
    const std::string ns = str(pod, "metadata.namespace");
    const std::string name = str(pod, "metadata.name");
    const std::string node = str(pod, "spec.nodeName");
    const std::string phase = str(pod, "status.phase");
    const bool terminal = phase == "Succeeded" || phase == "Failed";
    if (node.empty()) {
      if (!is_deleting(pod) && !terminal) schedule(pod);
      return;
    }
    if (lifecycle.lost(node)) return;  // nobody starts, stops or confirms anything there
    RunPtr run = registry.find(uid);
    if (!run) {
      if (!node_exists(node)) return;  // no such node: nobody runs it
      if (is_deleting(pod)) {
        finalize_delete(ns, name, uid);
      } else if (!terminal) {
        start_run(pod);
      }
      return;
    }
    if (is_deleting(pod)) {
      const double grace = static_cast<double>(pod["metadata"].value("deletionGracePeriodSeconds", 0LL));
      if (runner.delete_requested(run, grace)) finalize_delete(ns, name, uid);
    }
  }

  void report_unschedulable(const json& pod, std::size_t node_count) {
    const std::string uid = str(pod, "metadata.uid");
    const std::string n = std::to_string(node_count);
    const std::string msg = "0/" + n + " nodes are available: " + n +
                            " node(s) didn't match Pod's node affinity/selector. preemption: 0/" + n +
                            " nodes are available: " + n + " Preemption is not helpful for scheduling.";
    api.mutate("pods", str(pod, "metadata.namespace"), str(pod, "metadata.name"), [&](json& p) {
      if (str(p, "metadata.uid") != uid) return false;
      noderuntime::set_condition(p["status"]["conditions"], "PodScheduled", "False", "Unschedulable", msg);
      return true;
    });
    bool first;
    {
      std::lock_guard<std::mutex> lock(mu);
      first = unschedulable_reported.insert(uid).second;
    }
    if (first) api.record_event(pod, "Warning", "FailedScheduling", msg, "default-scheduler");
  }

  void schedule(const json& pod) {
    std::vector<ObjPtr> nodes;
    {
      std::lock_guard<std::recursive_mutex> lock(api.store().mu());
      nodes = api.store().list("nodes", "");
    }
    std::vector<std::string> fits;
    for (const auto& n : nodes) {
      if (node_fits(pod, *n)) fits.push_back(str(*n, "metadata.name"));
    }
    if (fits.empty()) {
      report_unschedulable(pod, nodes.size());
      return;
    }
    const std::string uid = str(pod, "metadata.uid");
    const std::string ns = str(pod, "metadata.namespace"), name = str(pod, "metadata.name");
    std::string chosen;
    {
      std::lock_guard<std::mutex> lock(mu);
      chosen = fits[rr++ % fits.size()];
      unschedulable_reported.erase(uid);
    }
    auto bound = api.mutate("pods", ns, name, [&](json& p) {
      if (str(p, "metadata.uid") != uid || !str(p, "spec.nodeName").empty()) return false;
      p["spec"]["nodeName"] = chosen;
      noderuntime::set_condition(p["status"]["conditions"], "PodScheduled", "True");
      return true;
    });
    if (bound) {
      api.record_event(pod, "Normal", "Scheduled", "Successfully assigned " + ns + "/" + name + " to " + chosen,
                       "default-scheduler");
    }
  }

  std::string node_ip(const std::string& node) {
    std::lock_guard<std::recursive_mutex> lock(api.store().mu());
    ObjPtr n = api.store().get("nodes", "", node);
    if (n) {
      for (const auto& a : (*n).value("status", json::object()).value("addresses", json::array())) {
        if (a.value("type", "") == "InternalIP") return a.value("address", "127.0.0.1");
      }
    }
    return "127.0.0.1";
  }

  /// --kubelet fake: Running (ready) at once, nothing runs.
  void fake_run(const RunPtr& run) {
    run->fake = true;
    const std::string now = now_rfc3339();
    for (auto& c : run->containers) {
      c.running = !c.init;
      c.ready = !c.init;
      c.has_log = true;
      c.finished = c.init;
      c.state = c.init ? json{{"terminated", {{"exitCode", 0}, {"reason", "Completed"}, {"startedAt", now}, {"finishedAt", now}}}}
                       : json{{"running", {{"startedAt", now}}}};
    }
    run->initialized = true;
    runner.publish(run);
  }

  void start_run(const json& pod) {
    RunPtr run = noderuntime::make_pod_run(pod, opts.dir + "/pods", registry.allocate_ip(),
                                           node_ip(str(pod, "spec.nodeName")));
    registry.add(run);
    if (opts.mode == KubeletMode::Fake) {
      fake_run(run);
      return;
    }
    std::thread([this, run] { pod_main(run); }).detach();
  }

  void pod_main(const RunPtr& run) {
    runner.run(run);
    if (registry.run_ended(run).delete_pod) finalize_delete(run->ns, run->name, run->uid);
  }

  void on_pod_deleted(const json& pod) {
    RunPtr run = registry.find(str(pod, "metadata.uid"));
    if (run && !registry.pod_removed(run)) runner.request_stop(run, 1, "");
  }

  void stop() {
    if (stopping.exchange(true)) return;
    lifecycle.stop();
    if (watcher) watcher->close();
    if (controller.joinable()) controller.join();
    noderuntime::PodRunner::kill_all(registry.all(), std::chrono::seconds(3));
  }
};

Kubelet::Kubelet(Api& api, const TokenAuthority& tokens, KubeletOptions opts)
    : impl_(std::make_unique<Impl>(api, tokens, std::move(opts))) {}

Kubelet::~Kubelet() { stop(); }

void Kubelet::start() { impl_->start(); }

void Kubelet::stop() { impl_->stop(); }

void Kubelet::release_images() {
  if (impl_->images) impl_->images->close();
}

namespace {

/// Prometheus's label-name sanitizing (as its kubernetes_sd does for pod labels).
std::string sanitize_label_name(const std::string& in) {
  std::string out = in;
  for (auto& ch : out) {
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') ch = '_';
  }
  return out;
}

json target_group(const PodRun& run, const ContainerRun& c, const json& port) {
  const int number = port.value("containerPort", 0);
  json labels = {{"__meta_kubernetes_namespace", run.ns},
                 {"__meta_kubernetes_pod_name", run.name},
                 {"__meta_kubernetes_pod_uid", run.uid},
                 {"__meta_kubernetes_pod_ip", run.ip},
                 {"__meta_kubernetes_pod_node_name", run.node},
                 {"__meta_kubernetes_pod_phase", "Running"},
                 {"__meta_kubernetes_pod_container_name", c.name},
                 {"__meta_kubernetes_pod_container_init", "false"},
                 {"__meta_kubernetes_pod_container_port_name", port.value("name", "")},
                 {"__meta_kubernetes_pod_container_port_number", std::to_string(number)},
                 {"__meta_kubernetes_pod_container_port_protocol", port.value("protocol", "TCP")}};
  for (const auto& [k, v] : run.labels.items()) {
    if (!v.is_string()) continue;
    labels["__meta_kubernetes_pod_label_" + sanitize_label_name(k)] = v;
    labels["__meta_kubernetes_pod_labelpresent_" + sanitize_label_name(k)] = "true";
  }
  return {{"targets", json::array({run.ip + ":" + std::to_string(number)})}, {"labels", labels}};
}

}  // namespace

json Kubelet::scrape_targets() const {
  json groups = json::array();
  for (const auto& run : impl_->registry.all()) {
    std::lock_guard<std::mutex> lock(run->mu);
    for (const auto& c : run->containers) {
      if (c.init || !c.running) continue;
      for (const auto& port : c.spec.value("ports", json::array())) {
        if (port.value("containerPort", 0) > 0) groups.push_back(target_group(*run, c, port));
      }
    }
  }
  return groups;
}

int Kubelet::kill(const std::string& ns, const std::string& pod, const std::string& container, int signal) {
  RunPtr run = impl_->registry.find(ns, pod);
  if (!run) return -1;
  if (!run->fake) return noderuntime::signal_containers(*run, container, signal);
  int n = 0;
  const std::string now = now_rfc3339();
  {
    std::lock_guard<std::mutex> lock(run->mu);
    for (auto& c : run->containers) {
      if (c.init || c.finished || (!container.empty() && c.name != container)) continue;
      c.running = c.ready = false;
      c.finished = true;
      c.exit_code = 128 + signal;
      c.state = {{"terminated", {{"exitCode", 128 + signal}, {"reason", "Error"}, {"startedAt", now}, {"finishedAt", now}}}};
      ++n;
    }
  }
  impl_->runner.publish(run);
  return n;
}

bool Kubelet::lose_node(const std::string& node) {
  if (!impl_->lifecycle.lose(node)) return false;
  for (const auto& run : impl_->registry.all()) {
    if (run->node == node) noderuntime::signal_containers(*run, "", SIGSTOP);  // frozen: no progress, no answer
  }
  return true;
}

std::string Kubelet::log_path(const std::string& ns, const std::string& pod, const std::string& container) const {
  RunPtr run = impl_->registry.find(ns, pod);
  return run ? noderuntime::container_log_path(*run, container) : "";
}

bool Kubelet::container_finished(const std::string& ns, const std::string& pod, const std::string& container) const {
  RunPtr run = impl_->registry.find(ns, pod);
  return run ? noderuntime::container_finished(*run, container) : true;
}

json Kubelet::stats() const {
  int running = 0;
  for (const auto& run : impl_->registry.all()) {
    std::lock_guard<std::mutex> rl(run->mu);
    for (const auto& c : run->containers) running += c.running ? 1 : 0;
  }
  const char* mode = impl_->opts.mode == KubeletMode::Process ? "process" : impl_->opts.mode == KubeletMode::Fake ? "fake" : "none";
  return {{"mode", mode},
          {"pods", impl_->registry.size()},
          {"runningContainers", running},
          {"podIPsInUse", impl_->registry.ips_in_use()},
          {"ipPrefix", impl_->opts.ip_prefix}};
}

}  // namespace kubesim
