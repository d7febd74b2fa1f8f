#include "runtime/image_store.hpp"

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "runtime/process.hpp"
#include "runtime/util.hpp"

namespace noderuntime {

namespace {

std::vector<std::string> strings(const json& v) {
  std::vector<std::string> out;
  if (v.is_array()) {
    for (const auto& s : v) {
      if (s.is_string()) out.push_back(s);
    }
  }
  return out;
}

ImageConfig parse_inspect(const std::string& ref, const json& j) {
  ImageConfig c;
  c.ref = ref;
  c.id = j.value("FromImageID", "");
  const json* config = json_path(j, "OCIv1.config");
  if (!config || !config->is_object()) return c;
  c.entrypoint = strings(config->value("Entrypoint", json()));
  c.cmd = strings(config->value("Cmd", json()));
  for (const auto& kv : strings(config->value("Env", json()))) {
    auto eq = kv.find('=');
    c.env.emplace_back(kv.substr(0, eq), eq == std::string::npos ? "" : kv.substr(eq + 1));
  }
  c.working_dir = config->value("WorkingDir", "");
  c.user = config->value("User", "");
  return c;
}

/// Whether the owner with this pid is running (a working container named after it is in use).
/// /proc/PID/comm holds at most 15 characters of the program's name.
bool owner_alive(const std::string& pid, const std::string& owner) {
  std::ifstream comm("/proc/" + pid + "/comm");
  std::string name;
  try {
    return comm && std::getline(comm, name) && name == owner.substr(0, 15);
  } catch (const std::ios_base::failure&) {  // the process ended while read (ESRCH): see process.cpp
    return false;
  }
}

}  // namespace

struct ImageStore::Rootfs {
  std::mutex mu;
  std::string container;
  std::string path;
};

ImageStore::ImageStore(ImageStoreOptions opts) : opts_(std::move(opts)) {}

ImageStore::~ImageStore() { close(); }

std::vector<std::string> ImageStore::base_argv() const {
  std::vector<std::string> argv = {opts_.buildah, "--storage-driver", opts_.driver};
  if (!opts_.root.empty()) argv.insert(argv.end(), {"--root", opts_.root});
  if (!opts_.run_root.empty()) argv.insert(argv.end(), {"--runroot", opts_.run_root});
  return argv;
}

std::string ImageStore::buildah_out(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = base_argv();
  argv.insert(argv.end(), args.begin(), args.end());
  CommandResult r = run_command(argv);
  if (r.code != 0) {
    std::string cmd;
    for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
    throw std::runtime_error(cmd + ": " + (r.code < 0 ? "cannot be run" : "exit " + std::to_string(r.code)) + ": " +
                             trim(r.err));
  }
  return r.out;
}

void ImageStore::check() {
  buildah_out({"version"});
  stale_cleaner_ = std::thread([this] {
    try {
      remove_stale_containers();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s\n", opts_.owner.c_str(), e.what());
    }
  });
}

void ImageStore::remove_stale_containers() {
  const std::string prefix = container_prefix();
  for (const auto& name : split(buildah_out({"containers", "--format", "{{.ContainerName}}"}), '\n')) {
    if (!starts_with(name, prefix)) continue;
    std::string pid = name.substr(prefix.size(), name.find('-', prefix.size()) - prefix.size());
    if (owner_alive(pid, opts_.owner)) continue;
    run_command([&] {
      auto argv = base_argv();
      argv.insert(argv.end(), {"rm", name});
      return argv;
    }());
  }
}

std::vector<std::string> ImageStore::candidates(const std::string& image) {
  std::string ref = image;
  const auto slash = ref.find('/');
  const auto last_slash = ref.rfind('/');
  const std::string last = last_slash == std::string::npos ? ref : ref.substr(last_slash + 1);
  if (ref.find('@') == std::string::npos && last.find(':') == std::string::npos) ref += ":latest";
  const std::string first = slash == std::string::npos ? "" : ref.substr(0, slash);
  const bool has_domain =
      first == "localhost" || first.find('.') != std::string::npos || first.find(':') != std::string::npos;
  if (has_domain) return {ref};
  return {"localhost/" + ref, ref};
}

ImageConfig ImageStore::inspect(const std::string& image) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = found_.find(image);
    if (it != found_.end()) return it->second;
  }
  const auto names = candidates(image);
  for (const auto& name : names) {
    std::vector<std::string> argv = base_argv();
    argv.insert(argv.end(), {"inspect", "--type", "image", name});
    CommandResult r = run_command(argv);
    if (r.code != 0) continue;
    json j = json::parse(r.out, nullptr, false);
    if (!j.is_object()) continue;
    ImageConfig config = parse_inspect(j.value("FromImage", name), j);
    std::lock_guard<std::mutex> lock(mu_);
    return found_[image] = config;
  }
  throw ImageNotFound(names.front() + ": image not known");
}

std::string ImageStore::rootfs(const ImageConfig& image) {
  std::shared_ptr<Rootfs> entry;
  std::string name;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& slot = rootfs_[image.id];
    if (!slot) slot = std::make_shared<Rootfs>();
    entry = slot;
    name = container_prefix() + std::to_string(getpid()) + "-" + std::to_string(next_++);
  }
  std::lock_guard<std::mutex> lock(entry->mu);
  if (!entry->path.empty()) return entry->path;
  entry->container = trim(buildah_out({"from", "--pull=never", "--name", name, image.id}));
  entry->path = trim(buildah_out({"mount", entry->container}));
  return entry->path;
}

void ImageStore::close() {
  if (stale_cleaner_.joinable()) stale_cleaner_.join();
  std::map<std::string, std::shared_ptr<Rootfs>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    all.swap(rootfs_);
  }
  for (const auto& kv : all) {
    std::lock_guard<std::mutex> lock(kv.second->mu);
    if (kv.second->container.empty()) continue;
    for (const char* verb : {"umount", "rm"}) {
      auto argv = base_argv();
      argv.insert(argv.end(), {verb, kv.second->container});
      run_command(argv);
    }
  }
}

}  // namespace noderuntime
