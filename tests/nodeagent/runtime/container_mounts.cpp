#include "runtime/container_mounts.hpp"

#include <filesystem>
#include <mutex>
#include <optional>

#include "runtime/container_config.hpp"

namespace noderuntime {

namespace fs = std::filesystem;

namespace {

ContainerConfigError mount_error(const std::string& volume, const std::string& why) {
  return ContainerConfigError("ContainerCreating",
                              "MountVolume.SetUp failed for volume " + json(volume).dump() + " : " + why);
}

json lookup(ClusterView& cluster, bool secret, const std::string& ns, const std::string& name) {
  std::optional<json> o = secret ? cluster.secret(ns, name) : cluster.config_map(ns, name);
  return o ? *o : json();
}

/// The ServiceAccount admission plugin's projected volume (token, ca.crt, namespace).
bool is_service_account_volume(const json& volume) {
  if (!volume.contains("projected")) return false;
  for (const auto& source : volume["projected"].value("sources", json::array())) {
    if (source.contains("serviceAccountToken")) return true;
  }
  return false;
}

/// The keys of a ConfigMap / Secret as files in `dir` (items: only those, at their paths).
void write_keys(const std::string& dir, const std::map<std::string, std::string>& data, const json& source) {
  const unsigned default_mode = source.value("defaultMode", 0644);
  const std::string tmp = dir + ".tmp";
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  auto write = [&](const std::string& path, const std::string& value, unsigned mode) {
    fs::create_directories(fs::path(tmp + "/" + path).parent_path());
    write_file_atomic(tmp + "/" + path, value, mode);
  };
  if (source.contains("items")) {
    for (const auto& item : source["items"]) {
      auto it = data.find(item.value("key", ""));
      if (it != data.end()) write(item.value("path", it->first), it->second, item.value("mode", default_mode));
    }
  } else {
    for (const auto& [k, v] : data) write(k, v, default_mode);
  }
  fs::rename(tmp, dir);
}

/// A configMap or secret volume's directory, written on the pod's first use.
std::string projected_dir(const MountContext& ctx, const json& volume, bool secret) {
  const std::string name = volume.value("name", "");
  const std::string dir = ctx.pod_dir + "/volumes/kubernetes.io~" + (secret ? "secret/" : "configmap/") + name;
  if (fs::exists(dir)) return dir;
  const json& source = volume[secret ? "secret" : "configMap"];
  const std::string object = source.value(secret ? "secretName" : "name", "");
  json obj = lookup(ctx.cluster, secret, ctx.pod["metadata"].value("namespace", ""), object);
  std::map<std::string, std::string> data;
  if (obj.is_null() && !source.value("optional", false)) {
    throw mount_error(name, std::string(secret ? "secret" : "configmap") + " " + json(object).dump() + " not found");
  }
  if (!obj.is_null()) {
    for (const auto& [k, v] : obj.value("data", json::object()).items())
      data[k] = secret ? base64_decode(v) : v.get<std::string>();
    for (const auto& [k, v] : obj.value("binaryData", json::object()).items()) data[k] = base64_decode(v);
  }
  fs::create_directories(fs::path(dir).parent_path());
  write_keys(dir, data, source);
  return dir;
}

/// The host directory (or file) behind a pod volume. One at a time: a pod's containers start
/// together and share its volumes.
std::string volume_source(const MountContext& ctx, const json& volume) {
  static std::mutex making;
  std::lock_guard<std::mutex> lock(making);
  const std::string name = volume.value("name", "");
  if (volume.contains("emptyDir")) {
    const std::string dir = ctx.pod_dir + "/volumes/kubernetes.io~empty-dir/" + name;
    if (!fs::exists(dir)) {
      fs::create_directories(dir);
      fs::permissions(dir, fs::perms::all);  // 0777, as the kubelet makes it
    }
    return dir;
  }
  if (volume.contains("configMap")) return projected_dir(ctx, volume, false);
  if (volume.contains("secret")) return projected_dir(ctx, volume, true);
  if (is_service_account_volume(volume) && !ctx.sa_dir.empty()) return ctx.sa_dir;
  if (volume.contains("hostPath")) {
    const std::string path = volume["hostPath"].value("path", "");
    if (volume["hostPath"].value("type", "") == "DirectoryOrCreate") fs::create_directories(path);
    if (!fs::exists(path)) throw mount_error(name, "hostPath type check failed: " + path + " does not exist");
    return path;
  }
  throw mount_error(name, "only emptyDir, configMap, secret, hostPath and the ServiceAccount's projected volumes are "
                          "mounted here");
}

std::vector<Mount> volume_mounts(const MountContext& ctx) {
  std::map<std::string, json> volumes;
  for (const auto& v : ctx.pod["spec"].value("volumes", json::array())) volumes[v.value("name", "")] = v;
  std::vector<Mount> out;
  for (const auto& vm : ctx.container.value("volumeMounts", json::array())) {
    const std::string name = vm.value("name", "");
    auto it = volumes.find(name);
    if (it == volumes.end()) throw mount_error(name, "no volume of that name in the pod");
    std::string source = volume_source(ctx, it->second);
    const std::string sub = vm.value("subPath", "");
    if (!sub.empty()) {
      source += "/" + sub;
      if (!fs::exists(source)) fs::create_directories(source);
    }
    out.push_back({source, vm.value("mountPath", ""), vm.value("readOnly", false), !fs::is_directory(source)});
  }
  return out;
}

std::string hostname_of(const json& pod) {
  std::string h = pod["spec"].value("hostname", pod["metadata"].value("name", ""));
  return h.substr(0, 63);
}

/// /etc/hosts, /etc/hostname, /etc/resolv.conf, as files of the pod.
std::vector<Mount> etc_mounts(const MountContext& ctx) {
  write_file_atomic(ctx.pod_dir + "/etc-hosts", pod_hosts_file(ctx.pod, ctx.pod_ip));
  write_file_atomic(ctx.pod_dir + "/etc-hostname", hostname_of(ctx.pod) + "\n");
  std::string resolv;
  try {
    resolv = read_file("/etc/resolv.conf");  // dnsPolicy Default: there is no cluster DNS
  } catch (const std::exception&) {
  }
  write_file_atomic(ctx.pod_dir + "/etc-resolv.conf", resolv);
  const bool ro = ctx.read_only_root;
  return {{ctx.pod_dir + "/etc-hosts", "/etc/hosts", ro, true},
          {ctx.pod_dir + "/etc-hostname", "/etc/hostname", ro, true},
          {ctx.pod_dir + "/etc-resolv.conf", "/etc/resolv.conf", ro, true}};
}

std::vector<Mount> kubelet_mounts(const MountContext& ctx) {
  std::vector<Mount> out = etc_mounts(ctx);
  if (!ctx.sa_dir.empty()) {
    for (const char* f : {"token", "ca.crt", "namespace"}) {
      fs::permissions(ctx.sa_dir + "/" + f, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                                                fs::perms::others_read);  // 0644, a projected volume's default
    }
    const std::string target = "/var/run/secrets/kubernetes.io/serviceaccount";
    bool mounted_by_pod = false;  // the admission plugin's volumeMount, when the API server added it
    for (const auto& vm : ctx.container.value("volumeMounts", json::array())) {
      mounted_by_pod = mounted_by_pod || vm.value("mountPath", "") == target;
    }
    if (!mounted_by_pod) out.push_back({ctx.sa_dir, target, true, false});
  }
  write_file_atomic(ctx.term_path, "", 0666);
  fs::permissions(ctx.term_path, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                                     fs::perms::group_write | fs::perms::others_read | fs::perms::others_write);
  out.push_back({ctx.term_path, ctx.container.value("terminationMessagePath", "/dev/termination-log"), false, true});
  if (!ctx.podnet_library.empty()) out.push_back({ctx.podnet_library, kPodnetTarget, true, true});
  return out;
}

}  // namespace

std::string pod_hosts_file(const json& pod, const std::string& pod_ip) {
  const std::string host = hostname_of(pod);
  const std::string sub = pod["spec"].value("subdomain", "");
  std::string names = host;
  if (!sub.empty()) {
    names = host + "." + sub + "." + pod["metadata"].value("namespace", "") + ".svc.cluster.local\t" + host;
  }
  return "# Kubernetes-managed hosts file.\n"
         "127.0.0.1\tlocalhost\n"
         "::1\tlocalhost ip6-localhost ip6-loopback\n"
         "fe00::0\tip6-localnet\n"
         "fe00::0\tip6-mcastprefix\n"
         "fe00::1\tip6-allnodes\n"
         "fe00::2\tip6-allrouters\n" +
         pod_ip + "\t" + names + "\n";
}

std::vector<Mount> container_mounts(const MountContext& ctx) {
  std::vector<Mount> out = kubelet_mounts(ctx);
  for (auto& m : volume_mounts(ctx)) out.push_back(std::move(m));
  return out;
}

}  // namespace noderuntime
