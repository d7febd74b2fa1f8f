#include "process.hpp"

#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace kubesim {

SpawnResult spawn_process(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env,
                          const std::string& cwd, const std::string& log_path) {
  SpawnResult r;
  if (argv.empty()) {
    r.exec_errno = ENOENT;
    r.error = "no command specified";
    return r;
  }
  std::vector<std::string> env_strings;
  for (const auto& kv : env) env_strings.push_back(kv.first + "=" + kv.second);
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env_strings) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) {
    r.exec_errno = errno;
    r.error = std::strerror(errno);
    return r;
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    r.exec_errno = errno;
    r.error = std::strerror(errno);
    close(pipefd[0]);
    close(pipefd[1]);
    return r;
  }
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int s : {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD, SIGUSR1, SIGUSR2}) signal(s, SIG_DFL);
    int stage = 0;  // 1: log file, 2: chdir, 3: exec
    int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
      stage = 1;
    } else {
      dup2(fd, 1);
      dup2(fd, 2);
      int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (nul >= 0) dup2(nul, 0);
      if (chdir(cwd.c_str()) != 0) stage = 2;
    }
    if (stage == 0) {
      if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
        for (int i = 3; i < 4096; ++i) {
          if (i != pipefd[1]) fcntl(i, F_SETFD, FD_CLOEXEC);
        }
      }
      environ = cenv.data();
      execvp(cargv[0], cargv.data());
      stage = 3;
    }
    int report[2] = {stage, errno};
    ssize_t ignored = write(pipefd[1], report, sizeof report);
    (void)ignored;
    _exit(127);
  }
  setpgid(pid, pid);
  close(pipefd[1]);
  int report[2] = {0, 0};
  ssize_t n;
  do {
    n = read(pipefd[0], report, sizeof report);
  } while (n < 0 && errno == EINTR);
  close(pipefd[0]);
  r.pid = pid;
  if (n == static_cast<ssize_t>(sizeof report)) {
    wait_exit_code(pid);
    r.exec_errno = report[1] ? report[1] : EINVAL;
    if (report[0] == 1) {
      r.error = "cannot open log file " + log_path + ": " + std::strerror(r.exec_errno);
    } else if (report[0] == 2) {
      r.error = "chdir to cwd (\"" + cwd + "\") set in config.json failed: " + std::strerror(r.exec_errno);
    } else if (r.exec_errno == ENOENT) {
      r.error = "exec: \"" + argv[0] + "\": executable file not found in $PATH";
    } else {
      r.error = "exec: \"" + argv[0] + "\": " + std::strerror(r.exec_errno);
    }
  }
  return r;
}

int wait_exit_code(pid_t pid, int* signal_out) {
  int status = 0;
  pid_t w;
  do {
    w = waitpid(pid, &status, 0);
  } while (w < 0 && errno == EINTR);
  if (w < 0) return -1;
  if (WIFSIGNALED(status)) {
    if (signal_out) *signal_out = WTERMSIG(status);
    return 128 + WTERMSIG(status);
  }
  if (signal_out) *signal_out = 0;
  return WEXITSTATUS(status);
}

}  // namespace kubesim
