#include "runtime/process.hpp"

#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

extern char** environ;

namespace noderuntime {

namespace child {

void fail(int report_fd, int stage, int err) {
  int report[2] = {stage, err};
  ssize_t ignored = write(report_fd, report, sizeof report);
  (void)ignored;
  _exit(127);
}

void redirect_stdio(const std::string& log_path, int report_fd, int stage) {
  int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) fail(report_fd, stage, errno);
  dup2(fd, 1);
  dup2(fd, 2);
  int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (nul >= 0) dup2(nul, 0);
}

void close_on_exec_all() {
  if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
    for (int i = 3; i < 4096; ++i) fcntl(i, F_SETFD, FD_CLOEXEC);
  }
}

}  // namespace child

SpawnResult spawn_child(const std::function<void(int)>& child_main,
                        const std::function<std::string(int, int)>& describe) {
  SpawnResult r;
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) {
    r.exec_errno = errno;
    r.error = std::strerror(errno);
    return r;
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int s : {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD, SIGUSR1, SIGUSR2}) signal(s, SIG_DFL);
    child_main(pipefd[1]);
    child::fail(pipefd[1], 0, EINVAL);  // child_main returned: it must exec or fail
  }
  close(pipefd[1]);
  if (pid < 0) {
    r.exec_errno = errno;
    r.error = std::strerror(errno);
    close(pipefd[0]);
    return r;
  }
  setpgid(pid, pid);
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
    r.error = describe(report[0], r.exec_errno);
  }
  return r;
}

SpawnResult spawn_process(const std::vector<std::string>& argv,
                          const std::vector<std::pair<std::string, std::string>>& env, const std::string& cwd,
                          const std::string& log_path) {
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
  enum { kLog = 1, kChdir = 2, kExec = 3 };
  auto child_main = [&](int report_fd) {
    child::redirect_stdio(log_path, report_fd, kLog);
    if (chdir(cwd.c_str()) != 0) child::fail(report_fd, kChdir, errno);
    child::close_on_exec_all();
    environ = cenv.data();
    execvp(cargv[0], cargv.data());
    child::fail(report_fd, kExec, errno);
  };
  auto describe = [&](int stage, int err) -> std::string {
    if (stage == kLog) return "cannot open log file " + log_path + ": " + std::strerror(err);
    if (stage == kChdir) return "chdir to cwd (\"" + cwd + "\") set in config.json failed: " + std::strerror(err);
    if (err == ENOENT) return "exec: \"" + argv[0] + "\": executable file not found in $PATH";
    return "exec: \"" + argv[0] + "\": " + std::strerror(err);
  };
  return spawn_child(child_main, describe);
}

namespace {

/// Reads both pipes to their ends (poll, so that neither can fill up and stall the child).
void drain(int out_fd, int err_fd, std::string& out, std::string& err) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  std::string* sinks[2] = {&out, &err};
  int open_count = 2;
  char buf[4096];
  while (open_count > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;
        --open_count;
      }
    }
  }
}

}  // namespace

CommandResult run_command(const std::vector<std::string>& argv) {
  CommandResult r;
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) return r;
  if (pipe2(err, O_CLOEXEC) != 0) {
    close(out[0]);
    close(out[1]);
    return r;
  }
  pid_t pid = fork();
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (nul >= 0) dup2(nul, 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    child::close_on_exec_all();  // our sockets and locks stay with us
    execvp(cargv[0], cargv.data());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  if (pid > 0) drain(out[0], err[0], r.out, r.err);
  close(out[0]);
  close(err[0]);
  if (pid > 0) r.code = wait_exit_code(pid);
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

namespace {

/// Every process's (pid, parent pid), from /proc/PID/stat ("pid (comm) state ppid ...": comm may
/// hold spaces and parentheses, so the fields after the last ')' are read).
std::vector<std::pair<pid_t, pid_t>> process_parents() {
  std::vector<std::pair<pid_t, pid_t>> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat;
    try {
      stat.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    } catch (const std::ios_base::failure&) {
      // The process ended between the open and the read: read() fails with ESRCH, and
      // libstdc++'s filebuf throws from underflow even without exceptions() set (a soak once
      // aborted the agent so: "basic_filebuf::underflow error reading the file: No such process").
      continue;
    }
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;  // the process ended in between
    std::istringstream rest(stat.substr(close + 1));
    char state = 0;
    long ppid = 0;
    if (rest >> state >> ppid) out.emplace_back(static_cast<pid_t>(std::stol(name)), static_cast<pid_t>(ppid));
  }
  return out;
}

}  // namespace

std::vector<pid_t> freeze_tree(pid_t root) {
  std::vector<pid_t> tree{root};
  ::kill(-root, SIGSTOP);
  ::kill(root, SIGSTOP);
  auto in_tree = [&](pid_t pid) { return std::find(tree.begin(), tree.end(), pid) != tree.end(); };
  // A process may fork just before its SIGSTOP takes effect: a walk that finds nothing new is
  // repeated once, a moment later.
  for (int quiet_walks = 0; quiet_walks < 2;) {
    bool grew = false;
    for (const auto& [pid, ppid] : process_parents()) {
      if (in_tree(ppid) && !in_tree(pid)) {
        ::kill(pid, SIGSTOP);
        tree.push_back(pid);
        grew = true;
      }
    }
    quiet_walks = grew ? 0 : quiet_walks + 1;
    if (!grew) ::usleep(2000);
  }
  return tree;
}

void kill_tree(pid_t root) {
  const std::vector<pid_t> tree = freeze_tree(root);
  ::kill(-root, SIGKILL);
  for (pid_t pid : tree) ::kill(pid, SIGKILL);
}

}  // namespace noderuntime
