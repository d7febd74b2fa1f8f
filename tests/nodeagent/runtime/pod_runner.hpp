#pragma once

// Runs one pod's containers on this machine as a kubelet runs them (tests/nodeagent/README.md): init containers in order, then the
// others at once; each as a local process in its own process group (process mode), or in its
// image's root filesystem (image mode, image_runtime.hpp); env with the DNS emulation,
// termination messages, restartPolicy with the kubelet's back-off, image pull errors, and
// SIGTERM -> SIGKILL on deletion. Every state change goes to the host (pod_host.hpp) as the
// pod's status; the kubelet's Events (Pulled, Started, Killing, BackOff, Failed) too.

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/image_runtime.hpp"
#include "runtime/pod_env.hpp"
#include "runtime/pod_host.hpp"
#include "runtime/pod_run.hpp"
#include "runtime/process.hpp"

namespace noderuntime {

struct RunnerOptions {
  double max_grace_s = 3;   ///< SIGTERM -> SIGKILL wait is min(grace, this)
  double dns_wait_s = 60;   ///< how long a container waits for its env's <svc>.<ns>.svc names
  /// The pod network shim (podnet_shim.cpp) preloaded into every container with TRAINBENCH_POD_IP:
  /// wildcard binds land on the pod IP, as in a pod's own network namespace. "" disables it.
  std::string podnet_library;
  /// Image mode: containers run in their images' root filesystems. Null: process mode.
  ImageRuntime* images = nullptr;
  /// A restarted container's log starts afresh, the previous one kept as NAME.previous.log (as
  /// a kubelet keeps the last instance's log for `kubectl logs --previous`); else one log
  /// grows across restarts.
  bool keep_previous_log = false;
  std::vector<std::string> passthrough_env = {"PATH", "LD_LIBRARY_PATH", "TMPDIR", "LANG", "LC_ALL",
                                              "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS"};
};

class PodRunner {
 public:
  PodRunner(PodHost& host, RunnerOptions opts) : host_(host), opts_(std::move(opts)) {}

  /// Runs the pod until each of its containers has terminated for good or it stops (blocks:
  /// call it on a thread of the pod's own). The final status is published.
  void run(const RunPtr& run);
  /// SIGTERM to every running container, SIGKILL after min(grace, max_grace_s) (on a thread of
  /// its own); an Event `event_reason` ("Killing") per container when not empty. Once.
  void request_stop(const RunPtr& run, double grace_s, const std::string& event_reason);
  /// The pod is being deleted: its run stops (grace as above, Killing events). True when the run
  /// has ended already (the caller finishes the deletion now; else when run() returns).
  bool delete_requested(const RunPtr& run, double grace_s);
  /// Writes the run's state through the host.
  void publish(const RunPtr& run);
  /// SIGKILLs every container of the runs and waits up to `wait` for their runs to end.
  static void kill_all(const std::vector<RunPtr>& runs, std::chrono::milliseconds wait);

  /// The previous instance's log of a container restarted with keep_previous_log ("" if none).
  static std::string previous_log_path(const std::string& log_path);

 private:
  // pod_runner.cpp
  void run_containers(const RunPtr& run);
  std::string mount_service_account(const RunPtr& run, const json& pod);
  bool service_account_dir(const RunPtr& run, std::string& dir);
  void set_state(const RunPtr& run, std::size_t idx, const std::function<void(ContainerRun&)>& fn);
  bool set_waiting(const RunPtr& run, std::size_t idx, const std::string& reason, const std::string& message);
  void pod_event(const RunPtr& run, const std::string& type, const std::string& reason, const std::string& message);
  static bool wait_or_stop(const RunPtr& run, double seconds);
  static bool stopping_now(const RunPtr& run);
  void finish_unstarted(const RunPtr& run, std::size_t idx);
  // container_loop.cpp
  void container_main(const RunPtr& run, std::size_t idx, const std::string& sa_dir);
  std::optional<SpawnResult> start_once(const RunPtr& run, std::size_t idx, const json& pod, const EnvList& env,
                                        const std::string& sa_dir, const std::optional<ImageConfig>& image);
  bool await_exit(const RunPtr& run, std::size_t idx, const json& pod, const SpawnResult& sp, int backoff_s);
  void record_exit(const RunPtr& run, std::size_t idx, const json& term, int code, bool restart, int backoff_s);
  std::optional<EnvList> resolve_env(const RunPtr& run, std::size_t idx, const json& spec);
  bool resolve_service_names(const RunPtr& run, EnvList& env);
  std::optional<ImageConfig> pull_image(const RunPtr& run, std::size_t idx);
  bool image_pull_failed(const RunPtr& run, std::size_t idx, const std::string& image, const ImagePullError& e);
  // container_start.cpp
  EnvList kubelet_env(const RunPtr& run, const json& pod);
  std::optional<SpawnResult> spawn_locked(const RunPtr& run, std::size_t idx,
                                          const std::function<SpawnResult()>& spawn);
  std::optional<SpawnResult> start_process(const RunPtr& run, std::size_t idx, const json& pod, const EnvList& env,
                                           const std::string& sa_dir);
  std::optional<SpawnResult> start_in_image(const RunPtr& run, std::size_t idx, const json& pod, const EnvList& env,
                                            const std::string& sa_dir, const ImageConfig& image);

  PodHost& host_;
  RunnerOptions opts_;
};

}  // namespace noderuntime
