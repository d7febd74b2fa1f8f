#include "cli/local_executor.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/interrupt.hpp"
#include "cli/program_launch.hpp"
#include "core/analysis/hang.hpp"
#include "core/results/run_result.hpp"
#include "core/util/atomic_file.hpp"
#include "core/util/failure_text.hpp"

extern char** environ;

namespace trainbench {
namespace fs = std::filesystem;

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string signal_name(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

/// "1M/2G" -> "1M-2G", "no ddp" -> "no-ddp": safe in a directory name.
std::string sanitize(const std::string& s) {
  std::string out;
  for (char c : s) {
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_') ? c : '-';
  }
  return out;
}

/// base/run-I-LABEL, or, when that exists (a failed run keeps its logs there), that name with a
/// unique suffix: any number of kept runs never stops a new one.
std::string make_run_dir(const std::string& base, const RunConfig& run) {
  const std::string stem = base + "/run-" + std::to_string(run.index) + "-" + sanitize(run.label());
  if (::mkdir(stem.c_str(), 0755) == 0) return stem;
  if (errno != EEXIST) throw std::runtime_error("cannot create run directory " + stem + ": " + std::strerror(errno));
  std::string unique = stem + ".XXXXXX";
  if (::mkdtemp(unique.data()) == nullptr) {
    throw std::runtime_error("cannot create run directory " + unique + ": " + std::strerror(errno));
  }
  return unique;
}

/// The parent's environment with `overrides` replacing or adding variables.
std::vector<std::string> child_environment(const std::map<std::string, std::string>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    const auto eq = kv.find('=');
    const std::string key = kv.substr(0, eq);
    if (overrides.count(key)) continue;
    env.push_back(std::move(kv));
  }
  for (const auto& [k, v] : overrides) env.push_back(k + "=" + v);
  return env;
}

std::string read_file(const std::string& path, std::size_t max_tail = 0) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  if (max_tail > 0) {
    in.seekg(0, std::ios::end);
    const auto size = static_cast<std::size_t>(in.tellg());
    in.seekg(static_cast<std::streamoff>(size > max_tail ? size - max_tail : 0));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> nonempty_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    // Progress bars and the like: keep what follows the last carriage return.
    const auto cr = line.find_last_of('\r', line.size() >= 1 ? line.size() - 1 : 0);
    if (cr != std::string::npos && cr + 1 < line.size()) line = line.substr(cr + 1);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

std::string truncate(std::string s, std::size_t max) {
  if (s.size() > max) s = s.substr(0, max - 3) + "...";
  return s;
}

struct Child {
  int rank = 0;
  std::string who;      ///< "" or, when a run has parameter servers, " (trainer 1)" / " (parameter-server 0)"
  pid_t pid = -1;
  std::string log;
  int pidfd = -1;       ///< readable when the process exits (Linux >= 5.3), -1 if unavailable
  bool exited = false;  ///< observed with WNOWAIT: still a zombie until reaped at the end
  bool reaped = false;
  int code = 0;         ///< CLD_EXITED / CLD_KILLED / CLD_DUMPED
  int status = 0;       ///< exit status or signal
  bool failed() const { return exited && !(code == CLD_EXITED && status == 0); }
};

std::string describe_exit(const Child& c) {
  const std::string rank = "rank " + std::to_string(c.rank) + c.who;
  if (c.code == CLD_EXITED) return rank + " exited with code " + std::to_string(c.status);
  return rank + " was killed by " + signal_name(c.status) + (c.code == CLD_DUMPED ? " (core dumped)" : "");
}

/// " (trainer T)" / " (parameter-server J)" for the ranks of a run with parameter servers.
std::string rank_role(const RunConfig& run, const RankPlacement& p) {
  if (run.parameter_servers == 0) return {};
  const bool server = p.role == Role::kParameterServer;
  return " (" + to_string(p.role) + " " + std::to_string(server ? p.rank - run.world_size() : p.rank) + ")";
}

/// Checks (without reaping) whether a child has exited; updates it.
void poll_exit(Child& c) {
  if (c.exited) return;
  siginfo_t si;
  std::memset(&si, 0, sizeof si);
  int r;
  do {
    r = ::waitid(P_PID, static_cast<id_t>(c.pid), &si, WEXITED | WNOHANG | WNOWAIT);
  } while (r < 0 && errno == EINTR);
  if (r < 0) {  // ECHILD: someone else reaped it; treat as gone
    c.exited = c.reaped = true;
    c.code = CLD_EXITED;
    c.status = 255;
    return;
  }
  if (si.si_pid == 0) return;
  c.exited = true;
  c.code = si.si_code;
  c.status = si.si_status;
}

void signal_all(std::vector<Child>& children, pid_t pgid, int sig) {
  if (pgid > 0) ::kill(-pgid, sig);
  for (auto& c : children) {
    if (!c.exited) ::kill(c.pid, sig);
  }
}

/// SIGTERM, up to `grace` seconds, then SIGKILL to the whole process group; every child
/// (zombies included) is reaped when this returns. A second interrupt skips the grace period.
void stop_and_reap(std::vector<Child>& children, pid_t pgid, double grace) {
  const bool any_running = std::any_of(children.begin(), children.end(), [](const Child& c) { return !c.exited; });
  if (any_running) {
    signal_all(children, pgid, SIGTERM);
    const int interrupts = interrupt_count();
    const double deadline = now_s() + grace;
    while (now_s() < deadline && interrupt_count() == interrupts) {
      bool running = false;
      for (auto& c : children) {
        poll_exit(c);
        running = running || !c.exited;
      }
      if (!running) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  // The group leader is still at least a zombie, so the process group id cannot have been
  // reused: this reaches every remaining member, grandchildren included.
  signal_all(children, pgid, SIGKILL);
  for (auto& c : children) {
    if (c.reaped) continue;
    int st = 0;
    pid_t r;
    do {
      r = ::waitpid(c.pid, &st, 0);
    } while (r < 0 && errno == EINTR);
    c.reaped = true;
    if (!c.exited) {
      c.exited = true;
      if (WIFEXITED(st)) {
        c.code = CLD_EXITED;
        c.status = WEXITSTATUS(st);
      } else if (WIFSIGNALED(st)) {
        c.code = CLD_KILLED;
        c.status = WTERMSIG(st);
      }
    }
  }
}

/// The most useful line of a failed rank's log: its "trainbench-worker rank R: ..." message if
/// there is one, else (unless it died by a signal) its last line that is not library noise.
std::string error_line(const Child& c, const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  if (std::string worker = read_failure_text(text).error_line; !worker.empty()) return worker;
  if (c.code != CLD_EXITED) return {};
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    if (!is_library_noise(*it)) return *it;  // not glog's notice or a libtorch warning
  }
  return {};
}

std::string tail(const std::vector<std::string>& lines, std::size_t n) {
  std::string out;
  for (std::size_t i = lines.size() > n ? lines.size() - n : 0; i < lines.size(); ++i) out += lines[i] + "\n";
  return out;
}

/// Everything the children need, prepared before fork (the child only calls
/// async-signal-safe functions).
struct Prepared {
  std::vector<std::string> env;
  std::vector<char*> envp;
  int log_fd = -1;
};

void write_all(int fd, const char* s) {
  std::size_t n = std::strlen(s);
  while (n > 0) {
    ssize_t w = ::write(fd, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<std::size_t>(w);
  }
}

/// What a rank process executes: trainbench-worker, or a program workload's command.
struct Executable {
  std::string path;
  std::vector<std::string> args;  ///< argv, argv[0] first
  std::string working_dir;        ///< "": the CLI's
  std::vector<char*> argv;        ///< pointers into args, null-terminated (made by finish())
  void finish() {
    argv.clear();
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
  }
};

[[noreturn]] void child_main(const Executable& exe, char* const envp[], int log_fd, pid_t parent, pid_t pgid,
                             const char* exec_error) {
  ::setpgid(0, pgid);  // pgid 0: become the group's leader
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(125);  // the CLI died before prctl took effect
  // Signal dispositions and the mask are inherited: start the worker with defaults.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) ::sigaction(sig, &dfl, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull >= 0) {
    ::dup2(devnull, 0);
    if (devnull != 0) ::close(devnull);
  }
  ::dup2(log_fd, 1);
  ::dup2(log_fd, 2);
  if (!exe.working_dir.empty() && ::chdir(exe.working_dir.c_str()) != 0) {
    write_all(2, "trainbench: cannot enter the program's workingDir ");
    write_all(2, exe.working_dir.c_str());
    write_all(2, "\n");
    ::_exit(127);
  }
  ::execve(exe.path.c_str(), exe.argv.data(), envp);
  write_all(2, exec_error);
  write_all(2, ::strerrordesc_np(errno) ? ::strerrordesc_np(errno) : "unknown error");
  write_all(2, "\n");
  ::_exit(127);
}

/// The children of a run and everything their start needs (prepared[i] belongs to children[i]).
struct RankProcesses {
  std::vector<Child> children;
  std::vector<Prepared> prepared;
  pid_t pgid = 0;  ///< the run's process group: the first child's pid, 0 before it exists
};

/// Environment, log file and identity of every rank to start; throws std::runtime_error (the
/// log files opened so far are closed, nothing has been started).
void prepare_ranks(const RunConfig& run, const LocalExecutorOptions& opts, const std::string& run_dir, int port,
                   RankProcesses& procs) {
  try {
    for (const RankLaunch& launch : rank_launches(run, opts, port, run_dir)) {
      Prepared p;
      p.env = child_environment(launch.env);
      for (auto& s : p.env) p.envp.push_back(s.data());
      p.envp.push_back(nullptr);
      Child c;
      c.rank = launch.placement.rank;
      c.who = rank_role(run, launch.placement);
      c.log = run_dir + "/rank-" + std::to_string(launch.placement.rank) + ".log";
      // O_APPEND: cap_log may empty the file under the running rank (program_launch.hpp).
      p.log_fd = ::open(c.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
      if (p.log_fd < 0) throw std::runtime_error("cannot create " + c.log + ": " + std::strerror(errno));
      procs.prepared.push_back(std::move(p));
      procs.children.push_back(c);
    }
  } catch (const std::exception&) {
    for (auto& p : procs.prepared) ::close(p.log_fd);
    procs.prepared.clear();
    procs.children.clear();
    throw;
  }
}

/// Forks every prepared rank into one process group (the first child leads it); stops early at
/// an interrupt or a failed fork. Closes the log files; `children` keeps only the started ranks.
/// Returns the fork error, "" if none.
std::string spawn_ranks(const Executable& exe, RankProcesses& procs) {
  const std::string exec_error = "trainbench: cannot execute " + exe.path + ": ";
  const pid_t self = ::getpid();
  std::string spawn_error;
  std::size_t spawned = 0;
  auto& children = procs.children;
  for (std::size_t i = 0; i < children.size(); ++i) {
    if (interrupt_signal() != 0) break;
    const pid_t pid = ::fork();
    if (pid < 0) {
      spawn_error =
          std::string("cannot start rank ") + std::to_string(children[i].rank) + ": fork: " + std::strerror(errno);
      break;
    }
    if (pid == 0) {
      child_main(exe, procs.prepared[i].envp.data(), procs.prepared[i].log_fd, self, procs.pgid, exec_error.c_str());
    }
    // Also from the parent, so the group exists before the next fork whatever the scheduling.
    ::setpgid(pid, procs.pgid == 0 ? pid : procs.pgid);
    if (procs.pgid == 0) procs.pgid = pid;
    children[i].pid = pid;
#ifdef SYS_pidfd_open
    children[i].pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));  // close-on-exec
#endif
    ++spawned;
  }
  for (auto& p : procs.prepared) ::close(p.log_fd);
  children.resize(spawned);
  return spawn_error;
}

/// trainbench-worker, or the run's program (its executable resolved before any fork).
Executable rank_executable(const RunConfig& run, const LocalExecutorOptions& opts) {
  Executable exe;
  if (run.program) {
    exe.path = resolve_program_executable(*run.program);
    exe.args = program_argv(*run.program);
    exe.working_dir = run.program->working_dir;
  } else {
    exe.path = opts.worker;
    exe.args = {"trainbench-worker"};
  }
  return exe;
}

/// The rank a "rank R ..." error names (-1: none).
int failed_rank_of(const std::string& error) {
  int rank = -1;
  if (std::sscanf(error.c_str(), "rank %d", &rank) != 1) return -1;
  return rank;
}

void close_pidfds(std::vector<Child>& children) {
  for (auto& c : children) {
    if (c.pidfd >= 0) ::close(c.pidfd);
    c.pidfd = -1;
  }
}

/// Calls on_progress when rank 0's progress file changed since `last` (inode, mtime or size).
void report_progress(const std::string& progress_file, struct stat& last,
                     const std::function<void(const ProgressUpdate&)>& on_progress) {
  struct stat st {};
  if (::stat(progress_file.c_str(), &st) == 0 &&
      (st.st_ino != last.st_ino || st.st_mtim.tv_sec != last.st_mtim.tv_sec ||
       st.st_mtim.tv_nsec != last.st_mtim.tv_nsec || st.st_size != last.st_size)) {
    last = st;
    if (auto p = parse_progress(read_file(progress_file))) on_progress(*p);
  }
}

/// Sleeps until a rank exits (its pidfd becomes readable, so the first rank to die is seen
/// first, before its peers react to it), the poll interval passes, or a signal arrives
/// (SIGINT/SIGTERM handlers have no SA_RESTART, so both calls return early).
void wait_for_exit_or_tick(const std::vector<Child>& children, int poll_ms) {
  std::vector<pollfd> fds;
  bool all_pidfds = true;
  for (const auto& c : children) {
    if (c.exited) continue;
    if (c.pidfd < 0) {
      all_pidfds = false;
    } else {
      fds.push_back({c.pidfd, POLLIN, 0});
    }
  }
  if (all_pidfds && !fds.empty()) {
    ::poll(fds.data(), fds.size(), poll_ms);
  } else {
    const timespec ts = {0, static_cast<long>(std::min(poll_ms, 999)) * 1000000L};
    ::nanosleep(&ts, nullptr);
  }
}

/// Why monitoring stopped (an interrupt is read from interrupt_signal()).
struct MonitorOutcome {
  std::vector<std::size_t> failed;  ///< indexes of children that failed in the first failing poll
  bool deadline_hit = false;
  std::optional<HangVerdict> hang;
};

std::string rank_progress_file(const std::string& run_dir, int rank) {
  return run_dir + "/rank-" + std::to_string(rank) + ".progress.json";
}

/// The run's hang watch: every rank's progress record, read about once a second.
class HangWatch {
 public:
  HangWatch(const RunConfig& run, const LocalExecutorOptions& opts, std::string run_dir)
      : run_(run), run_dir_(std::move(run_dir)), on_(run.hang_timeout_seconds > 0 && opts.node_rank < 0) {}

  std::optional<HangVerdict> check() {
    if (!on_ || now_s() < next_) return std::nullopt;
    next_ = now_s() + 1.0;
    std::vector<RankProgressRecord> records;
    std::vector<int> silent;
    for (int r = 0; r < run_.process_count(); ++r) {
      const std::string text = read_file(rank_progress_file(run_dir_, r));
      if (text.empty()) {  // not published yet
        silent.push_back(r);
        continue;
      }
      try {
        records.push_back(rank_progress_from_json(nlohmann::json::parse(text)));
      } catch (const std::exception&) {  // a record being replaced is renamed over, never torn: skip a bad one
      }
    }
    const double wall = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    auto verdict =
        detect_hang(records, wall, run_.hang_timeout_seconds, HangRun{run_.process_count(), run_.world_size()});
    // A program's probe publishes as soon as it exists: a rank silent past the timeout never
    // started it (the built-in worker is watched by its own records only).
    if (!verdict && run_.program) verdict = detect_silent_ranks(silent, now_s() - start_, run_.hang_timeout_seconds);
    return verdict;
  }

 private:
  const RunConfig& run_;
  std::string run_dir_;
  bool on_;
  double start_ = now_s();
  double next_ = 0;
};

/// Keeps every rank's log under opts.max_log_bytes (plus what a rank writes in one poll
/// interval), looking at each poll and once more when the ranks are gone.
void cap_logs(const std::vector<Child>& children, long long max_bytes) {
  if (max_bytes <= 0) return;
  for (const auto& c : children) cap_log(c.log, max_bytes);
}

/// Watches the ranks until one fails, all have exited, the deadline passes, the run hangs or an
/// interrupt arrives; reports rank 0's progress meanwhile. Reaps nothing.
MonitorOutcome monitor_ranks(std::vector<Child>& children, const LocalExecutorOptions& opts, double start,
                             const std::string& progress_file, HangWatch& hang_watch) {
  const double deadline = opts.active_deadline_seconds > 0 ? start + opts.active_deadline_seconds : 0;
  struct stat last_progress {};
  MonitorOutcome m;
  for (;;) {
    if (interrupt_signal() != 0) break;
    bool running = false;
    for (std::size_t i = 0; i < children.size(); ++i) {
      Child& c = children[i];
      if (c.exited) continue;
      poll_exit(c);
      if (c.failed()) m.failed.push_back(i);
      running = running || !c.exited;
    }
    if (!m.failed.empty() || !running) break;
    if (opts.on_progress) report_progress(progress_file, last_progress, opts.on_progress);
    if (deadline > 0 && now_s() >= deadline) {
      m.deadline_hit = true;
      break;
    }
    if ((m.hang = hang_watch.check())) break;
    cap_logs(children, opts.max_log_bytes);
    wait_for_exit_or_tick(children, opts.poll_ms);
  }
  return m;
}

/// Sets the run's error from the rank that most likely failed it and points at its log.
void describe_failure(const std::vector<Child>& children, const std::vector<std::size_t>& failed,
                      LocalRunOutcome& out) {
  // Several ranks seen dead in the same poll: the one killed by a signal, else the lowest
  // rank, is the likely cause (the others usually fail because their peer went away).
  auto cause = *std::min_element(failed.begin(), failed.end(), [&](std::size_t a, std::size_t b) {
    const bool sa = children[a].code != CLD_EXITED, sb = children[b].code != CLD_EXITED;
    if (sa != sb) return sa;
    return children[a].rank < children[b].rank;
  });
  const Child& c = children[cause];
  const auto lines = nonempty_lines(read_file(c.log, 64 * 1024));
  std::string error = describe_exit(c);
  if (const std::string line = error_line(c, lines); !line.empty()) error += ": " + truncate(line, 400);
  out.outcome.error = error;
  out.failed_rank = c.rank;
  out.failed_log = c.log;
  out.log_tail = tail(lines, 10);
}

/// Every rank exited 0: the result rank 0 must have written, checked against the run.
RunOutcome read_run_result(const RunConfig& run, const std::string& result_file) {
  RunOutcome o;
  const std::string text = read_file(result_file);
  if (text.empty()) {
    o.error = "all ranks exited 0 but rank 0 wrote no result to " + result_file;
    return o;
  }
  try {
    RunResult r = run_result_from_json(nlohmann::json::parse(text));
    if (r.world_size != run.world_size() || static_cast<int>(r.ranks.size()) != run.world_size()) {
      o.error = "invalid result " + result_file + ": expected " + std::to_string(run.world_size()) +
                " ranks, got worldSize " + std::to_string(r.world_size) + " with " + std::to_string(r.ranks.size()) +
                " rank entries";
    } else if (static_cast<int>(r.servers.size()) != run.parameter_servers) {
      o.error = "invalid result " + result_file + ": expected " + std::to_string(run.parameter_servers) +
                " parameter server entries, got " + std::to_string(r.servers.size());
    } else if (r.run_index != run.index) {
      o.error = "invalid result " + result_file + ": runIndex " + std::to_string(r.run_index) + ", expected " +
                std::to_string(run.index);
    } else {
      o.result = std::move(r);
    }
  } catch (const std::exception& e) {
    o.error = "invalid result " + result_file + ": " + e.what();
  }
  return o;
}

/// The run's outcome once every rank is reaped: the failure, interrupt or deadline that ended
/// it, or its result.
void settle_outcome(const RunConfig& run, const LocalExecutorOptions& opts, const std::vector<Child>& children,
                    const MonitorOutcome& m, const std::string& result_file, LocalRunOutcome& out) {
  if (!m.failed.empty()) {
    describe_failure(children, m.failed, out);
  } else if (m.hang) {
    out.hang = true;
    out.outcome.error = m.hang->message + "; all ranks were stopped";
    if (!m.hang->stuck.empty()) {
      const int rank = m.hang->stuck.front().rank;
      for (const Child& c : children) {
        if (c.rank != rank) continue;
        out.failed_rank = rank;
        out.failed_log = c.log;
        out.log_tail = tail(nonempty_lines(read_file(c.log, 64 * 1024)), 10);
      }
    }
  } else if (interrupt_signal() != 0) {
    out.interrupted_by = interrupt_signal();
    out.outcome.error = "interrupted by " + signal_name(out.interrupted_by) + "; all ranks were stopped";
  } else if (m.deadline_hit) {
    out.outcome.error = "run exceeded spec.runPolicy.activeDeadlineSeconds (" +
                        std::to_string(opts.active_deadline_seconds) + " s); all ranks were stopped";
  } else if (!opts.expect_result) {
    // Every rank exited 0 and the result goes elsewhere (node-launch: rank 0 hands it to the master).
  } else if (run.program) {
    out.outcome = read_program_result(run, fs::path(result_file).parent_path().string());
    // The run's result beside the ranks' records, as the built-in worker's rank 0 writes it.
    if (out.outcome.result) write_file_atomically(result_file, to_json(*out.outcome.result).dump(1) + "\n");
    if (!out.outcome.result) {
      out.failed_rank = failed_rank_of(out.outcome.error);
      for (const Child& c : children) {
        if (c.rank != out.failed_rank) continue;
        out.failed_log = c.log;
        out.log_tail = tail(nonempty_lines(read_file(c.log, 64 * 1024)), 10);
      }
    }
  } else {
    out.outcome = read_run_result(run, result_file);
  }
}

}  // namespace

std::string find_worker_binary() {
  if (const char* env = std::getenv("TRAINBENCH_WORKER"); env && *env) {
    std::string path = env;
    if (path[0] != '/') {
      std::error_code ec;
      path = fs::absolute(path, ec).lexically_normal().string();
    }
    if (!is_executable_file(path)) {
      throw std::runtime_error("TRAINBENCH_WORKER=" + std::string(env) + " is not an executable file");
    }
    return path;
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error("cannot find trainbench-worker: /proc/self/exe: " + ec.message());
  const fs::path dir = self.parent_path();
  const std::vector<fs::path> candidates = {
      dir / "trainbench-worker",
      dir.parent_path() / "worker" / "trainbench-worker",
      dir.parent_path() / "libexec" / "trainbench" / "trainbench-worker",
  };
  std::string looked;
  for (const auto& c : candidates) {
    const std::string p = c.lexically_normal().string();
    if (is_executable_file(p)) return p;
    looked += (looked.empty() ? "" : ", ") + p;
  }
  throw std::runtime_error("cannot find the trainbench-worker executable (looked for " + looked +
                           "); set TRAINBENCH_WORKER to its path");
}

int pick_free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const int err = errno;
    ::close(fd);
    throw std::runtime_error(std::string("cannot pick a free port on 127.0.0.1: ") + std::strerror(err));
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::vector<RankLaunch> rank_launches(const RunConfig& run, const LocalExecutorOptions& opts, int master_port,
                                      const std::string& run_dir) {
  std::vector<RankLaunch> launches;
  for (const auto& placement : placements(run)) {
    if (opts.node_rank >= 0 && placement.node_rank != opts.node_rank) continue;
    // node-launch starts one node's trainers; the operator runs each parameter server in a pod of its own.
    if (opts.node_rank >= 0 && placement.role != Role::kTrainer) continue;
    auto vars = rank_environment(run, placement, opts.master_addr, master_port);
    if (run.program) {
      for (const auto& v : run.program->env) vars.emplace(v.name, v.value);  // never over the rank's own
      vars["TRAINBENCH_RANK_RECORD_FILE"] = rank_record_file(run_dir, placement.rank);
    }
    vars["TRAINBENCH_RESULT_FILE"] = run_dir + "/result.json";
    vars["TRAINBENCH_PROGRESS_FILE"] = run_dir + "/progress.json";
    if (run.hang_timeout_seconds > 0 || run.program)
      vars["TRAINBENCH_RANK_PROGRESS_FILE"] = rank_progress_file(run_dir, placement.rank);
    launches.push_back({placement, std::move(vars)});
  }
  return launches;
}

LocalRunOutcome run_local(const RunConfig& run, const LocalExecutorOptions& opts) {
  LocalRunOutcome out;
  const double start = now_s();
  RankProcesses procs;

  auto fail_setup = [&](const std::string& error) {
    stop_and_reap(procs.children, procs.pgid, opts.grace_seconds);
    close_pidfds(procs.children);
    out.outcome.error = error;
    out.logs_kept = !out.run_dir.empty();
    out.elapsed_seconds = now_s() - start;
    return out;
  };

  Executable exe;
  try {
    out.run_dir = make_run_dir(opts.runs_dir, run);
    exe = rank_executable(run, opts);
    exe.finish();  // argv points into this object's strings
    const int port = opts.master_port > 0 ? opts.master_port : pick_free_port();
    prepare_ranks(run, opts, out.run_dir, port, procs);
  } catch (const std::exception& e) {
    return fail_setup(e.what());
  }
  if (const std::string spawn_error = spawn_ranks(exe, procs); !spawn_error.empty()) return fail_setup(spawn_error);

  HangWatch hang_watch(run, opts, out.run_dir);
  const MonitorOutcome m = monitor_ranks(procs.children, opts, start, out.run_dir + "/progress.json", hang_watch);
  stop_and_reap(procs.children, procs.pgid, opts.grace_seconds);
  close_pidfds(procs.children);
  cap_logs(procs.children, opts.max_log_bytes);
  out.elapsed_seconds = now_s() - start;
  settle_outcome(run, opts, procs.children, m, out.run_dir + "/result.json", out);

  const bool ok = out.outcome.result.has_value();
  if (ok && !opts.keep_logs) {
    std::error_code ec;
    fs::remove_all(out.run_dir, ec);
    out.logs_kept = false;
  } else {
    out.logs_kept = true;
  }
  return out;
}

}  // namespace trainbench
