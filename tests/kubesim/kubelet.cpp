#include "kubelet.hpp"

#include <cctype>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "image_runtime.hpp"
#include "netblock.hpp"
#include "node_lifecycle.hpp"
#include "pod_env.hpp"
#include "process.hpp"
#include "selectors.hpp"

namespace kubesim {

namespace fs = std::filesystem;

namespace {

struct ContainerRun {
  std::string name;
  bool init = false;
  json spec;
  pid_t pid = -1;
  bool running = false;
  bool finished = false;  ///< terminated for good (no restart coming)
  bool ready = false;
  int exit_code = 0;
  int restarts = 0;
  std::string log_path;
  std::string term_path;
  bool has_log = false;
  std::string image_ref;  ///< image mode: the image found in the store, and its id
  std::string image_id;
  json state = {{"waiting", {{"reason", "ContainerCreating"}}}};
  json last_state = json::object();
};

struct PodRun {
  std::string ns, name, uid, node, ip, host_ip, dir, restart_policy, start_time;
  json labels = json::object();
  std::mutex mu;
  std::condition_variable cv;
  std::vector<ContainerRun> containers;  // init containers first, then the others
  bool stopping = false;
  bool removed = false;  ///< the pod object is gone
  bool delete_when_done = false;
  bool done = false;
  bool fake = false;
  bool initialized = false;
};

using RunPtr = std::shared_ptr<PodRun>;

std::string str(const json& o, const std::string& path) {
  const json* v = json_path(o, path);
  return v && v->is_string() ? v->get<std::string>() : "";
}

bool is_deleting(const json& pod) {
  const json* v = json_path(pod, "metadata.deletionTimestamp");
  return v && !v->is_null();
}

void set_condition(json& conds, const std::string& type, const std::string& status, const std::string& reason = "",
                   const std::string& message = "") {
  if (!conds.is_array()) conds = json::array();
  for (auto& c : conds) {
    if (c.value("type", "") == type) {
      if (c.value("status", "") != status) c["lastTransitionTime"] = now_rfc3339();
      c["status"] = status;
      if (reason.empty()) c.erase("reason"); else c["reason"] = reason;
      if (message.empty()) c.erase("message"); else c["message"] = message;
      return;
    }
  }
  json c = {{"type", type}, {"status", status}, {"lastProbeTime", nullptr}, {"lastTransitionTime", now_rfc3339()}};
  if (!reason.empty()) c["reason"] = reason;
  if (!message.empty()) c["message"] = message;
  conds.push_back(c);
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

/// The imageID: the image's id (its config digest), as a runtime reports an image that has no
/// registry digest (built here, never pushed).
std::string image_id(const ImageConfig& image) { return "sha256:" + image.id; }

std::string tail_of_log(const std::string& path, std::size_t max_lines, std::size_t max_bytes) {
  std::string data;
  try {
    data = read_file(path);
  } catch (const std::exception&) {
    return "";
  }
  if (data.size() > max_bytes) data = data.substr(data.size() - max_bytes);
  std::size_t pos = data.size();
  std::size_t lines = 0;
  if (pos > 0 && data[pos - 1] == '\n') --pos;
  while (pos > 0) {
    if (data[pos - 1] == '\n' && ++lines >= max_lines) break;
    --pos;
  }
  return data.substr(pos);
}

/// state.terminated.message: the termination log (at most 4096 bytes), or with
/// FallbackToLogsOnError and a failure, the log's tail when it is empty.
std::string termination_message(const ContainerRun& c, int code) {
  std::string msg;
  try {
    msg = read_file(c.term_path);
  } catch (const std::exception&) {
  }
  if (msg.size() > 4096) msg = msg.substr(0, 4096);
  if (msg.empty() && code != 0 && c.spec.value("terminationMessagePolicy", "File") == "FallbackToLogsOnError") {
    msg = tail_of_log(c.log_path, 80, 2048);
  }
  return msg;
}

}  // namespace

struct Kubelet::Impl {
  Api& api;
  const TokenAuthority& tokens;
  KubeletOptions opts;
  std::mutex mu;
  std::map<std::string, RunPtr> runs;  // uid -> run
  std::set<std::string> used_ips;
  unsigned next_ip = 0;
  unsigned rr = 0;
  std::set<std::string> unschedulable_reported;
  std::thread controller;
  std::atomic<bool> stopping{false};
  std::shared_ptr<Watcher> watcher;
  NodeLifecycle lifecycle;
  std::unique_ptr<ImageRuntime> images;  ///< image mode (--images buildah), else null

  Impl(Api& a, const TokenAuthority& t, KubeletOptions o)
      : api(a), tokens(t), opts(std::move(o)), lifecycle(a, opts.node_grace_s) {
    if (opts.images) images = std::make_unique<ImageRuntime>(*opts.images);
  }

  // ---------- status ----------

  /// Writes the run's state into the pod's status (if the pod is still the same object).
  void publish(const RunPtr& run) {
    if (lifecycle.lost(run->node)) return;  // a lost node's kubelet reports nothing
    json statuses = json::array(), init_statuses = json::array();
    std::string phase;
    bool all_ready = true, any_main = false;
    {
      std::lock_guard<std::mutex> lock(run->mu);
      bool all_done = true, all_zero = true, any_started = false, init_failed = false;
      for (const auto& c : run->containers) {
        json cs = {{"name", c.name},
                   {"state", c.state},
                   {"lastState", c.last_state},
                   {"ready", c.ready},
                   {"restartCount", c.restarts},
                   {"image", c.image_ref.empty() ? c.spec.value("image", "") : c.image_ref},
                   {"imageID", c.image_id},
                   {"started", c.running}};
        if (c.has_log) cs["containerID"] = "kubesim://" + run->uid + "-" + c.name;
        if (c.init) {
          init_statuses.push_back(cs);
          if (c.finished && c.exit_code != 0) init_failed = true;
          continue;
        }
        any_main = true;
        statuses.push_back(cs);
        if (!c.finished) all_done = false;
        if (c.finished && c.exit_code != 0) all_zero = false;
        if (c.has_log) any_started = true;
        if (!c.ready) all_ready = false;
      }
      if (init_failed && run->restart_policy == "Never") phase = "Failed";
      else if (all_done && any_main && any_started) phase = all_zero ? "Succeeded" : "Failed";
      else if (all_done && run->stopping) phase = all_zero && any_started ? "Succeeded" : "Failed";
      else if (any_started) phase = "Running";
      else phase = "Pending";
    }
    bool terminal = phase == "Succeeded" || phase == "Failed";
    api.mutate("pods", run->ns, run->name, [&](json& pod) {
      if (str(pod, "metadata.uid") != run->uid) return false;
      json& st = pod["status"];
      if (!st.is_object()) st = json::object();
      std::string old_phase = st.value("phase", "");
      if ((old_phase == "Succeeded" || old_phase == "Failed") && !terminal) return false;
      st["phase"] = phase;
      st["hostIP"] = run->host_ip;
      st["hostIPs"] = json::array({{{"ip", run->host_ip}}});
      st["podIP"] = run->ip;
      st["podIPs"] = json::array({{{"ip", run->ip}}});
      st["startTime"] = run->start_time;
      st["containerStatuses"] = statuses;
      if (!init_statuses.empty()) st["initContainerStatuses"] = init_statuses;
      json& conds = st["conditions"];
      set_condition(conds, "PodReadyToStartContainers", "True");
      set_condition(conds, "Initialized", run->initialized ? "True" : "False",
                    run->initialized ? "" : "ContainersNotInitialized",
                    run->initialized ? "" : "containers with incomplete status: [init]");
      std::string ready = (!terminal && any_main && all_ready) ? "True" : "False";
      std::string reason = terminal ? "PodCompleted" : (ready == "True" ? "" : "ContainersNotReady");
      set_condition(conds, "Ready", ready, reason);
      set_condition(conds, "ContainersReady", ready, reason);
      set_condition(conds, "PodScheduled", "True");
      return true;
    });
  }

  // ---------- controller ----------

  void start() {
    if (images) images->check();
    int i = 0;
    for (const auto& n : opts.nodes) {
      json labels = {{"kubernetes.io/hostname", n.name}, {"kubernetes.io/os", "linux"}, {"kubernetes.io/arch", "amd64"}};
      for (const auto& kv : n.labels) labels[kv.first] = kv.second;
      std::string ip = node_ip_in_block(opts.ip_prefix, i++);
      api.ensure("nodes", "",
                 {{"apiVersion", "v1"},
                  {"kind", "Node"},
                  {"metadata", {{"name", n.name}, {"labels", labels}}},
                  {"spec", json::object()},
                  {"status", {{"addresses", json::array({{{"type", "InternalIP"}, {"address", ip}},
                                                         {{"type", "Hostname"}, {"address", n.name}}})}}}});
    }
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

  RunPtr find(const std::string& uid) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = runs.find(uid);
    return it == runs.end() ? nullptr : it->second;
  }

  RunPtr find(const std::string& ns, const std::string& name) {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& kv : runs) {
      if (kv.second->ns == ns && kv.second->name == name && !kv.second->removed) return kv.second;
    }
    return nullptr;
  }

  void finalize_delete(const std::string& ns, const std::string& name, const std::string& uid) {
    DeleteOptions o;
    o.grace = 0;
    o.precondition_uid = uid;
    api.delete_internal("pods", ns, name, o);
  }

  void handle_pod(const json& pod) {
    if (opts.mode == KubeletMode::None || stopping) return;
    const std::string uid = str(pod, "metadata.uid");
    const std::string ns = str(pod, "metadata.namespace");
    const std::string name = str(pod, "metadata.name");
    const std::string node = str(pod, "spec.nodeName");
    const std::string phase = str(pod, "status.phase");
    bool terminal = phase == "Succeeded" || phase == "Failed";
    if (node.empty()) {
      if (!is_deleting(pod) && !terminal) schedule(pod);
      return;
    }
    if (lifecycle.lost(node)) return;  // nobody starts, stops or confirms anything there
    RunPtr run = find(uid);
    if (!run) {
      {
        std::lock_guard<std::recursive_mutex> lock(api.store().mu());
        if (!api.store().get("nodes", "", node)) return;  // no such node: nobody runs it
      }
      if (is_deleting(pod)) {
        finalize_delete(ns, name, uid);
        return;
      }
      if (terminal) return;
      start_run(pod);
      return;
    }
    if (is_deleting(pod)) {
      double grace = static_cast<double>(pod["metadata"].value("deletionGracePeriodSeconds", 0LL));
      bool already_done = false;
      {
        std::lock_guard<std::mutex> lock(run->mu);
        run->delete_when_done = true;
        already_done = run->done;
      }
      if (already_done || run->fake) {
        finalize_delete(ns, name, uid);
      } else {
        request_stop(run, grace, "Killing");
      }
    }
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
    const std::string uid = str(pod, "metadata.uid");
    const std::string ns = str(pod, "metadata.namespace"), name = str(pod, "metadata.name");
    if (fits.empty()) {
      std::string n = std::to_string(nodes.size());
      std::string msg = "0/" + n + " nodes are available: " + n +
                        " node(s) didn't match Pod's node affinity/selector. preemption: 0/" + n +
                        " nodes are available: " + n + " Preemption is not helpful for scheduling.";
      api.mutate("pods", ns, name, [&](json& p) {
        if (str(p, "metadata.uid") != uid) return false;
        set_condition(p["status"]["conditions"], "PodScheduled", "False", "Unschedulable", msg);
        return true;
      });
      bool first;
      {
        std::lock_guard<std::mutex> lock(mu);
        first = unschedulable_reported.insert(uid).second;
      }
      if (first) api.record_event(pod, "Warning", "FailedScheduling", msg, "default-scheduler");
      return;
    }
    std::string chosen = fits[rr++ % fits.size()];
    auto bound = api.mutate("pods", ns, name, [&](json& p) {
      if (str(p, "metadata.uid") != uid || !str(p, "spec.nodeName").empty()) return false;
      p["spec"]["nodeName"] = chosen;
      set_condition(p["status"]["conditions"], "PodScheduled", "True");
      return true;
    });
    {
      std::lock_guard<std::mutex> lock(mu);
      unschedulable_reported.erase(uid);
    }
    if (bound) {
      api.record_event(pod, "Normal", "Scheduled", "Successfully assigned " + ns + "/" + name + " to " + chosen,
                       "default-scheduler");
    }
  }

  std::string allocate_ip() {
    std::lock_guard<std::mutex> lock(mu);
    for (unsigned tries = 0; tries < 254u * 254u; ++tries) {
      unsigned n = next_ip++;
      std::string ip = pod_ip_in_block(opts.ip_prefix, n);
      if (used_ips.insert(ip).second) return ip;
    }
    return "127.0.0.1";
  }

  void release(const RunPtr& run) {
    std::lock_guard<std::mutex> lock(mu);
    used_ips.erase(run->ip);
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

  void start_run(const json& pod) {
    auto run = std::make_shared<PodRun>();
    run->ns = str(pod, "metadata.namespace");
    run->name = str(pod, "metadata.name");
    run->uid = str(pod, "metadata.uid");
    run->labels = pod["metadata"].value("labels", json::object());
    run->node = str(pod, "spec.nodeName");
    run->restart_policy = pod["spec"].value("restartPolicy", "Always");
    run->ip = allocate_ip();
    run->host_ip = node_ip(run->node);
    run->start_time = now_rfc3339();
    run->dir = opts.dir + "/pods/" + run->ns + "_" + run->name + "_" + run->uid;
    for (const char* list : {"initContainers", "containers"}) {
      for (const auto& c : pod["spec"].value(list, json::array())) {
        ContainerRun cr;
        cr.name = c.value("name", "");
        cr.init = std::string(list) == "initContainers";
        cr.spec = c;
        cr.log_path = run->dir + "/" + cr.name + ".log";
        cr.term_path = run->dir + "/" + cr.name + ".termination-log";
        if (cr.init) cr.state = {{"waiting", {{"reason", "PodInitializing"}}}};
        run->containers.push_back(cr);
      }
    }
    run->initialized = true;
    for (const auto& c : run->containers) {
      if (c.init) run->initialized = false;
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      runs[run->uid] = run;
    }
    if (opts.mode == KubeletMode::Fake) {
      run->fake = true;
      std::string now = now_rfc3339();
      for (auto& c : run->containers) {
        c.running = !c.init;
        c.ready = !c.init;
        c.has_log = true;
        c.finished = c.init;
        c.state = c.init ? json{{"terminated", {{"exitCode", 0}, {"reason", "Completed"}, {"startedAt", now}, {"finishedAt", now}}}}
                         : json{{"running", {{"startedAt", now}}}};
      }
      run->initialized = true;
      publish(run);
      return;
    }
    std::thread([this, run] { pod_main(run); }).detach();
  }

  void on_pod_deleted(const json& pod) {
    RunPtr run = find(str(pod, "metadata.uid"));
    if (!run) return;
    bool done;
    {
      std::lock_guard<std::mutex> lock(run->mu);
      run->removed = true;
      done = run->done || run->fake;
    }
    if (done) {
      release(run);
      std::lock_guard<std::mutex> lock(mu);
      runs.erase(run->uid);
    } else {
      request_stop(run, 1, "");
    }
  }

  /// SIGTERM to every running container, SIGKILL after min(grace, max_grace).
  void request_stop(const RunPtr& run, double grace, const std::string& event_reason) {
    std::vector<pid_t> pids;
    std::vector<std::string> names;
    {
      std::lock_guard<std::mutex> lock(run->mu);
      if (run->stopping) return;
      run->stopping = true;
      for (const auto& c : run->containers) {
        if (c.running && c.pid > 0) {
          pids.push_back(c.pid);
          names.push_back(c.name);
        }
      }
    }
    run->cv.notify_all();
    if (!event_reason.empty()) {
      std::lock_guard<std::recursive_mutex> lock(api.store().mu());
      ObjPtr p = api.store().get("pods", run->ns, run->name);
      if (p) {
        for (const auto& n : names) {
          api.record_event(Api::present(*api.types().by_key("pods"), *p), "Normal", event_reason,
                           "Stopping container " + n, "kubelet", run->node);
        }
      }
    }
    for (pid_t pid : pids) ::kill(-pid, SIGTERM);
    double wait_s = std::min(std::max(grace, 0.0), opts.max_grace_s);
    std::thread([run, wait_s] {
      std::unique_lock<std::mutex> lock(run->mu);
      auto all_done = [&] {
        for (const auto& c : run->containers) {
          if (c.running) return false;
        }
        return true;
      };
      run->cv.wait_for(lock, std::chrono::milliseconds(static_cast<long long>(wait_s * 1000)), all_done);
      for (const auto& c : run->containers) {
        if (c.running && c.pid > 0) ::kill(-c.pid, SIGKILL);
      }
    }).detach();
  }

  // ---------- running a pod ----------

  bool wait_or_stop(const RunPtr& run, double seconds) {
    std::unique_lock<std::mutex> lock(run->mu);
    return run->cv.wait_for(lock, std::chrono::milliseconds(static_cast<long long>(seconds * 1000)),
                            [&] { return run->stopping; });
  }

  bool stopping_now(const RunPtr& run) {
    std::lock_guard<std::mutex> lock(run->mu);
    return run->stopping;
  }

  json current_pod(const RunPtr& run) {
    std::lock_guard<std::recursive_mutex> lock(api.store().mu());
    ObjPtr p = api.store().get("pods", run->ns, run->name);
    if (!p || str(*p, "metadata.uid") != run->uid) return nullptr;
    return *p;
  }

  /// The service-account directory (token, ca.crt, namespace), or "" when not mounted.
  std::string mount_service_account(const RunPtr& run, const json& pod) {
    std::string sa = pod["spec"].value("serviceAccountName", "default");
    json sa_obj;
    {
      std::lock_guard<std::recursive_mutex> lock(api.store().mu());
      ObjPtr p = api.store().get("serviceaccounts", run->ns, sa);
      if (!p) return "";
      sa_obj = *p;
    }
    bool mount = sa_obj.value("automountServiceAccountToken", true);
    if (pod["spec"].contains("automountServiceAccountToken")) mount = pod["spec"]["automountServiceAccountToken"].get<bool>();
    if (!mount) return "";
    std::string dir = run->dir + "/serviceaccount";
    fs::create_directories(dir);
    auto minted = tokens.mint(run->ns, sa, str(sa_obj, "metadata.uid"), 3607, {TokenAuthority::issuer()}, "Pod",
                              run->name, run->uid);
    write_file_atomic(dir + "/token", minted.token, 0600);
    write_file_atomic(dir + "/ca.crt", api.config().ca_pem);
    write_file_atomic(dir + "/namespace", run->ns);
    return dir;
  }

  void set_state(const RunPtr& run, std::size_t idx, const std::function<void(ContainerRun&)>& fn) {
    {
      std::lock_guard<std::mutex> lock(run->mu);
      fn(run->containers[idx]);
    }
    run->cv.notify_all();
    publish(run);
  }

  /// The container's env / envFrom, DNS emulation applied (waiting while a ConfigMap / Secret is
  /// missing, or a Service has no pod yet); nullopt when the pod stops or is gone meanwhile.
  std::optional<EnvList> resolve_env(const RunPtr& run, std::size_t idx, const json& spec) {
    EnvList env;
    for (;;) {
      json pod = current_pod(run);
      if (pod.is_null()) return std::nullopt;
      std::string config_error;
      try {
        env = container_env({api, pod}, spec);
      } catch (const std::exception& e) {
        config_error = e.what();
      }
      if (config_error.empty()) break;
      set_waiting(run, idx, "CreateContainerConfigError", config_error);
      if (wait_or_stop(run, 1)) return std::nullopt;
    }
    auto dns_deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<long long>(opts.dns_wait_s * 1000));
    for (;;) {
      bool unresolved = false;
      for (auto& kv : env) {
        std::string v = kv.second;
        if (v.find(".svc") != std::string::npos && !rewrite_service_names(api, run->ns, v)) unresolved = true;
      }
      if (!unresolved || std::chrono::steady_clock::now() >= dns_deadline) break;
      if (wait_or_stop(run, 0.2)) return std::nullopt;
    }
    for (auto& kv : env) {
      if (kv.second.find(".svc") != std::string::npos) rewrite_service_names(api, run->ns, kv.second);
    }
    return env;
  }

  /// Whether the state changed (a kubelet reports a repeated error once, with a count).
  bool set_waiting(const RunPtr& run, std::size_t idx, const std::string& reason, const std::string& message) {
    const json state = {{"waiting", {{"reason", reason}, {"message", message}}}};
    bool changed = false;
    set_state(run, idx, [&](ContainerRun& c) {
      changed = c.state != state;
      c.state = state;
    });
    return changed;
  }

  void pod_event(const RunPtr& run, const std::string& type, const std::string& reason, const std::string& message) {
    json pod = current_pod(run);
    if (!pod.is_null())
      api.record_event(Api::present(*api.types().by_key("pods"), pod), type, reason, message, "kubelet", run->node);
  }

  /// HOSTNAME and the API server's address, as every kubelet sets them.
  EnvList kubelet_env(const RunPtr& run, const json& pod) {
    const std::string host = api.config().server_host;
    const std::string port = std::to_string(api.config().server_port);
    return {{"HOSTNAME", pod["spec"].value("hostname", run->name)},
            {"KUBERNETES_SERVICE_HOST", host},
            {"KUBERNETES_SERVICE_PORT", port},
            {"KUBERNETES_SERVICE_PORT_HTTPS", port},
            {"KUBERNETES_PORT", "tcp://" + host + ":" + port}};
  }

  /// Spawns under the run's lock unless the pod is stopping (nullopt).
  std::optional<SpawnResult> spawn_locked(const RunPtr& run, std::size_t idx,
                                          const std::function<SpawnResult()>& spawn) {
    std::lock_guard<std::mutex> lock(run->mu);
    if (run->stopping) return std::nullopt;
    SpawnResult sp = spawn();
    if (sp.exec_errno == 0) {
      run->containers[idx].pid = sp.pid;
      run->containers[idx].running = true;
    }
    return sp;
  }

  /// Process mode: kubesim's passthrough env, the kubelet's, TRAINBENCH_SERVICEACCOUNT_DIR /
  /// TRAINBENCH_TERMINATION_LOG, the shim, then the container's own; command + args on this machine.
  std::optional<SpawnResult> start_process(const RunPtr& run, std::size_t idx, const json& pod, const EnvList& env,
                                           const std::string& sa_dir) {
    const json& spec = run->containers[idx].spec;
    EnvList full;
    for (const auto& name : opts.passthrough_env) {
      if (const char* v = std::getenv(name.c_str())) put_env(full, name, v);
    }
    for (const auto& kv : kubelet_env(run, pod)) put_env(full, kv.first, kv.second);
    put_env(full, "HOME", run->dir);
    if (!sa_dir.empty()) put_env(full, "TRAINBENCH_SERVICEACCOUNT_DIR", sa_dir);
    const std::string term_path = run->containers[idx].term_path;
    put_env(full, "TRAINBENCH_TERMINATION_LOG", term_path);
    if (!opts.podnet_library.empty()) {
      put_env(full, "LD_PRELOAD", opts.podnet_library);
      put_env(full, "KUBESIM_POD_IP", run->ip);
    }
    for (const auto& kv : env) put_env(full, kv.first, kv.second);
    std::map<std::string, std::string> vars(env.begin(), env.end());
    std::vector<std::string> argv;
    for (const char* f : {"command", "args"}) {
      for (const auto& a : spec.value(f, json::array())) argv.push_back(expand_vars(a.get<std::string>(), vars));
    }
    std::string cwd = spec.value("workingDir", "");
    if (cwd.empty() || !fs::is_directory(cwd)) cwd = run->dir;
    std::remove(term_path.c_str());
    if (spec.value("command", json::array()).empty()) {
      SpawnResult sp;
      sp.exec_errno = ENOENT;
      sp.error = "kubesim runs no images: container \"" + spec.value("name", "") + "\" has no command";
      return sp;
    }
    return spawn_locked(run, idx, [&] { return spawn_process(argv, full, cwd, run->containers[idx].log_path); });
  }

  /// Image mode: the container runs in its image's root filesystem (image_runtime.hpp).
  /// Throws ContainerConfigError.
  std::optional<SpawnResult> start_in_image(const RunPtr& run, std::size_t idx, const json& pod, const EnvList& env,
                                            const std::string& sa_dir, const ImageConfig& image) {
    const ContainerRun& c = run->containers[idx];
    EnvList kenv = kubelet_env(run, pod);
    for (const auto& name : opts.passthrough_env) {
      const char* v = std::getenv(name.c_str());
      if (v && ends_with(name, "SAN_OPTIONS")) put_env(kenv, name, v);
    }
    if (!opts.podnet_library.empty()) {
      put_env(kenv, "LD_PRELOAD", kPodnetTarget);
      put_env(kenv, "KUBESIM_POD_IP", run->ip);
    }
    ContainerLaunch launch = images->prepare(
        api, image, {pod, c.spec, kenv, env, run->dir, run->ip, sa_dir, c.term_path, c.log_path, opts.podnet_library});
    return spawn_locked(run, idx, [&] { return start_container(launch); });
  }

  /// Reports a failed pull as the kubelet does: ErrImagePull, then ImagePullBackOff (an
  /// ErrImageNeverPull stays so). True when the pod stopped meanwhile.
  bool image_pull_failed(const RunPtr& run, std::size_t idx, const std::string& image, const ImagePullError& e) {
    set_waiting(run, idx, e.reason(), e.what());
    pod_event(run, "Warning", e.reason() == "ErrImagePull" ? "Failed" : "ErrImageNeverPull", e.what());
    pod_event(run, "Warning", "Failed", "Error: " + e.reason());
    if (e.reason() != "ErrImagePull") return false;
    if (wait_or_stop(run, 5)) return true;  // ErrImagePull shows until the next sync
    const std::string back_off = "Back-off pulling image " + json(image).dump();
    set_waiting(run, idx, "ImagePullBackOff", back_off + ": " + e.reason() + ": " + e.what());
    pod_event(run, "Normal", "BackOff", back_off);
    pod_event(run, "Warning", "Failed", "Error: ImagePullBackOff");
    return false;
  }

  /// Image mode: the container's image, waiting as a kubelet does while it cannot be had
  /// (ErrImagePull, then ImagePullBackOff with the image back-off); nullopt when the pod stops.
  std::optional<ImageConfig> pull_image(const RunPtr& run, std::size_t idx) {
    const std::string image = run->containers[idx].spec.value("image", "");
    int backoff_s = 10;
    for (;;) {
      try {
        ImageConfig found = images->pull(run->containers[idx].spec);
        pod_event(run, "Normal", "Pulled", "Container image " + json(image).dump() + " already present on machine");
        set_state(run, idx, [&](ContainerRun& c) {
          c.image_ref = found.ref;
          c.image_id = image_id(found);
        });
        return found;
      } catch (const ImagePullError& e) {
        if (image_pull_failed(run, idx, image, e)) return std::nullopt;
      }
      if (wait_or_stop(run, backoff_s)) return std::nullopt;
      backoff_s = std::min(backoff_s * 2, 300);
    }
  }

  /// Waits for a started container (or takes its failed start) and records how it ended; true
  /// when it is to be restarted (then it waits in CrashLoopBackOff for `backoff_s`).
  bool await_exit(const RunPtr& run, std::size_t idx, const json& pod, const SpawnResult& sp, int backoff_s) {
    const json spec = run->containers[idx].spec;
    const std::string cname = spec.value("name", "");
    const std::string term_path = run->containers[idx].term_path;
    std::string started = now_rfc3339();
    int code = 0;
    std::string reason, message;
    if (sp.exec_errno != 0) {
      code = 128;
      reason = "StartError";
      message = "failed to create containerd task: failed to create shim task: OCI runtime create failed: " + sp.error;
      set_state(run, idx, [&](ContainerRun& c) { c.has_log = true; });
    } else {
      set_state(run, idx, [&](ContainerRun& c) {
        c.has_log = true;
        c.ready = !c.init;
        c.state = {{"running", {{"startedAt", started}}}};
      });
      if (run->containers[idx].restarts == 0) {
        api.record_event(Api::present(*api.types().by_key("pods"), pod), "Normal", "Started",
                         "Started container " + cname, "kubelet", run->node);
      }
      code = wait_exit_code(sp.pid);
      ::kill(-sp.pid, SIGKILL);  // the container is gone when its main process is: so are its children
      reason = code == 0 ? "Completed" : "Error";
      message = termination_message(run->containers[idx], code);
    }
    json term = {{"exitCode", code},
                 {"reason", reason},
                 {"startedAt", started},
                 {"finishedAt", now_rfc3339()},
                 {"containerID", "kubesim://" + run->uid + "-" + cname}};
    if (!message.empty()) term["message"] = message;
    bool restart = false;
    {
      std::lock_guard<std::mutex> lock(run->mu);
      bool is_init = run->containers[idx].init;
      restart = !run->stopping && (run->restart_policy == "Always" ? !is_init || code != 0
                                                                   : run->restart_policy == "OnFailure" && code != 0);
    }
    if (!restart) {
      set_state(run, idx, [&](ContainerRun& c) {
        c.running = false;
        c.ready = false;
        c.finished = true;
        c.exit_code = code;
        c.pid = -1;
        c.state = {{"terminated", term}};
      });
      return false;
    }
    set_state(run, idx, [&](ContainerRun& c) {
      c.running = false;
      c.ready = false;
      c.pid = -1;
      c.restarts += 1;
      c.last_state = {{"terminated", term}};
      c.state = {{"waiting",
                  {{"reason", "CrashLoopBackOff"},
                   {"message", "back-off " + std::to_string(backoff_s) + "s restarting failed container=" + cname +
                                   " pod=" + run->name + "_" + run->ns + "(" + run->uid + ")"}}}};
    });
    return true;
  }

  /// Runs container `idx` until it has terminated for good.
  void container_main(const RunPtr& run, std::size_t idx, const std::string& sa_dir) {
    int backoff_s = 10;
    while (!stopping_now(run)) {
      std::optional<ImageConfig> image;
      if (images && !(image = pull_image(run, idx))) break;
      std::optional<EnvList> env = resolve_env(run, idx, run->containers[idx].spec);
      if (!env) break;
      json pod = current_pod(run);
      if (pod.is_null()) return;
      std::optional<SpawnResult> sp;
      try {
        sp = image ? start_in_image(run, idx, pod, *env, sa_dir, *image) : start_process(run, idx, pod, *env, sa_dir);
      } catch (const std::exception& e) {  // ContainerConfigError, or buildah / the pod's files failed (retried)
        const auto* config = dynamic_cast<const ContainerConfigError*>(&e);
        if (set_waiting(run, idx, config ? config->reason() : "CreateContainerError", e.what())) {
          pod_event(run, "Warning", "Failed", std::string("Error: ") + e.what());
        }
        if (wait_or_stop(run, config ? 2 : 10)) break;
        continue;
      }
      if (!sp) return;
      if (!await_exit(run, idx, pod, *sp, backoff_s)) return;
      if (wait_or_stop(run, backoff_s)) break;
      backoff_s = std::min(backoff_s * 2, 300);
    }
    finish_unstarted(run, idx);
  }

  void finish_unstarted(const RunPtr& run, std::size_t idx) {
    set_state(run, idx, [&](ContainerRun& c) {
      if (c.finished) return;
      c.running = false;
      c.ready = false;
      c.finished = true;
      c.exit_code = 137;
      if (!c.state.contains("terminated")) {
        c.state = {{"terminated", {{"exitCode", 137}, {"reason", "ContainerStatusUnknown"},
                                   {"message", "The container could not be located when the pod was terminated"},
                                   {"startedAt", nullptr}, {"finishedAt", now_rfc3339()}}}};
      }
    });
  }

  void pod_main(const RunPtr& run) {
    try {
      fs::create_directories(run->dir);
      publish(run);
      json pod = current_pod(run);
      std::string sa_dir = pod.is_null() ? "" : mount_service_account(run, pod);
      bool init_ok = true;
      for (std::size_t i = 0; i < run->containers.size() && init_ok; ++i) {
        if (!run->containers[i].init) continue;
        container_main(run, i, sa_dir);
        std::lock_guard<std::mutex> lock(run->mu);
        init_ok = run->containers[i].finished && run->containers[i].exit_code == 0 && !run->stopping;
      }
      {
        std::lock_guard<std::mutex> lock(run->mu);
        run->initialized = init_ok;
      }
      std::vector<std::thread> threads;
      for (std::size_t i = 0; i < run->containers.size(); ++i) {
        if (run->containers[i].init) continue;
        if (init_ok) {
          threads.emplace_back([this, run, i, sa_dir] {
            try {
              container_main(run, i, sa_dir);
            } catch (const std::exception& e) {  // not kubesim's end: this container's
              std::fprintf(stderr, "kubesim kubelet: pod %s/%s: %s\n", run->ns.c_str(), run->name.c_str(), e.what());
              finish_unstarted(run, i);
            }
          });
        } else {
          set_state(run, i, [&](ContainerRun& c) {
            c.finished = true;
            c.exit_code = 0;
            c.state = {{"waiting", {{"reason", "PodInitializing"}}}};
          });
        }
      }
      for (auto& t : threads) t.join();
      for (std::size_t i = 0; i < run->containers.size(); ++i) {
        if (!run->containers[i].finished) finish_unstarted(run, i);
      }
      publish(run);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "kubesim kubelet: pod %s/%s: %s\n", run->ns.c_str(), run->name.c_str(), e.what());
    }
    bool removed, delete_it;
    {
      std::lock_guard<std::mutex> lock(run->mu);
      run->done = true;
      removed = run->removed;
      delete_it = run->delete_when_done;
    }
    run->cv.notify_all();
    if (delete_it && !removed) finalize_delete(run->ns, run->name, run->uid);
    if (removed) {
      release(run);
      std::lock_guard<std::mutex> lock(mu);
      runs.erase(run->uid);
    }
  }

  void stop() {
    if (stopping.exchange(true)) return;
    lifecycle.stop();
    if (watcher) watcher->close();
    if (controller.joinable()) controller.join();
    std::vector<RunPtr> all;
    {
      std::lock_guard<std::mutex> lock(mu);
      for (const auto& kv : runs) all.push_back(kv.second);
    }
    for (const auto& run : all) {
      std::lock_guard<std::mutex> lock(run->mu);
      run->stopping = true;
      for (const auto& c : run->containers) {
        if (c.pid > 0) ::kill(-c.pid, SIGKILL);
      }
      run->cv.notify_all();
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    for (const auto& run : all) {
      std::unique_lock<std::mutex> lock(run->mu);
      run->cv.wait_until(lock, deadline, [&] { return run->done || run->fake; });
    }
  }
};

Kubelet::Kubelet(Api& api, const TokenAuthority& tokens, KubeletOptions opts)
    : impl_(std::make_unique<Impl>(api, tokens, std::move(opts))) {}

Kubelet::~Kubelet() { stop(); }

void Kubelet::start() {
  if (impl_->opts.mode == KubeletMode::None) {
    // Nodes exist even when nothing runs (pods stay Pending: nobody schedules them).
  }
  impl_->start();
}

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

}  // namespace

json Kubelet::scrape_targets() const {
  std::vector<RunPtr> all;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    for (const auto& kv : impl_->runs) all.push_back(kv.second);
  }
  json groups = json::array();
  for (const auto& run : all) {
    std::lock_guard<std::mutex> lock(run->mu);
    for (const auto& c : run->containers) {
      if (c.init || !c.running) continue;
      for (const auto& port : c.spec.value("ports", json::array())) {
        const int number = port.value("containerPort", 0);
        if (number <= 0) continue;
        json labels = {{"__meta_kubernetes_namespace", run->ns},
                       {"__meta_kubernetes_pod_name", run->name},
                       {"__meta_kubernetes_pod_uid", run->uid},
                       {"__meta_kubernetes_pod_ip", run->ip},
                       {"__meta_kubernetes_pod_node_name", run->node},
                       {"__meta_kubernetes_pod_phase", "Running"},
                       {"__meta_kubernetes_pod_container_name", c.name},
                       {"__meta_kubernetes_pod_container_init", "false"},
                       {"__meta_kubernetes_pod_container_port_name", port.value("name", "")},
                       {"__meta_kubernetes_pod_container_port_number", std::to_string(number)},
                       {"__meta_kubernetes_pod_container_port_protocol", port.value("protocol", "TCP")}};
        for (const auto& [k, v] : run->labels.items()) {
          if (!v.is_string()) continue;
          labels["__meta_kubernetes_pod_label_" + sanitize_label_name(k)] = v;
          labels["__meta_kubernetes_pod_labelpresent_" + sanitize_label_name(k)] = "true";
        }
        groups.push_back({{"targets", json::array({run->ip + ":" + std::to_string(number)})}, {"labels", labels}});
      }
    }
  }
  return groups;
}

int Kubelet::kill(const std::string& ns, const std::string& pod, const std::string& container, int signal) {
  RunPtr run = impl_->find(ns, pod);
  if (!run) return -1;
  int n = 0;
  if (run->fake) {
    std::string now = now_rfc3339();
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
    impl_->publish(run);
    return n;
  }
  std::lock_guard<std::mutex> lock(run->mu);
  for (const auto& c : run->containers) {
    if (c.running && c.pid > 0 && (container.empty() || c.name == container)) {
      ::kill(-c.pid, signal);
      ++n;
    }
  }
  return n;
}

bool Kubelet::lose_node(const std::string& node) {
  if (!impl_->lifecycle.lose(node)) return false;
  std::lock_guard<std::mutex> lock(impl_->mu);
  for (const auto& [uid, run] : impl_->runs) {
    if (run->node != node) continue;
    std::lock_guard<std::mutex> run_lock(run->mu);
    for (const auto& c : run->containers) {
      if (c.running && c.pid > 0) ::kill(-c.pid, SIGSTOP);  // frozen: no progress, no answer
    }
  }
  return true;
}

std::string Kubelet::log_path(const std::string& ns, const std::string& pod, const std::string& container) const {
  RunPtr run = impl_->find(ns, pod);
  if (!run) return "";
  std::lock_guard<std::mutex> lock(run->mu);
  for (const auto& c : run->containers) {
    if ((container.empty() && !c.init) || c.name == container) return c.has_log && !run->fake ? c.log_path : "";
  }
  return "";
}

bool Kubelet::container_finished(const std::string& ns, const std::string& pod, const std::string& container) const {
  RunPtr run = impl_->find(ns, pod);
  if (!run) return true;
  std::lock_guard<std::mutex> lock(run->mu);
  for (const auto& c : run->containers) {
    if ((container.empty() && !c.init) || c.name == container) return c.finished || (!c.running && run->stopping);
  }
  return true;
}

json Kubelet::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  int running = 0;
  for (const auto& kv : impl_->runs) {
    std::lock_guard<std::mutex> rl(kv.second->mu);
    for (const auto& c : kv.second->containers) running += c.running ? 1 : 0;
  }
  const char* mode = impl_->opts.mode == KubeletMode::Process ? "process" : impl_->opts.mode == KubeletMode::Fake ? "fake" : "none";
  return {{"mode", mode},
          {"pods", impl_->runs.size()},
          {"runningContainers", running},
          {"podIPsInUse", impl_->used_ips.size()},
          {"ipPrefix", impl_->opts.ip_prefix}};
}

}  // namespace kubesim
