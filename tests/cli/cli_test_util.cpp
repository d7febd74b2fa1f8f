#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

#include "cli_test_util.hpp"

extern char** environ;

namespace trainbench::test {

std::string unique_marker() {
  static std::atomic<int> counter{0};
  const auto now = std::chrono::system_clock::now().time_since_epoch().count();
  return "cli-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" + std::to_string(now);
}

Spawned spawn(const std::string& exe, const std::vector<std::string>& args, const EnvChanges& env,
              const std::string& dir) {
  static std::atomic<int> counter{0};
  Spawned s;
  const int n = counter++;
  s.out_path = dir + "/cli-" + std::to_string(n) + ".out";
  s.err_path = dir + "/cli-" + std::to_string(n) + ".err";

  std::vector<std::string> env_strings;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    if (env.count(kv.substr(0, kv.find('=')))) continue;
    env_strings.push_back(kv);
  }
  for (const auto& [k, v] : env) {
    if (v) env_strings.push_back(k + "=" + *v);
  }
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_strings{exe};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_strings) argv.push_back(a.data());
  argv.push_back(nullptr);

  const int out_fd = ::open(s.out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int err_fd = ::open(s.err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out_fd < 0 || err_fd < 0) throw std::runtime_error("cannot create output files in " + dir);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    // gtest may run with signals blocked or ignored; give the CLI defaults.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    ::execve(exe.c_str(), argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(out_fd);
  ::close(err_fd);
  s.pid = pid;
  return s;
}

std::optional<int> wait_exit(pid_t pid, double timeout_s, const std::function<bool()>& progressed) {
  const auto timeout = std::chrono::duration<double>(timeout_s);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int st = 0;
    const pid_t r = ::waitpid(pid, &st, WNOHANG);
    if (r == pid) {
      if (WIFEXITED(st)) return WEXITSTATUS(st);
      if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
      continue;
    }
    if (r < 0 && errno != EINTR) return std::nullopt;
    if (progressed && progressed()) deadline = std::chrono::steady_clock::now() + timeout;
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &st, 0);
      return std::nullopt;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::function<bool()> output_grows(const Spawned& s) { return files_grew({s.out_path, s.err_path}); }

CliResult run_cli(const std::vector<std::string>& args, const EnvChanges& env, const std::string& dir,
                  double stall_s) {
  const Spawned s = spawn(trainbench_exe(), args, env, dir);
  CliResult r;
  r.code = wait_exit(s.pid, stall_s, output_grows(s)).value_or(-1);
  r.out = read_file(s.out_path);
  r.err = read_file(s.err_path);
  return r;
}

namespace {

std::vector<pid_t> all_pids() {
  std::vector<pid_t> pids;
  DIR* d = ::opendir("/proc");
  if (!d) return pids;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    const long v = std::strtol(e->d_name, &end, 10);
    if (end && *end == '\0' && v > 0) pids.push_back(static_cast<pid_t>(v));
  }
  ::closedir(d);
  return pids;
}

/// State and ppid from /proc/PID/stat ("pid (comm) S ppid ...").
bool stat_of(pid_t pid, char& state, pid_t& ppid) {
  const std::string text = read_file("/proc/" + std::to_string(pid) + "/stat");
  const auto close = text.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream in(text.substr(close + 1));
  long pp = 0;
  if (!(in >> state >> pp)) return false;
  ppid = static_cast<pid_t>(pp);
  return true;
}

}  // namespace

std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  for (pid_t p : all_pids()) {
    char state = 0;
    pid_t ppid = 0;
    if (stat_of(p, state, ppid) && ppid == parent) out.push_back(p);
  }
  return out;
}

std::map<std::string, std::string> environ_of(pid_t pid) {
  std::map<std::string, std::string> env;
  const std::string text = read_file("/proc/" + std::to_string(pid) + "/environ");
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\0', start);
    if (end == std::string::npos) end = text.size();
    const std::string kv = text.substr(start, end - start);
    const auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
    start = end + 1;
  }
  return env;
}

std::vector<pid_t> processes_with_env(const std::string& needle) {
  std::vector<pid_t> out;
  for (pid_t p : all_pids()) {
    if (p == ::getpid()) continue;
    const std::string text = read_file("/proc/" + std::to_string(p) + "/environ");
    if (text.find(needle) != std::string::npos) out.push_back(p);
  }
  return out;
}

bool process_exists(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

bool wait_until(double timeout_s, const std::function<bool()>& pred) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return pred();
}

std::vector<pid_t> processes_left(const std::string& marker, double timeout_s) {
  std::vector<pid_t> left;
  wait_until(timeout_s, [&] {
    left = processes_with_env(marker);
    return left.empty();
  });
  return left;
}

std::string mlp_job_yaml(const std::string& name, int warmup, int measure, int repeats, const std::string& sweep,
                         const std::string& spec_extra) {
  return "apiVersion: trainbench.dev/v1alpha1\n"
         "kind: BenchmarkJob\n"
         "metadata:\n"
         "  name: " + name + "\n"
         "spec:\n"
         "  benchmark:\n"
         "    model: mlp\n"
         "    batchSizePerDevice: 8\n"
         "    warmupSteps: " + std::to_string(warmup) + "\n"
         "    measureSteps: " + std::to_string(measure) + "\n"
         "    repeats: " + std::to_string(repeats) + "\n"
         "    threadsPerProcess: 1\n"
         "    mlp: {inputSize: 64, hiddenSizes: [128], numClasses: 10}\n"
         "  sweep:\n" + sweep + spec_extra;
}

std::string trainbench_exe() { return TRAINBENCH_EXE; }

std::string real_worker_exe() {
#ifdef TRAINBENCH_WORKER_EXE
  return TRAINBENCH_WORKER_EXE;
#else
  return "";
#endif
}

std::string data_dir() { return TRAINBENCH_CLI_TEST_DATA; }

std::string worker_with_test_options(const TempDir& dir, const std::string& test_options_json) {
  const std::string path = dir.file("worker-with-test-options.sh");
  // The config is one JSON object: its last character is the closing brace.
  write_file(path,
             "#!/bin/sh\n"
             "TRAINBENCH_RUN_CONFIG=\"${TRAINBENCH_RUN_CONFIG%?}\"',\"testOptions\":" +
                 test_options_json +
                 "}'\n"
                 "export TRAINBENCH_RUN_CONFIG\n"
                 "exec '" +
                 real_worker_exe() + "' \"$@\"\n",
             /*executable=*/true);
  return path;
}

}  // namespace trainbench::test
