#include "runtime/container_config.hpp"

#include <algorithm>
#include <cctype>
#include <optional>

namespace noderuntime {

namespace {

constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

struct PasswdEntry {
  std::string name;
  unsigned uid = 0;
  unsigned gid = 0;
  std::string home;
};

struct GroupEntry {
  std::string name;
  unsigned gid = 0;
  std::vector<std::string> members;
};

std::optional<unsigned> numeric(const std::string& s) {
  if (s.empty() || s.size() > 10 || !std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); })) {
    return std::nullopt;
  }
  unsigned long long v = std::stoull(s);
  if (v > 0xffffffffULL) return std::nullopt;
  return static_cast<unsigned>(v);
}

/// The colon-separated lines of /etc/passwd or /etc/group with at least `fields` fields.
std::vector<std::vector<std::string>> records(const std::string& text, std::size_t fields) {
  std::vector<std::vector<std::string>> out;
  for (const auto& line : split(text, '\n')) {
    auto f = split(line, ':');
    if (f.size() >= fields && !f[0].empty() && f[0][0] != '#' && numeric(f[2])) out.push_back(f);
  }
  return out;
}

std::optional<PasswdEntry> find_user(const std::string& passwd, const std::string& name, std::optional<unsigned> uid) {
  for (const auto& f : records(passwd, 7)) {
    if (uid ? *numeric(f[2]) != *uid : f[0] != name) continue;
    return PasswdEntry{f[0], *numeric(f[2]), numeric(f[3]).value_or(0), f[5]};
  }
  return std::nullopt;
}

std::vector<GroupEntry> groups_of(const std::string& group) {
  std::vector<GroupEntry> out;
  for (const auto& f : records(group, 3)) {
    GroupEntry g{f[0], *numeric(f[2]), {}};
    if (f.size() > 3) g.members = split(f[3], ',');
    out.push_back(g);
  }
  return out;
}

std::optional<long long> int_field(const json& v) {
  if (v.is_number_integer()) return v.get<long long>();
  return std::nullopt;
}

/// kubelet's format.Pod: NAME_NAMESPACE(UID).
std::string pod_label(const json& pod) {
  const json& m = pod["metadata"];
  return m.value("name", "") + "_" + m.value("namespace", "") + "(" + m.value("uid", "") + ")";
}

bool has(const EnvList& env, const std::string& key) {
  return std::any_of(env.begin(), env.end(), [&](const auto& kv) { return kv.first == key; });
}

std::string file_or_empty(const std::string& path) {
  try {
    return read_file(path);
  } catch (const std::exception&) {
    return "";
  }
}

/// The image's USER group part, resolved (a name through /etc/group).
unsigned image_group(const std::string& spec, const std::string& group) {
  if (auto n = numeric(spec)) return *n;
  for (const auto& g : groups_of(group)) {
    if (g.name == spec) return g.gid;
  }
  throw ContainerConfigError("CreateContainerError",
                             "unable to find group " + spec + ": no matching entries in group file");
}

}  // namespace

json security_field(const json& pod, const json& container, const std::string& field) {
  const json* c = json_path(container, "securityContext." + field);
  if (c && !c->is_null()) return *c;
  const json* p = json_path(pod, "spec.securityContext." + field);
  return p ? *p : json();
}

std::vector<std::string> container_argv(const json& container, const ImageConfig& image,
                                        const std::map<std::string, std::string>& vars) {
  auto expanded = [&](const char* field) {
    std::vector<std::string> out;
    for (const auto& a : container.value(field, json::array())) out.push_back(expand_vars(a.get<std::string>(), vars));
    return out;
  };
  std::vector<std::string> command = expanded("command"), args = expanded("args");
  std::vector<std::string> argv = command.empty() ? image.entrypoint : command;
  const auto& rest = !args.empty() || !command.empty() ? args : image.cmd;
  argv.insert(argv.end(), rest.begin(), rest.end());
  return argv;
}

namespace {

/// uid, primary gid and home from runAsUser or the image's USER (before runAsGroup).
Identity base_identity(std::optional<long long> run_as_user, const std::string& image_user, const std::string& passwd,
                       const std::string& group, std::optional<PasswdEntry>& entry) {
  const auto colon = image_user.find(':');
  const std::string user_part = image_user.substr(0, colon);
  const std::string group_part = colon == std::string::npos ? "" : image_user.substr(colon + 1);
  Identity id;
  if (run_as_user || numeric(user_part) || user_part.empty()) {
    id.uid = run_as_user ? static_cast<unsigned>(*run_as_user) : numeric(user_part).value_or(0);
    entry = find_user(passwd, "", id.uid);
  } else {
    entry = find_user(passwd, user_part, std::nullopt);
    if (!entry) {
      throw ContainerConfigError("CreateContainerError",
                                 "unable to find user " + user_part + ": no matching entries in passwd file");
    }
    id.uid = entry->uid;
  }
  id.gid = entry ? entry->gid : 0;
  if (entry && !entry->home.empty()) id.home = entry->home;
  if (!run_as_user && !group_part.empty()) id.gid = image_group(group_part, group);
  return id;
}

/// Supplementary groups: the user's in the image's /etc/group, supplementalGroups, fsGroup.
std::vector<unsigned> supplementary_groups(const json& pod, const std::optional<PasswdEntry>& entry,
                                           const std::string& group) {
  std::vector<unsigned> out;
  if (entry) {
    for (const auto& g : groups_of(group)) {
      if (std::find(g.members.begin(), g.members.end(), entry->name) != g.members.end()) out.push_back(g.gid);
    }
  }
  const json* listed = json_path(pod, "spec.securityContext.supplementalGroups");
  if (listed && listed->is_array()) {
    for (const auto& g : *listed) {
      if (g.is_number_integer()) out.push_back(g.get<unsigned>());
    }
  }
  const json* fs_group = json_path(pod, "spec.securityContext.fsGroup");
  if (fs_group && fs_group->is_number_integer()) out.push_back(fs_group->get<unsigned>());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

Identity resolve_identity(const json& pod, const json& container, const std::string& image_user,
                          const std::string& passwd, const std::string& group) {
  std::optional<PasswdEntry> entry;
  Identity id = base_identity(int_field(security_field(pod, container, "runAsUser")), image_user, passwd, group, entry);
  if (auto g = int_field(security_field(pod, container, "runAsGroup"))) id.gid = static_cast<unsigned>(*g);
  id.groups = supplementary_groups(pod, entry, group);
  return id;
}

void verify_run_as_non_root(const json& pod, const json& container, const std::string& image_user) {
  const json non_root = security_field(pod, container, "runAsNonRoot");
  if (!non_root.is_boolean() || !non_root.get<bool>()) return;
  const std::string where =
      " (pod: " + json(pod_label(pod)).dump() + ", container: " + container.value("name", "") + ")";
  if (auto uid = int_field(security_field(pod, container, "runAsUser"))) {
    if (*uid == 0)
      throw ContainerConfigError("CreateContainerConfigError", "container's runAsUser breaks non-root policy" + where);
    return;
  }
  const std::string user = image_user.substr(0, image_user.find(':'));
  const auto uid = user.empty() ? std::optional<unsigned>(0) : numeric(user);
  if (uid && *uid == 0) {
    throw ContainerConfigError("CreateContainerConfigError",
                               "container has runAsNonRoot and image will run as root" + where);
  }
  if (!uid) {
    throw ContainerConfigError("CreateContainerConfigError",
                               "container has runAsNonRoot and image has non-numeric user (" + user +
                                   "), cannot verify user is non-root" + where);
  }
}

ProcessConfig process_config(const ProcessInputs& in) {
  verify_run_as_non_root(in.pod, in.container, in.image.user);
  ProcessConfig pc;
  pc.user = resolve_identity(in.pod, in.container, in.image.user, file_or_empty(in.rootfs + "/etc/passwd"),
                             file_or_empty(in.rootfs + "/etc/group"));
  for (const auto* list : {&in.image.env, &in.kubelet_env, &in.pod_env}) {
    for (const auto& kv : *list) put_env(pc.env, kv.first, kv.second);
  }
  if (!has(pc.env, "PATH")) put_env(pc.env, "PATH", kDefaultPath);
  if (!has(pc.env, "HOME")) put_env(pc.env, "HOME", pc.user.home);
  pc.argv =
      container_argv(in.container, in.image, std::map<std::string, std::string>(in.pod_env.begin(), in.pod_env.end()));
  if (pc.argv.empty()) throw ContainerConfigError("CreateContainerError", "no command specified");
  pc.cwd = in.container.value("workingDir", "");
  if (pc.cwd.empty()) pc.cwd = in.image.working_dir;
  if (pc.cwd.empty()) pc.cwd = "/";
  pc.no_new_privs = security_field(in.pod, in.container, "allowPrivilegeEscalation") == json(false);
  pc.read_only_root = security_field(in.pod, in.container, "readOnlyRootFilesystem") == json(true);
  return pc;
}

}  // namespace noderuntime
