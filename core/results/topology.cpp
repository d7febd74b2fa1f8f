#include "core/results/topology.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <set>
#include <sstream>
#include <stdexcept>

#include "core/spec/json_fields.hpp"
#include "core/util/text_cells.hpp"

namespace trainbench {

namespace jf = json_fields;

namespace {

constexpr int kMaxCpu = 65535;

struct PathName {
  GpuPath path;
  const char* name;
};
constexpr std::array<PathName, 7> kPathNames{{{GpuPath::kSelf, "X"},
                                              {GpuPath::kNvLink, "NV"},
                                              {GpuPath::kPix, "PIX"},
                                              {GpuPath::kPxb, "PXB"},
                                              {GpuPath::kPhb, "PHB"},
                                              {GpuPath::kNode, "NODE"},
                                              {GpuPath::kSys, "SYS"}}};

/// A decimal 0..65535 (a CPU number, an NVLink count).
std::optional<int> parse_small_int(std::string_view s) {
  int v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < 0 || v > kMaxCpu) return std::nullopt;
  return v;
}

/// "a-b" or "a" into `out`; false when malformed.
bool add_cpu_range(std::string_view item, std::vector<int>& out) {
  const auto dash = item.find('-');
  const auto lo = parse_small_int(item.substr(0, dash));
  const auto hi = dash == std::string_view::npos ? lo : parse_small_int(item.substr(dash + 1));
  if (!lo || !hi || *hi < *lo) return false;
  for (int c = *lo; c <= *hi; ++c) out.push_back(c);
  return true;
}

std::string fmt_gib(std::int64_t bytes) {
  return printf_str("%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
}

std::string path_cell(const HostTopology& h, std::size_t i, std::size_t j) {
  const GpuPath p = h.paths[i][j];
  if (p != GpuPath::kNvLink) return to_string(p);
  const int links = i < h.nvlinks.size() && j < h.nvlinks[i].size() ? h.nvlinks[i][j] : 0;
  return std::string("NV") + std::to_string(links);
}

/// `nvidia-smi topo -m`'s matrix: a row per GPU, its path to each GPU, its CPU and NUMA affinity.
void gpu_matrix(std::ostringstream& os, const HostTopology& h) {
  constexpr std::size_t kCell = 7;
  os << "    " << pad_right("", kCell);
  for (const auto& g : h.gpus) os << pad_right("GPU" + std::to_string(g.index), kCell);
  os << pad_right("CPU Affinity", 16) << "NUMA Affinity\n";
  for (std::size_t i = 0; i < h.gpus.size(); ++i) {
    os << "    " << pad_right("GPU" + std::to_string(h.gpus[i].index), kCell);
    for (std::size_t j = 0; j < h.gpus.size(); ++j) os << pad_right(path_cell(h, i, j), kCell);
    const int numa = h.gpus[i].numa_node;
    os << pad_right(h.gpus[i].cpus.empty() ? "N/A" : format_cpu_list(h.gpus[i].cpus), 16)
       << (numa < 0 ? "N/A" : std::to_string(numa)) << "\n";
  }
  os << "    (X: itself, NV#: # NVLinks, PIX: one PCIe switch, PXB: several, PHB: a PCIe host bridge,\n"
        "     NODE: host bridges of one NUMA node, SYS: across NUMA nodes)\n";
}

void host_block(std::ostringstream& os, const HostTopology& h) {
  os << "  host " << h.host << ":";
  if (h.numa_nodes.empty()) os << " NUMA nodes unknown (no /sys/devices/system/node)";
  os << "\n";
  for (const auto& n : h.numa_nodes) {
    os << "    NUMA node " << n.id << ": CPUs " << format_cpu_list(n.cpus);
    if (n.memory_bytes > 0) os << ", " << fmt_gib(n.memory_bytes);
    os << "\n";
  }
  if (!h.gpus.empty() && h.paths.size() == h.gpus.size()) gpu_matrix(os, h);
}

std::string numa_words(const std::vector<int>& nodes) {
  if (nodes.empty()) return "";
  std::string s = nodes.size() == 1 ? " (NUMA node " : " (NUMA nodes ";
  for (std::size_t i = 0; i < nodes.size(); ++i) s += (i ? "," : "") + std::to_string(nodes[i]);
  return s + ")";
}

/// Each object of the array `key` read by `read` under its indexed path ("p.key[i]").
template <typename T, typename Read>
std::vector<T> objects_field(const nlohmann::json& j, const std::string& key, const std::string& p, Read read) {
  const auto& items = jf::get_array(j, key, p);
  std::vector<T> out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    out.push_back(read(items[i], p + "." + key + "[" + std::to_string(i) + "]"));
  }
  return out;
}

std::vector<int> cpu_list_field(const nlohmann::json& j, const std::string& key, const std::string& p) {
  const std::string text = jf::get_string(j, key, p);
  const auto cpus = parse_cpu_list(text);
  if (!cpus) throw std::runtime_error(p + "." + key + ": not a CPU list (\"0-3,8\"): \"" + text + "\"");
  return *cpus;
}

NumaNode numa_node_from_json(const nlohmann::json& j, const std::string& p) {
  jf::require_object(j, p);
  NumaNode n;
  n.id = jf::get_int32(j, "id", p);
  n.cpus = cpu_list_field(j, "cpus", p);
  if (jf::has(j, "memoryBytes")) n.memory_bytes = jf::get_int(j, "memoryBytes", p);
  return n;
}

GpuInfo gpu_info_from_json(const nlohmann::json& j, const std::string& p) {
  jf::require_object(j, p);
  GpuInfo g;
  g.index = jf::get_int32(j, "index", p);
  g.bus_id = jf::get_string(j, "busId", p);
  if (jf::has(j, "cpus")) g.cpus = cpu_list_field(j, "cpus", p);
  if (jf::has(j, "numaNode")) g.numa_node = jf::get_int32(j, "numaNode", p);
  return g;
}

/// The square GPU matrix of a host: paths by name ("NV4" is kNvLink with 4 links).
void gpu_matrix_from_json(const nlohmann::json& j, const std::string& p, HostTopology& h) {
  const auto& rows = jf::get_array(j, "paths", p);
  if (rows.size() != h.gpus.size()) {
    throw std::runtime_error(p + ".paths: one row per GPU, got " + std::to_string(rows.size()));
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::string rp = p + ".paths[" + std::to_string(i) + "]";
    if (!rows[i].is_array() || rows[i].size() != h.gpus.size()) throw std::runtime_error(rp + ": one entry per GPU");
    h.paths.emplace_back();
    h.nvlinks.emplace_back();
    for (const auto& cell : rows[i]) {
      const std::string text = cell.is_string() ? cell.get<std::string>() : "";
      const bool nv = text.rfind("NV", 0) == 0 && text.size() > 2;
      const auto links = nv ? parse_small_int(std::string_view(text).substr(2)) : std::optional<int>(0);
      const auto path = nv ? std::optional<GpuPath>(GpuPath::kNvLink) : parse_gpu_path(text);
      if (!path || !links) {
        throw std::runtime_error(rp + ": not a path (X, NV#, PIX, PXB, PHB, NODE, SYS): " + cell.dump());
      }
      h.paths.back().push_back(*path);
      h.nvlinks.back().push_back(*links);
    }
  }
}

}  // namespace

const char* to_string(GpuPath p) {
  for (const auto& n : kPathNames) {
    if (n.path == p) return n.name;
  }
  return "?";
}

std::optional<GpuPath> parse_gpu_path(std::string_view text) {
  for (const auto& n : kPathNames) {
    if (text == n.name && n.path != GpuPath::kNvLink) return n.path;
  }
  return std::nullopt;
}

std::optional<GpuPath> gpu_path_of_nvml_level(int level) {
  switch (level) {
    case 0: return GpuPath::kSelf;
    case 10: return GpuPath::kPix;
    case 20: return GpuPath::kPxb;
    case 30: return GpuPath::kPhb;
    case 40: return GpuPath::kNode;
    case 50: return GpuPath::kSys;
    default: return std::nullopt;
  }
}

std::optional<std::vector<int>> parse_cpu_list(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  std::vector<int> out;
  while (!text.empty()) {
    const auto comma = text.find(',');
    if (!add_cpu_range(text.substr(0, comma), out)) return std::nullopt;
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
    if (text.empty()) return std::nullopt;  // a trailing comma
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string format_cpu_list(std::vector<int> cpus) {
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

std::optional<std::int64_t> node_meminfo_total_bytes(std::string_view meminfo) {
  std::istringstream lines{std::string(meminfo)};
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream w(line);
    std::string node, id, key, unit;
    std::int64_t kb = -1;
    if (w >> node >> id >> key >> kb >> unit && node == "Node" && key == "MemTotal:" && unit == "kB" && kb >= 0) {
      return kb * 1024;
    }
  }
  return std::nullopt;
}

std::vector<int> numa_nodes_of(const std::vector<int>& cpus, const std::vector<NumaNode>& nodes) {
  const std::set<int> mine(cpus.begin(), cpus.end());
  std::vector<int> out;
  for (const auto& n : nodes) {
    if (std::any_of(n.cpus.begin(), n.cpus.end(), [&](int c) { return mine.count(c) > 0; })) out.push_back(n.id);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Topology merge_topology(const std::vector<std::pair<RankLocation, HostTopology>>& reports) {
  Topology t;
  for (const auto& report : reports) {
    t.ranks.push_back(report.first);
    const std::string& name = report.second.host;
    const bool known =
        std::any_of(t.hosts.begin(), t.hosts.end(), [&](const HostTopology& h) { return h.host == name; });
    if (!known) t.hosts.push_back(report.second);
  }
  std::sort(t.ranks.begin(), t.ranks.end(),
            [](const RankLocation& a, const RankLocation& b) { return a.rank < b.rank; });
  return t;
}

nlohmann::json to_json(const HostTopology& h) {
  nlohmann::json numa = nlohmann::json::array();
  for (const auto& n : h.numa_nodes) {
    numa.push_back({{"id", n.id}, {"cpus", format_cpu_list(n.cpus)}, {"memoryBytes", n.memory_bytes}});
  }
  nlohmann::json j = {{"host", h.host}, {"numaNodes", numa}};
  if (h.gpus.empty()) return j;
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : h.gpus) {
    gpus.push_back(
        {{"index", g.index}, {"busId", g.bus_id}, {"cpus", format_cpu_list(g.cpus)}, {"numaNode", g.numa_node}});
  }
  nlohmann::json paths = nlohmann::json::array();
  for (std::size_t i = 0; i < h.paths.size(); ++i) {
    nlohmann::json row = nlohmann::json::array();
    for (std::size_t k = 0; k < h.paths[i].size(); ++k) row.push_back(path_cell(h, i, k));
    paths.push_back(row);
  }
  j["gpus"] = gpus;
  j["paths"] = paths;
  return j;
}

nlohmann::json to_json(const RankLocation& r) {
  nlohmann::json j = {
      {"rank", r.rank}, {"host", r.host}, {"cpus", format_cpu_list(r.cpus)}, {"numaNodes", r.numa_nodes}};
  if (r.gpu >= 0) j["gpu"] = r.gpu;
  return j;
}

nlohmann::json to_json(const Topology& t) {
  nlohmann::json hosts = nlohmann::json::array();
  for (const auto& h : t.hosts) hosts.push_back(to_json(h));
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& r : t.ranks) ranks.push_back(to_json(r));
  return {{"hosts", hosts}, {"ranks", ranks}};
}

HostTopology host_topology_from_json(const nlohmann::json& j, const std::string& p) {
  jf::require_object(j, p);
  HostTopology h;
  h.host = jf::get_string(j, "host", p);
  h.numa_nodes = objects_field<NumaNode>(j, "numaNodes", p, numa_node_from_json);
  if (!jf::has(j, "gpus")) return h;
  h.gpus = objects_field<GpuInfo>(j, "gpus", p, gpu_info_from_json);
  gpu_matrix_from_json(j, p, h);
  return h;
}

RankLocation rank_location_from_json(const nlohmann::json& j, const std::string& p) {
  jf::require_object(j, p);
  RankLocation r;
  r.rank = jf::get_int32(j, "rank", p);
  r.host = jf::get_string(j, "host", p);
  r.cpus = cpu_list_field(j, "cpus", p);
  r.numa_nodes = jf::get_int32_list(j, "numaNodes", p);
  if (jf::has(j, "gpu")) r.gpu = jf::get_int32(j, "gpu", p);
  return r;
}

Topology topology_from_json(const nlohmann::json& j, const std::string& p) {
  jf::require_object(j, p);
  Topology t;
  t.hosts = objects_field<HostTopology>(j, "hosts", p, host_topology_from_json);
  t.ranks = objects_field<RankLocation>(j, "ranks", p, rank_location_from_json);
  return t;
}

std::string format_topology(const Topology& t) {
  std::ostringstream os;
  for (const auto& h : t.hosts) host_block(os, h);
  for (const auto& r : t.ranks) {
    os << "  rank " << r.rank << " on " << r.host << ": CPUs " << format_cpu_list(r.cpus) << numa_words(r.numa_nodes);
    if (r.gpu >= 0) os << ", GPU " << r.gpu;
    os << "\n";
  }
  return os.str();
}

}  // namespace trainbench
