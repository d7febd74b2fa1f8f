// PodRunner: starting one instance of a container, as a local process or in its image.

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "runtime/container_mounts.hpp"
#include "runtime/pod_runner.hpp"

namespace noderuntime {

namespace fs = std::filesystem;

/// HOSTNAME and the API server's address, as every kubelet sets them.
EnvList PodRunner::kubelet_env(const RunPtr& run, const json& pod) {
  const std::string host = host_.cluster().api_host();
  const std::string port = std::to_string(host_.cluster().api_port());
  return {{"HOSTNAME", pod["spec"].value("hostname", run->name)},
          {"KUBERNETES_SERVICE_HOST", host},
          {"KUBERNETES_SERVICE_PORT", port},
          {"KUBERNETES_SERVICE_PORT_HTTPS", port},
          {"KUBERNETES_PORT", "tcp://" + host + ":" + port}};
}

/// Spawns under the run's lock unless the pod is stopping (nullopt).
std::optional<SpawnResult> PodRunner::spawn_locked(const RunPtr& run, std::size_t idx,
                                                   const std::function<SpawnResult()>& spawn) {
  std::lock_guard<std::mutex> lock(run->mu);
  if (run->stopping) return std::nullopt;
  SpawnResult sp = spawn();
  if (sp.exec_errno == 0) {
    run->containers[idx].pid = sp.pid;
    run->containers[idx].running = true;
  }
  return sp;
}

/// Process mode: the node's passthrough env, the kubelet's, TRAINBENCH_SERVICEACCOUNT_DIR /
/// TRAINBENCH_TERMINATION_LOG, the shim, then the container's own; command + args on this machine.
std::optional<SpawnResult> PodRunner::start_process(const RunPtr& run, std::size_t idx, const json& pod,
                                                    const EnvList& env, const std::string& sa_dir) {
  const json& spec = run->containers[idx].spec;
  EnvList full;
  for (const auto& name : opts_.passthrough_env) {
    if (const char* v = std::getenv(name.c_str())) put_env(full, name, v);
  }
  for (const auto& kv : kubelet_env(run, pod)) put_env(full, kv.first, kv.second);
  put_env(full, "HOME", run->dir);
  if (!sa_dir.empty()) put_env(full, "TRAINBENCH_SERVICEACCOUNT_DIR", sa_dir);
  const std::string term_path = run->containers[idx].term_path;
  put_env(full, "TRAINBENCH_TERMINATION_LOG", term_path);
  if (!opts_.podnet_library.empty()) {
    put_env(full, "LD_PRELOAD", opts_.podnet_library);
    put_env(full, "TRAINBENCH_POD_IP", run->ip);
  }
  for (const auto& kv : env) put_env(full, kv.first, kv.second);
  std::map<std::string, std::string> vars(env.begin(), env.end());
  std::vector<std::string> argv;
  for (const char* f : {"command", "args"}) {
    for (const auto& a : spec.value(f, json::array())) argv.push_back(expand_vars(a.get<std::string>(), vars));
  }
  std::string cwd = spec.value("workingDir", "");
  if (cwd.empty() || !fs::is_directory(cwd)) cwd = run->dir;
  std::remove(term_path.c_str());
  if (spec.value("command", json::array()).empty()) {
    SpawnResult sp;
    sp.exec_errno = ENOENT;
    sp.error = "process mode runs no images: container \"" + spec.value("name", "") + "\" has no command";
    return sp;
  }
  return spawn_locked(run, idx, [&] { return spawn_process(argv, full, cwd, run->containers[idx].log_path); });
}

/// Image mode: the container runs in its image's root filesystem (image_runtime.hpp).
/// Throws ContainerConfigError.
std::optional<SpawnResult> PodRunner::start_in_image(const RunPtr& run, std::size_t idx, const json& pod,
                                                     const EnvList& env, const std::string& sa_dir,
                                                     const ImageConfig& image) {
  const ContainerRun& c = run->containers[idx];
  EnvList kenv = kubelet_env(run, pod);
  for (const auto& name : opts_.passthrough_env) {
    const char* v = std::getenv(name.c_str());
    if (v && ends_with(name, "SAN_OPTIONS")) put_env(kenv, name, v);
  }
  if (!opts_.podnet_library.empty()) {
    put_env(kenv, "LD_PRELOAD", kPodnetTarget);
    put_env(kenv, "TRAINBENCH_POD_IP", run->ip);
  }
  ContainerLaunch launch = opts_.images->prepare(host_.cluster(), image,
                                                 {pod, c.spec, kenv, env, run->dir, run->ip, sa_dir, c.term_path,
                                                  c.log_path, opts_.podnet_library});
  return spawn_locked(run, idx, [&] { return start_container(launch); });
}

}  // namespace noderuntime
