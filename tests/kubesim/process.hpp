#pragma once

// Starting a container's process: its own process group, a parent-death signal, a clean signal
// mask, stdout+stderr appended to a log file, stdin from /dev/null, every inherited descriptor
// closed, the container's environment (PATH searched from it), and exec failures reported back.

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace kubesim {

struct SpawnResult {
  pid_t pid = -1;      ///< also the process group id
  int exec_errno = 0;  ///< non-zero: exec (or chdir) failed; the child has been reaped
  std::string error;   ///< message for a failed start
};

SpawnResult spawn_process(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env,
                          const std::string& cwd, const std::string& log_path);

/// waitpid with EINTR retry: the exit code, or 128 + signal.
int wait_exit_code(pid_t pid, int* signal_out = nullptr);

}  // namespace kubesim
