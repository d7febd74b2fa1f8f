// PodRunner: one container's life, from its image and env to its exit and restarts.

#include <signal.h>

#include <algorithm>
#include <cstdio>

#include "runtime/container_log.hpp"
#include "runtime/pod_runner.hpp"

namespace noderuntime {

namespace {

/// The imageID: the image's id (its config digest), as a runtime reports an image that has no
/// registry digest (built here, never pushed).
std::string image_id(const ImageConfig& image) { return "sha256:" + image.id; }

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
    msg = read_log_tail(c.log_path, 80, 2048);
  }
  return msg;
}

}  // namespace

/// Runs container `idx` until it has terminated for good.
void PodRunner::container_main(const RunPtr& run, std::size_t idx, const std::string& sa_dir) {
  int backoff_s = 10;
  while (!stopping_now(run)) {
    std::optional<ImageConfig> image;
    if (opts_.images && !(image = pull_image(run, idx))) break;
    std::optional<EnvList> env = resolve_env(run, idx, run->containers[idx].spec);
    if (!env) break;
    json pod = host_.current_pod(*run);
    if (pod.is_null()) return;
    std::optional<SpawnResult> sp;
    try {
      sp = start_once(run, idx, pod, *env, sa_dir, image);
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

std::optional<SpawnResult> PodRunner::start_once(const RunPtr& run, std::size_t idx, const json& pod,
                                                 const EnvList& env, const std::string& sa_dir,
                                                 const std::optional<ImageConfig>& image) {
  const ContainerRun& c = run->containers[idx];
  if (opts_.keep_previous_log && c.restarts > 0) {
    std::rename(c.log_path.c_str(), previous_log_path(c.log_path).c_str());
  }
  return image ? start_in_image(run, idx, pod, env, sa_dir, *image) : start_process(run, idx, pod, env, sa_dir);
}

/// Waits for a started container (or takes its failed start) and records how it ended; true
/// when it is to be restarted (then it waits in CrashLoopBackOff for `backoff_s`).
bool PodRunner::await_exit(const RunPtr& run, std::size_t idx, const json& pod, const SpawnResult& sp, int backoff_s) {
  const std::string cname = run->containers[idx].name;
  const std::string started = now_rfc3339();
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
      host_.event(*run, pod, "Normal", "Created", "Created container " + cname);
      host_.event(*run, pod, "Normal", "Started", "Started container " + cname);
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
               {"containerID", container_id(*run, cname)}};
  if (!message.empty()) term["message"] = message;
  bool restart = false;
  {
    std::lock_guard<std::mutex> lock(run->mu);
    const bool is_init = run->containers[idx].init;
    restart = !run->stopping && (run->restart_policy == "Always" ? !is_init || code != 0
                                                                 : run->restart_policy == "OnFailure" && code != 0);
  }
  record_exit(run, idx, term, code, restart, backoff_s);
  return restart;
}

void PodRunner::record_exit(const RunPtr& run, std::size_t idx, const json& term, int code, bool restart,
                            int backoff_s) {
  if (!restart) {
    set_state(run, idx, [&](ContainerRun& c) {
      c.running = false;
      c.ready = false;
      c.finished = true;
      c.exit_code = code;
      c.pid = -1;
      c.state = {{"terminated", term}};
    });
    return;
  }
  set_state(run, idx, [&](ContainerRun& c) {
    c.running = false;
    c.ready = false;
    c.pid = -1;
    c.restarts += 1;
    c.last_state = {{"terminated", term}};
    c.state = {{"waiting",
                {{"reason", "CrashLoopBackOff"},
                 {"message", "back-off " + std::to_string(backoff_s) + "s restarting failed container=" + c.name +
                                 " pod=" + run->name + "_" + run->ns + "(" + run->uid + ")"}}}};
  });
  pod_event(run, "Warning", "BackOff", "Back-off restarting failed container " + run->containers[idx].name +
                                           " in pod " + run->name + "_" + run->ns + "(" + run->uid + ")");
}

/// The container's env / envFrom, DNS emulation applied (waiting while a ConfigMap / Secret is
/// missing, or a Service has no pod yet); nullopt when the pod stops or is gone meanwhile.
std::optional<EnvList> PodRunner::resolve_env(const RunPtr& run, std::size_t idx, const json& spec) {
  EnvList env;
  for (;;) {
    json pod = host_.current_pod(*run);
    if (pod.is_null()) return std::nullopt;
    std::string config_error;
    try {
      env = container_env({host_.cluster(), pod}, spec);
    } catch (const std::exception& e) {
      config_error = e.what();
    }
    if (config_error.empty()) break;
    if (set_waiting(run, idx, "CreateContainerConfigError", config_error)) {
      pod_event(run, "Warning", "Failed", "Error: " + config_error);
    }
    if (wait_or_stop(run, 1)) return std::nullopt;
  }
  if (!resolve_service_names(run, env)) return std::nullopt;
  return env;
}

/// Rewrites <svc>.<ns>.svc names in the env, waiting up to dns_wait_s for all to resolve (then
/// leaving those that do not); false when the pod stops meanwhile.
bool PodRunner::resolve_service_names(const RunPtr& run, EnvList& env) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<long long>(opts_.dns_wait_s * 1000));
  auto has_names = [](const std::string& v) { return v.find(".svc") != std::string::npos; };
  for (;;) {
    bool unresolved = false;
    for (const auto& kv : env) {
      std::string v = kv.second;
      if (has_names(v) && !rewrite_service_names(host_.cluster(), v)) unresolved = true;
    }
    if (!unresolved || std::chrono::steady_clock::now() >= deadline) break;
    if (wait_or_stop(run, 0.2)) return false;
  }
  for (auto& kv : env) {
    if (has_names(kv.second)) rewrite_service_names(host_.cluster(), kv.second);
  }
  return true;
}

/// Reports a failed pull as the kubelet does: ErrImagePull, then ImagePullBackOff (an
/// ErrImageNeverPull stays so). True when the pod stopped meanwhile.
bool PodRunner::image_pull_failed(const RunPtr& run, std::size_t idx, const std::string& image,
                                  const ImagePullError& e) {
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
std::optional<ImageConfig> PodRunner::pull_image(const RunPtr& run, std::size_t idx) {
  const std::string image = run->containers[idx].spec.value("image", "");
  int backoff_s = 10;
  for (;;) {
    try {
      ImageConfig found = opts_.images->pull(run->containers[idx].spec);
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

}  // namespace noderuntime
