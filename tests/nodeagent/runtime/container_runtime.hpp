#pragma once

// What runc does for the node agent's image containers (--images buildah): the process gets
// a private mount namespace (and its own UTS namespace with the pod's hostname); its root is an
// overlayfs (the image's shared read-only root filesystem below, a fresh writable layer of the
// container's own above, both under its state directory), with /proc, a read-only /sys, a
// minimal /dev (null zero full random urandom tty, /dev/shm), and the container's bind mounts;
// then pivot_root into it, read-only root when asked, supplementary groups, gid, uid,
// no_new_privs, the working directory (made when missing, as runc does), and exec with PATH
// searched in the container's own environment. The namespace, and every mount in it, goes
// away with the container's last process: nothing is mounted where the host sees it.

#include <string>
#include <vector>

#include "runtime/container_config.hpp"
#include "runtime/container_mounts.hpp"
#include "runtime/process.hpp"

namespace noderuntime {

struct ContainerLaunch {
  std::string lower;      ///< the image's root filesystem (never written)
  std::string state_dir;  ///< upper/, work/ (emptied on each start) and rootfs/ (the mountpoint)
  std::vector<Mount> mounts;
  std::string hostname;
  ProcessConfig process;
  std::string log_path;  ///< stdout and stderr, appended
};

/// One step of the container's setup, run in the new mount namespace before exec.
struct SetupStep {
  enum class Op { Mkdir, Touch, Mount, Pivot, Umount, Rmdir, Symlink };
  Op op;
  std::string path;    ///< the path acted on (the mount target)
  std::string source;  ///< mount source, pivot's old-root name, symlink's target
  std::string fstype;
  std::string data;
  unsigned long flags = 0;
};

/// The steps for `launch`, in order (exposed for unit tests).
std::vector<SetupStep> setup_plan(const ContainerLaunch& launch);

/// Starts the container's process (pid = its process group), as spawn_process does for the
/// process kubelet; a failed setup step or exec is reported in the result's error.
SpawnResult start_container(const ContainerLaunch& launch);

}  // namespace noderuntime
