#include "runtime/container_runtime.hpp"

#include <fcntl.h>
#include <grp.h>
#include <linux/close_range.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace noderuntime {

namespace fs = std::filesystem;

namespace {

using Op = SetupStep::Op;

constexpr const char* kOldRoot = "/.nodeagent-oldroot";

// Stages reported by the child before or after the setup steps (which report their index).
enum Stage : int {
  kLog = -1,
  kUnshare = -2,
  kPrivate = -3,
  kHostname = -4,
  kGroups = -5,
  kGid = -6,
  kUid = -7,
  kNoNewPrivs = -8,
  kChdir = -9,
  kExec = -10
};

std::size_t depth(const std::string& path) {
  return static_cast<std::size_t>(std::count(path.begin(), path.end(), '/'));
}

/// mkdir -p: one Mkdir step per component (an existing one, or a symlink to one, is fine).
void mkdirs(std::vector<SetupStep>& plan, const std::string& path) {
  for (std::size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos == path.size() || path[pos] == '/') plan.push_back({Op::Mkdir, path.substr(0, pos), "", "", "", 0});
  }
}

void mount_step(std::vector<SetupStep>& plan, const std::string& source, const std::string& target,
                const std::string& fstype, unsigned long flags, const std::string& data = "") {
  plan.push_back({Op::Mount, target, source, fstype, data, flags});
}

void plan_root(std::vector<SetupStep>& plan, const ContainerLaunch& l) {
  const std::string root = l.state_dir + "/rootfs";
  mount_step(plan, "overlay", root, "overlay", 0,
             "lowerdir=" + l.lower + ",upperdir=" + l.state_dir + "/upper,workdir=" + l.state_dir + "/work");
  plan.push_back({Op::Mkdir, root + kOldRoot, "", "", "", 0});
  plan.push_back({Op::Pivot, root, std::string(kOldRoot).substr(1), "", "", 0});  // put_old relative to the new root
}

void plan_system(std::vector<SetupStep>& plan) {
  mkdirs(plan, "/proc");
  mount_step(plan, "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC);
  mkdirs(plan, "/sys");
  mount_step(plan, "sysfs", "/sys", "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC);
  mkdirs(plan, "/dev");
  mount_step(plan, "tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_STRICTATIME, "mode=755,size=65536k");
  for (const char* dev : {"null", "zero", "full", "random", "urandom", "tty"}) {
    plan.push_back({Op::Touch, std::string("/dev/") + dev, "", "", "", 0});
    mount_step(plan, std::string(kOldRoot) + "/dev/" + dev, std::string("/dev/") + dev, "", MS_BIND);
  }
  plan.push_back({Op::Mkdir, "/dev/shm", "", "", "", 0});
  mount_step(plan, "shm", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=1777,size=65536k");
  for (const auto& [link, target] :
       std::vector<std::pair<std::string, std::string>>{{"/dev/fd", "/proc/self/fd"},
                                                        {"/dev/stdin", "/proc/self/fd/0"},
                                                        {"/dev/stdout", "/proc/self/fd/1"},
                                                        {"/dev/stderr", "/proc/self/fd/2"}}) {
    plan.push_back({Op::Symlink, link, target, "", "", 0});
  }
}

/// The container's bind mounts, parents before children; read-only ones remounted so.
void plan_binds(std::vector<SetupStep>& plan, std::vector<Mount> mounts) {
  std::stable_sort(mounts.begin(), mounts.end(),
                   [](const Mount& a, const Mount& b) { return depth(a.target) < depth(b.target); });
  for (const auto& m : mounts) {
    const std::string parent = fs::path(m.target).parent_path().string();
    if (parent != "/") mkdirs(plan, parent);
    plan.push_back({m.file ? Op::Touch : Op::Mkdir, m.target, "", "", "", 0});
    mount_step(plan, kOldRoot + m.source, m.target, "", MS_BIND | MS_REC);
    if (m.read_only) mount_step(plan, "", m.target, "", MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV);
  }
}

/// 0, or the errno of the step.
int run_step(const SetupStep& s) {
  int rc = 0;
  switch (s.op) {
    case Op::Mkdir:
      rc = mkdir(s.path.c_str(), 0755);
      return rc == 0 || errno == EEXIST ? 0 : errno;
    case Op::Touch: {
      int fd = open(s.path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
      if (fd < 0) return errno;
      close(fd);
      return 0;
    }
    case Op::Mount:
      rc = mount(s.source.empty() ? nullptr : s.source.c_str(), s.path.c_str(),
                 s.fstype.empty() ? nullptr : s.fstype.c_str(), s.flags, s.data.empty() ? nullptr : s.data.c_str());
      break;
    case Op::Pivot:
      rc = chdir(s.path.c_str()) || syscall(SYS_pivot_root, ".", s.source.c_str()) || chdir("/");
      break;
    case Op::Umount:
      rc = umount2(s.path.c_str(), MNT_DETACH);
      break;
    case Op::Rmdir:
      rc = rmdir(s.path.c_str());
      break;
    case Op::Symlink:
      rc = symlink(s.source.c_str(), s.path.c_str());
      return rc == 0 || errno == EEXIST ? 0 : errno;
  }
  return rc == 0 ? 0 : errno;
}

std::string describe(const SetupStep& s) {
  switch (s.op) {
    case Op::Mkdir:
      return "mkdir " + s.path;
    case Op::Touch:
      return "create mountpoint " + s.path;
    case Op::Mount:
      if (s.flags & MS_REMOUNT) return "remount " + s.path + " read-only";
      return "mount " + (s.fstype.empty() ? s.source : s.fstype) + " on " + s.path;
    case Op::Pivot:
      return "pivot_root into " + s.path;
    case Op::Umount:
      return "unmount " + s.path;
    case Op::Rmdir:
      return "rmdir " + s.path;
    case Op::Symlink:
      return "symlink " + s.path;
  }
  return "?";
}

/// The writable layer, its work directory and the mountpoint, fresh for every start; the
/// layer's root takes the image root's owner and mode (it is what the container sees as /).
void prepare_state(const ContainerLaunch& l) {
  for (const char* d : {"/upper", "/work"}) fs::remove_all(l.state_dir + d);
  for (const char* d : {"/upper", "/work", "/rootfs"}) fs::create_directories(l.state_dir + d);
  struct stat st {};
  if (stat(l.lower.c_str(), &st) == 0) {
    const std::string upper = l.state_dir + "/upper";
    if (chown(upper.c_str(), st.st_uid, st.st_gid) != 0 || chmod(upper.c_str(), st.st_mode & 07777) != 0) {
      throw std::runtime_error("cannot set owner and mode of " + upper + ": " + std::strerror(errno));
    }
  }
}

std::vector<std::string> exec_candidates(const ProcessConfig& p) {
  const std::string& cmd = p.argv.front();
  if (cmd.find('/') != std::string::npos) return {cmd};
  std::string path;
  for (const auto& kv : p.env) {
    if (kv.first == "PATH") path = kv.second;
  }
  std::vector<std::string> out;
  for (const auto& dir : split(path, ':')) out.push_back((dir.empty() ? "." : dir) + "/" + cmd);
  return out;
}

/// Everything the child needs, made before fork (the child only makes system calls).
struct ChildPlan {
  std::vector<SetupStep> steps;
  std::vector<std::string> env_strings;
  std::vector<std::string> candidates;
  std::vector<char*> argv, envp;
  std::vector<gid_t> groups;
};

ChildPlan child_plan(const ContainerLaunch& l) {
  ChildPlan c;
  c.steps = setup_plan(l);
  for (const auto& kv : l.process.env) c.env_strings.push_back(kv.first + "=" + kv.second);
  c.candidates = exec_candidates(l.process);
  for (const auto& a : l.process.argv) c.argv.push_back(const_cast<char*>(a.c_str()));
  c.argv.push_back(nullptr);
  for (const auto& e : c.env_strings) c.envp.push_back(const_cast<char*>(e.c_str()));
  c.envp.push_back(nullptr);
  c.groups.assign(l.process.user.groups.begin(), l.process.user.groups.end());
  return c;
}

void child_namespaces(const ContainerLaunch& l, const ChildPlan& c, int report_fd) {
  if (unshare(CLONE_NEWNS | CLONE_NEWUTS) != 0) child::fail(report_fd, kUnshare, errno);
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) child::fail(report_fd, kPrivate, errno);
  for (std::size_t i = 0; i < c.steps.size(); ++i) {
    if (int err = run_step(c.steps[i])) child::fail(report_fd, static_cast<int>(i), err);
  }
  if (sethostname(l.hostname.c_str(), l.hostname.size()) != 0) child::fail(report_fd, kHostname, errno);
}

void child_credentials(const ContainerLaunch& l, const ChildPlan& c, int report_fd) {
  if (setgroups(c.groups.size(), c.groups.data()) != 0) child::fail(report_fd, kGroups, errno);
  if (setresgid(l.process.user.gid, l.process.user.gid, l.process.user.gid) != 0) child::fail(report_fd, kGid, errno);
  if (setresuid(l.process.user.uid, l.process.user.uid, l.process.user.uid) != 0) child::fail(report_fd, kUid, errno);
  if (l.process.no_new_privs && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) child::fail(report_fd, kNoNewPrivs, errno);
  if (chdir(l.process.cwd.c_str()) != 0) child::fail(report_fd, kChdir, errno);
}

[[noreturn]] void child_exec(const ChildPlan& c, int report_fd) {
  child::close_on_exec_all();
  int err = ENOENT;
  bool denied = false;
  for (const auto& path : c.candidates) {
    execve(path.c_str(), c.argv.data(), c.envp.data());
    if (errno == EACCES)
      denied = true;
    else if (errno != ENOENT && errno != ENOTDIR) {
      err = errno;
      break;
    }
  }
  if (denied && err == ENOENT) err = EACCES;
  child::fail(report_fd, kExec, err);
}

std::string stage_error(const ContainerLaunch& l, const ChildPlan& c, int stage, int err) {
  const std::string why = std::strerror(err);
  if (stage >= 0 && static_cast<std::size_t>(stage) < c.steps.size()) {
    return "container setup: " + describe(c.steps[static_cast<std::size_t>(stage)]) + ": " + why;
  }
  const std::string& cmd = l.process.argv.front();
  switch (stage) {
    case kLog:
      return "cannot open log file " + l.log_path + ": " + why;
    case kUnshare:
      return "unshare (mount, UTS namespaces): " + why;
    case kPrivate:
      return "make / rprivate: " + why;
    case kHostname:
      return "sethostname: " + why;
    case kGroups:
    case kGid:
    case kUid:
      return "set user " + std::to_string(l.process.user.uid) + ":" + std::to_string(l.process.user.gid) + ": " + why;
    case kNoNewPrivs:
      return "set no_new_privs: " + why;
    case kChdir:
      return "chdir to cwd (\"" + l.process.cwd + "\") set in config.json failed: " + why;
    default:
      break;
  }
  if (err == ENOENT && cmd.find('/') == std::string::npos) {
    return "exec: \"" + cmd + "\": executable file not found in $PATH";
  }
  return "exec: \"" + cmd + "\": " + why;
}

}  // namespace

std::vector<SetupStep> setup_plan(const ContainerLaunch& launch) {
  std::vector<SetupStep> plan;
  plan_root(plan, launch);
  plan_system(plan);
  plan_binds(plan, launch.mounts);
  mkdirs(plan, launch.process.cwd);
  plan.push_back({Op::Umount, kOldRoot, "", "", "", 0});
  plan.push_back({Op::Rmdir, kOldRoot, "", "", "", 0});
  if (launch.process.read_only_root) mount_step(plan, "", "/", "", MS_BIND | MS_REMOUNT | MS_RDONLY);
  return plan;
}

SpawnResult start_container(const ContainerLaunch& launch) {
  prepare_state(launch);
  const ChildPlan plan = child_plan(launch);
  auto child_main = [&](int report_fd) {
    child::redirect_stdio(launch.log_path, report_fd, kLog);
    child_namespaces(launch, plan, report_fd);
    child_credentials(launch, plan, report_fd);
    child_exec(plan, report_fd);
  };
  return spawn_child(child_main, [&](int stage, int err) { return stage_error(launch, plan, stage, err); });
}

}  // namespace noderuntime
