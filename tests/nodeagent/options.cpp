#include "options.hpp"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include <unistd.h>

namespace nodeagent {

namespace {

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "trainbench-nodeagent: %s\n"
               "usage: trainbench-nodeagent (--controlplane DIR | --kubeconfig FILE --ca-cert FILE --ca-key FILE)\n"
               "         --node NAME --dir DIR [--dns-kubeconfig FILE]\n"
               "         [--label K=V]... [--taint K[=V]:EFFECT]... [--gpus N] [--cpus N] [--memory BYTES]\n"
               "         [--max-pods N] [--pod-api-server HOST:PORT] [--pods run|simulated]\n"
               "         [--net-block K] [--port PORT] [--max-grace SECONDS] [--dns-wait SECONDS]\n"
               "         [--lease-interval SECONDS] [--status-interval SECONDS] [--podnet-lib PATH]\n"
               "         [--images buildah [--image-storage-root DIR] [--image-run-root DIR]\n"
               "                           [--image-storage-driver NAME]]\n",
               why.c_str());
  std::exit(2);
}

void add_label(Options& o, const std::string& kv) {
  const auto eq = kv.find('=');
  if (eq == std::string::npos || eq == 0) usage("--label wants KEY=VALUE, got " + kv);
  o.labels[kv.substr(0, eq)] = kv.substr(eq + 1);
}

PodMode pod_mode(const std::string& v) {
  if (v == "run") return PodMode::kRun;
  if (v == "simulated") return PodMode::kSimulated;
  usage("--pods must be run or simulated, got " + v);
}

/// One flag with its value; false when `flag` is not one of these.
bool take(Options& o, std::string& images, noderuntime::ImageStoreOptions& store, const std::string& flag,
          const std::string& v) {
  if (flag == "--kubeconfig") o.kubeconfig = v;
  else if (flag == "--controlplane") o.controlplane = v;
  else if (flag == "--dns-kubeconfig") o.dns_kubeconfig = v;
  else if (flag == "--node") o.node = v;
  else if (flag == "--pod-api-server") o.pod_api_server = v;
  else if (flag == "--label") add_label(o, v);
  else if (flag == "--taint") o.taints.push_back(v);
  else if (flag == "--dir") o.dir = v;
  else if (flag == "--ca-cert") o.ca_cert = v;
  else if (flag == "--ca-key") o.ca_key = v;
  else if (flag == "--net-block") o.net_block = std::stoi(v);
  else if (flag == "--port") o.port = std::stoi(v);
  else if (flag == "--gpus") o.gpus = std::stoi(v);
  else if (flag == "--cpus") o.cpus = std::stoi(v);
  else if (flag == "--memory") o.memory = std::stoll(v);
  else if (flag == "--max-pods") o.max_pods = std::stoi(v);
  else if (flag == "--max-grace") o.max_grace_s = std::stod(v);
  else if (flag == "--dns-wait") o.dns_wait_s = std::stod(v);
  else if (flag == "--lease-interval") o.lease_interval_s = std::stod(v);
  else if (flag == "--status-interval") o.status_interval_s = std::stod(v);
  else if (flag == "--podnet-lib") o.podnet_library = v;
  else if (flag == "--images") images = v;
  else if (flag == "--pods") o.pods = pod_mode(v);
  else if (flag == "--image-storage-root") store.root = v;
  else if (flag == "--image-run-root") store.run_root = v;
  else if (flag == "--image-storage-driver") store.driver = v;
  else return false;
  return true;
}

void check(Options& o) {
  if (!o.controlplane.empty()) {
    if (o.ca_cert.empty()) o.ca_cert = o.controlplane + "/pki/ca.crt";
    if (o.ca_key.empty()) o.ca_key = o.controlplane + "/pki/ca.key";
  }
  if (o.kubeconfig.empty() && o.controlplane.empty()) usage("--kubeconfig or --controlplane is required");
  if (o.node.empty()) usage("--node is required");
  if (o.dir.empty()) usage("--dir is required");
  if (o.ca_cert.empty() || o.ca_key.empty()) usage("--ca-cert and --ca-key are required");
  if (o.net_block < 0 || o.net_block > 254) usage("--net-block must be 1..254 (0: the first free one)");
  if (o.port <= 0 || o.port > 65535) usage("--port must be 1..65535");
  if (!o.pod_api_server.empty() && o.pod_api_server.rfind(':') == std::string::npos)
    usage("--pod-api-server wants HOST:PORT, got " + o.pod_api_server);
  if (o.gpus < 0 || o.cpus < 0 || o.memory < 0 || o.max_pods <= 0) usage("capacities must not be negative");
  for (const auto& t : o.taints) {
    if (t.find(':') == std::string::npos) usage("--taint wants KEY[=VALUE]:EFFECT, got " + t);
  }
  if (o.lease_interval_s <= 0 || o.status_interval_s <= 0) usage("intervals must be positive");
}

}  // namespace

Options parse_options(int argc, char** argv) {
  Options o;
  std::string images;
  noderuntime::ImageStoreOptions store;
  store.owner = "trainbench-nodeagent";
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage("missing value for " + flag);
    const std::string value = argv[++i];
    try {
      if (!take(o, images, store, flag, value)) usage("unknown flag " + flag);
    } catch (const std::logic_error&) {  // std::stoi's invalid_argument and out_of_range
      usage("bad value for " + flag + ": " + value);
    }
  }
  check(o);
  if (images == "buildah") o.images = store;
  else if (!images.empty()) usage("--images must be buildah");
  if (o.images && ::geteuid() != 0) {
    std::fprintf(stderr,
                 "trainbench-nodeagent: --images buildah runs containers in their images' root filesystems (mount "
                 "namespaces, overlayfs, pivot_root, setuid): it must run as root\n");
    std::exit(1);
  }
  if (o.images && o.pods == PodMode::kSimulated) usage("--pods simulated runs no image: drop --images");
  return o;
}

}  // namespace nodeagent
