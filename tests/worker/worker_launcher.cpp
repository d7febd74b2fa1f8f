#include "worker_launcher.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

extern char** environ;

namespace trainbench::test {
namespace {

struct Child {
  pid_t pid = -1;
  std::string log_path;
};

Child spawn(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
            const std::string& log_path) {
  std::map<std::string, std::string> merged;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv(*e);
    const auto eq = kv.find('=');
    if (eq != std::string::npos) merged[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : env) merged[k] = v;
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : merged) env_strings.push_back(k + "=" + v);

  // Everything the child needs is prepared before fork().
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& s : env_strings) cenv.push_back(const_cast<char*>(s.c_str()));
  cenv.push_back(nullptr);

  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0) throw std::runtime_error("cannot open " + log_path + ": " + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log_fd);
    throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    ::execve(cargv[0], cargv.data(), cenv.data());
    const char msg[] = "exec failed\n";
    (void)!::write(STDERR_FILENO, msg, sizeof(msg) - 1);
    ::_exit(127);
  }
  ::close(log_fd);
  return Child{pid, log_path};
}

std::vector<ProcessOutcome> wait_all(std::vector<Child>& children, std::chrono::seconds timeout) {
  std::vector<ProcessOutcome> out(children.size());
  std::vector<bool> done(children.size(), false);
  // The timeout counts from the last time any child's log grew: a busy machine makes a run
  // longer, never a failure (issue 31); a rank that is silent for `timeout` is stopped.
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<std::string> logs;
  for (const Child& c : children) logs.push_back(c.log_path);
  const auto logs_grew = files_grew(std::move(logs));
  std::size_t remaining = children.size();
  while (remaining > 0) {
    if (logs_grew()) deadline = std::chrono::steady_clock::now() + timeout;
    for (std::size_t i = 0; i < children.size(); ++i) {
      if (done[i]) continue;
      int status = 0;
      const pid_t r = ::waitpid(children[i].pid, &status, WNOHANG);
      if (r == children[i].pid) {
        done[i] = true;
        --remaining;
        out[i].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        if (WIFSIGNALED(status)) out[i].signal = WTERMSIG(status);
      }
    }
    if (remaining == 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      for (std::size_t i = 0; i < children.size(); ++i) {
        if (done[i]) continue;
        ::kill(children[i].pid, SIGKILL);
        ::waitpid(children[i].pid, nullptr, 0);
        out[i].timed_out = true;
        out[i].exit_code = -1;
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (std::size_t i = 0; i < children.size(); ++i) {
    out[i].output = read_file(children[i].log_path);
    // A rank killed by a signal prints nothing of its own: the outcome says which signal.
    if (out[i].signal != 0 && !out[i].timed_out) {
      out[i].output += "[worker_launcher: killed by signal " + std::to_string(out[i].signal) + "]\n";
    }
  }
  return out;
}

}  // namespace

std::string worker_path() {
#ifdef TRAINBENCH_WORKER_PATH
  return TRAINBENCH_WORKER_PATH;
#else
  const char* p = std::getenv("TRAINBENCH_WORKER");
  if (p == nullptr) throw std::runtime_error("TRAINBENCH_WORKER_PATH not compiled in, TRAINBENCH_WORKER unset");
  return p;
#endif
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    throw std::runtime_error("bind/getsockname failed");
  }
  const int port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

ProcessOutcome run_process(const std::vector<std::string>& argv,
                           const std::map<std::string, std::string>& env,
                           std::chrono::seconds timeout) {
  TempDir dir;
  std::vector<Child> children{spawn(argv, env, dir.file("process.log"))};
  return wait_all(children, timeout).front();
}

std::vector<ProcessOutcome> run_ranks(const RunConfig& run,
                                      const std::map<std::string, std::string>& extra_env,
                                      std::chrono::seconds timeout) {
  TempDir logs;
  const int port = free_port();
  std::vector<Child> children;
  try {
    for (const auto& placement : placements(run)) {
      auto env = rank_environment(run, placement, "127.0.0.1", port);
      for (const auto& [k, v] : extra_env) env[k] = v;
      children.push_back(spawn({worker_path()}, env,
                               logs.file("rank" + std::to_string(placement.rank) + ".log")));
    }
  } catch (...) {
    for (auto& c : children) {
      ::kill(c.pid, SIGKILL);
      ::waitpid(c.pid, nullptr, 0);
    }
    throw;
  }
  return wait_all(children, timeout);
}

std::vector<float> read_float32_file(const std::string& path) {
  const std::string bytes = read_file(path);
  if (bytes.size() % sizeof(float) != 0) throw std::runtime_error(path + ": size not a multiple of 4");
  std::vector<float> v(bytes.size() / sizeof(float));
  if (!v.empty()) std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

RunConfig tiny_mlp_run(const std::string& job, const std::string& paradigm, int world) {
  RunConfig c;
  c.job_name = job;
  c.paradigm = parse_paradigm(paradigm).value();
  c.devices_per_node = world;
  c.model = "mlp";
  c.mlp.input_size = 16;
  c.mlp.hidden_sizes = {32};
  c.mlp.num_classes = 4;
  c.batch_size_per_device = 8;
  c.warmup_steps = 1;
  c.measure_steps = 3;
  c.repeats = 2;
  c.collective_timeout_seconds = 30;
  return c;
}

}  // namespace trainbench::test
