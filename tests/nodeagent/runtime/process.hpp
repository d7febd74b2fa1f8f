#pragma once

// Starting a container's process: its own process group, a parent-death signal, a clean signal
// mask, stdout+stderr appended to a log file, stdin from /dev/null, every inherited descriptor
// closed, the container's environment (PATH searched from it), and exec failures reported back.

#include <sys/types.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace noderuntime {

struct SpawnResult {
  pid_t pid = -1;      ///< also the process group id
  int exec_errno = 0;  ///< non-zero: exec (or chdir) failed; the child has been reaped
  std::string error;   ///< message for a failed start
};

/// Forks a container's process: the child gets its own process group, a parent-death signal, a
/// clean signal mask and default handlers, then runs `child_main(report_fd)`, which must exec
/// or call child::fail. A failure reported so is described by `describe(stage, errno)`, and
/// the child is reaped.
SpawnResult spawn_child(const std::function<void(int report_fd)>& child_main,
                        const std::function<std::string(int stage, int err)>& describe);

/// What a child_main may use (system calls only: the parent's other threads may hold locks).
namespace child {
/// Reports the failed stage to the parent and exits 127.
[[noreturn]] void fail(int report_fd, int stage, int err);
/// stdout and stderr appended to the log, stdin from /dev/null; fails with `stage`.
void redirect_stdio(const std::string& log_path, int report_fd, int stage);
/// Every descriptor from 3 on marked close-on-exec.
void close_on_exec_all();
}  // namespace child

SpawnResult spawn_process(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env,
                          const std::string& cwd, const std::string& log_path);

struct CommandResult {
  int code = -1;  ///< exit code (128 + signal), -1 when it could not be started
  std::string out;
  std::string err;
};

/// Runs a helper program (PATH searched in this program's own environment, signals unblocked) and
/// waits for it, capturing stdout and stderr.
CommandResult run_command(const std::vector<std::string>& argv);

/// waitpid with EINTR retry: the exit code, or 128 + signal.
int wait_exit_code(pid_t pid, int* signal_out = nullptr);

/// Freezes (SIGSTOP) the process group `root` leads and every descendant of `root` (parents read
/// from /proc/PID/stat), each as it is found, until two walks find no new one: what a cgroup
/// freezer does to a container, including the processes that left its group (a launcher's ranks
/// in groups of their own, a daemon that called setsid). Returns the pids frozen.
std::vector<pid_t> freeze_tree(pid_t root);

/// Kills (SIGKILL) the container's process tree: frozen first, so that no process forks or is
/// reparented out of reach in between.
void kill_tree(pid_t root);

}  // namespace noderuntime
