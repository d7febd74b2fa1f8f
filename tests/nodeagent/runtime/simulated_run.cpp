#include "runtime/simulated_run.hpp"

namespace noderuntime {

void start_simulated(PodRun& run) {
  const std::string now = now_rfc3339();
  std::lock_guard<std::mutex> lock(run.mu);
  run.fake = true;
  for (auto& c : run.containers) {
    c.has_log = true;  // started: the status carries its containerID
    c.running = c.ready = !c.init;
    c.finished = c.init;
    c.state = c.init ? json{{"terminated",
                             {{"exitCode", 0}, {"reason", "Completed"}, {"startedAt", now}, {"finishedAt", now}}}}
                     : json{{"running", {{"startedAt", now}}}};
  }
  run.initialized = true;
}

bool stop_simulated(PodRun& run, int signal) {
  const std::string now = now_rfc3339();
  {
    std::lock_guard<std::mutex> lock(run.mu);
    if (run.stopping) return false;
    run.stopping = true;
    for (auto& c : run.containers) {
      if (c.init || c.finished) continue;
      const json started = c.state.contains("running") ? c.state["running"]["startedAt"] : json(now);
      c.running = c.ready = false;
      c.finished = true;
      c.exit_code = 128 + signal;
      c.state = {{"terminated",
                  {{"exitCode", c.exit_code}, {"reason", "Error"}, {"startedAt", started}, {"finishedAt", now}}}};
    }
    run.done = true;
  }
  run.cv.notify_all();
  return true;
}

}  // namespace noderuntime
