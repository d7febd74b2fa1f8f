#include "worker/topology_probe.hpp"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "worker/system_probe.hpp"

namespace trainbench::worker {
namespace {

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// N of a directory named "nodeN", -1 for any other name.
int node_id(const std::string& name) {
  if (name.size() < 5 || name.rfind("node", 0) != 0) return -1;
  if (name.find_first_not_of("0123456789", 4) != std::string::npos || name.size() > 9) return -1;
  return std::stoi(name.substr(4));
}

}  // namespace

HostTopology read_host_topology(const std::string& host, const std::string& node_root) {
  HostTopology h;
  h.host = host;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(node_root, ec), end; !ec && it != end; it.increment(ec)) {
    const int id = node_id(it->path().filename().string());
    if (id < 0) continue;
    const auto cpus = parse_cpu_list(read_text(it->path() / "cpulist"));
    if (!cpus) continue;
    NumaNode n{id, *cpus, node_meminfo_total_bytes(read_text(it->path() / "meminfo")).value_or(0)};
    h.numa_nodes.push_back(std::move(n));
  }
  std::sort(h.numa_nodes.begin(), h.numa_nodes.end(), [](const NumaNode& a, const NumaNode& b) { return a.id < b.id; });
  return h;
}

std::vector<int> affinity_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

std::string topology_host_name() {
  const char* node = std::getenv("NODE_NAME");  // NOLINT(concurrency-mt-unsafe): read once, nothing sets it
  return node != nullptr && *node != '\0' ? std::string(node) : host_name();
}

nlohmann::json local_topology(int rank, int gpu) {
  const HostTopology host = read_host_topology(topology_host_name());
  RankLocation me;
  me.rank = rank;
  me.host = host.host;
  me.cpus = affinity_cpus();
  me.numa_nodes = numa_nodes_of(me.cpus, host.numa_nodes);
  me.gpu = gpu;
  return {{"rank", to_json(me)}, {"host", to_json(host)}};
}

Topology topology_of_readings(const std::vector<std::string>& readings) {
  std::vector<std::pair<RankLocation, HostTopology>> reports;
  for (std::size_t i = 0; i < readings.size(); ++i) {
    const std::string p = "topology reading " + std::to_string(i);
    const nlohmann::json j = nlohmann::json::parse(readings[i], nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw std::runtime_error(p + ": not a JSON object");
    reports.emplace_back(rank_location_from_json(j.value("rank", nlohmann::json()), p + ".rank"),
                         host_topology_from_json(j.value("host", nlohmann::json()), p + ".host"));
  }
  return merge_topology(reports);
}

}  // namespace trainbench::worker
