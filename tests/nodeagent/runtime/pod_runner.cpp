#include "runtime/pod_runner.hpp"

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <thread>

namespace noderuntime {

namespace fs = std::filesystem;

void PodRunner::publish(const RunPtr& run) { host_.publish(*run, pod_status_report(*run)); }

void PodRunner::set_state(const RunPtr& run, std::size_t idx, const std::function<void(ContainerRun&)>& fn) {
  {
    std::lock_guard<std::mutex> lock(run->mu);
    fn(run->containers[idx]);
  }
  run->cv.notify_all();
  publish(run);
}

/// Whether the state changed (a kubelet reports a repeated error once, with a count).
bool PodRunner::set_waiting(const RunPtr& run, std::size_t idx, const std::string& reason,
                            const std::string& message) {
  const json state = {{"waiting", {{"reason", reason}, {"message", message}}}};
  bool changed = false;
  set_state(run, idx, [&](ContainerRun& c) {
    changed = c.state != state;
    c.state = state;
  });
  return changed;
}

void PodRunner::pod_event(const RunPtr& run, const std::string& type, const std::string& reason,
                          const std::string& message) {
  json pod = host_.current_pod(*run);
  if (!pod.is_null()) host_.event(*run, pod, type, reason, message);
}

bool PodRunner::wait_or_stop(const RunPtr& run, double seconds) {
  std::unique_lock<std::mutex> lock(run->mu);
  return run->cv.wait_for(lock, std::chrono::milliseconds(static_cast<long long>(seconds * 1000)),
                          [&] { return run->stopping; });
}

bool PodRunner::stopping_now(const RunPtr& run) {
  std::lock_guard<std::mutex> lock(run->mu);
  return run->stopping;
}

void PodRunner::finish_unstarted(const RunPtr& run, std::size_t idx) {
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

/// The service-account directory (token, ca.crt, namespace), or "" when none is mounted.
std::string PodRunner::mount_service_account(const RunPtr& run, const json& pod) {
  std::optional<std::string> token = host_.service_account_token(*run, pod);
  if (!token) return "";
  std::string dir = run->dir + "/serviceaccount";
  fs::create_directories(dir);
  write_file_atomic(dir + "/token", *token, 0600);
  write_file_atomic(dir + "/ca.crt", host_.cluster().api_ca_pem());
  write_file_atomic(dir + "/namespace", run->ns);
  return dir;
}

/// The ServiceAccount directory, retried every second while the token cannot be had (the
/// containers wait in ContainerCreating, a FailedMount Event says why, as a kubelet's volume
/// manager does); false when the pod stops or goes meanwhile.
bool PodRunner::service_account_dir(const RunPtr& run, std::string& dir) {
  for (int attempt = 1;; ++attempt) {
    json pod = host_.current_pod(*run);
    if (pod.is_null()) return false;
    try {
      dir = mount_service_account(run, pod);
      return true;
    } catch (const std::exception& e) {
      // The first seconds' refusals are the API server's authorizer catching up with a pod just
      // bound to the node (tests/nodeagent/README.md): reported only when they last.
      if (attempt == 4) {
        host_.event(*run, pod, "Warning", "FailedMount",
                    std::string("MountVolume.SetUp failed for the ServiceAccount token: ") + e.what());
      }
    }
    if (wait_or_stop(run, attempt < 4 ? 0.5 : 1)) return false;
  }
}

/// Init containers in order, then the others at once, each on a thread of its own.
void PodRunner::run_containers(const RunPtr& run) {
  std::string sa_dir;
  if (!service_account_dir(run, sa_dir)) return;
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
    if (!init_ok) {
      set_state(run, i, [&](ContainerRun& c) {
        c.finished = true;
        c.exit_code = 0;
        c.state = {{"waiting", {{"reason", "PodInitializing"}}}};
      });
      continue;
    }
    threads.emplace_back([this, run, i, sa_dir] {
      try {
        container_main(run, i, sa_dir);
      } catch (const std::exception& e) {  // not the node's end: this container's
        std::fprintf(stderr, "pod %s/%s: %s\n", run->ns.c_str(), run->name.c_str(), e.what());
        finish_unstarted(run, i);
      }
    });
  }
  for (auto& t : threads) t.join();
}

void PodRunner::run(const RunPtr& run) {
  try {
    fs::create_directories(run->dir);
    publish(run);
    run_containers(run);
    for (std::size_t i = 0; i < run->containers.size(); ++i) {
      if (!run->containers[i].finished) finish_unstarted(run, i);
    }
    publish(run);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pod %s/%s: %s\n", run->ns.c_str(), run->name.c_str(), e.what());
  }
}

void PodRunner::request_stop(const RunPtr& run, double grace_s, const std::string& event_reason) {
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
    for (const auto& n : names) pod_event(run, "Normal", event_reason, "Stopping container " + n);
  }
  for (pid_t pid : pids) ::kill(-pid, SIGTERM);
  const double wait_s = std::min(std::max(grace_s, 0.0), opts_.max_grace_s);
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
      if (c.running && c.pid > 0) kill_tree(c.pid);
    }
  }).detach();
}

bool PodRunner::delete_requested(const RunPtr& run, double grace_s) {
  bool already_done = false;
  {
    std::lock_guard<std::mutex> lock(run->mu);
    run->delete_when_done = true;
    already_done = run->done || run->fake;
  }
  if (!already_done) request_stop(run, grace_s, "Killing");
  return already_done;
}

void PodRunner::kill_all(const std::vector<RunPtr>& runs, std::chrono::milliseconds wait) {
  for (const auto& run : runs) {
    std::lock_guard<std::mutex> lock(run->mu);
    run->stopping = true;
    for (const auto& c : run->containers) {
      if (c.running && c.pid > 0) kill_tree(c.pid);
    }
    run->cv.notify_all();
  }
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (const auto& run : runs) {
    std::unique_lock<std::mutex> lock(run->mu);
    run->cv.wait_until(lock, deadline, [&] { return run->done || run->fake; });
  }
}

std::string PodRunner::previous_log_path(const std::string& log_path) {
  const std::string stem = ends_with(log_path, ".log") ? log_path.substr(0, log_path.size() - 4) : log_path;
  return stem + ".previous.log";
}

}  // namespace noderuntime
