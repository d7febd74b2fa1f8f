#pragma once

// A pod run in which nothing runs (the node agent's `--pods simulated`, as kubesim's
// `--kubelet fake`): for scale tests of what sits on the other side of the API server (the
// operator, the scheduler), where thousands of pods must look alive without a process each.
// The run is marked `fake` (pod_run.hpp), so the registry forgets it as soon as its pod is gone,
// the runner's deletion and kill paths find it ended, and it has no log. No thread of its own:
// the caller publishes the status after each step.

#include "runtime/pod_run.hpp"

namespace noderuntime {

/// The pod's containers as a kubelet reports them once they run: init containers terminated
/// (exit 0, Completed), the others running, started and ready since now; the pod initialized.
/// pod_status_report() then says Running and Ready with the run's pod IP.
void start_simulated(PodRun& run);

/// The pod is being deleted (or its node stops it): every container that runs ends as a process
/// ends on `signal` (exit code 128 + signal, reason Error, as a program that does not handle
/// SIGTERM), so the pod's last status is terminal (Failed) before the pod is deleted, as for a
/// real run. True when it stopped now, false when it had stopped before.
bool stop_simulated(PodRun& run, int signal);

}  // namespace noderuntime
