#include "worker/system_probe.hpp"

#include <malloc.h>

#include <limits>

#include <link.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <vector>

namespace trainbench::worker {
namespace {

std::string base_name(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool is_blas_name(const std::string& name) {
  static const std::array<const char*, 6> prefixes = {"libblas.",     "libopenblas",
                                                      "libmkl_rt",    "libflexiblas",
                                                      "libblis",      "libcblas."};
  for (const char* p : prefixes) {
    if (name.rfind(p, 0) == 0) return true;
  }
  return false;
}

int collect_object(struct dl_phdr_info* info, size_t /*size*/, void* data) {
  auto* names = static_cast<std::vector<std::string>*>(data);
  if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0') names->emplace_back(info->dlpi_name);
  return 0;
}

}  // namespace

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      const auto start = line.find_first_not_of(" \t", colon + 1);
      if (start != std::string::npos) return line.substr(start);
    }
  }
  return "unknown CPU";
}

std::string loaded_blas_library() {
  std::vector<std::string> names;
  dl_iterate_phdr(collect_object, &names);
  for (const auto& name : names) {
    if (!is_blas_name(base_name(name))) continue;
    char resolved[PATH_MAX];
    if (realpath(name.c_str(), resolved) != nullptr) return resolved;
    return name;
  }
  return "unknown";
}

std::string blas_description(const std::string& loaded_library, const std::string& torch_config) {
  if (!loaded_library.empty() && loaded_library != "unknown") return loaded_library;
  auto trimmed = [](std::string v) {
    const auto first = v.find_first_not_of(" -\t");
    const auto last = v.find_last_not_of(" \t\r");
    return first == std::string::npos ? std::string() : v.substr(first, last - first + 1);
  };
  std::string blas_info;
  std::size_t start = 0;
  while (start < torch_config.size()) {
    auto end = torch_config.find('\n', start);
    if (end == std::string::npos) end = torch_config.size();
    const std::string line = torch_config.substr(start, end - start);
    start = end + 1;
    if (line.find("Math Kernel Library") != std::string::npos) return "MKL in libtorch_cpu: " + trimmed(line);
    const auto at = line.find("BLAS_INFO=");
    if (at != std::string::npos) blas_info = trimmed(line.substr(at + 10, line.find(',', at) - at - 10));
  }
  return blas_info.empty() ? "unknown" : blas_info + " in libtorch";
}

std::int64_t peak_rss_bytes() {
  struct rusage usage {};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<std::int64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

double process_cpu_seconds() {
  struct rusage usage {};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

std::string host_name() {
  std::array<char, 256> buf{};
  if (gethostname(buf.data(), buf.size() - 1) != 0) return "unknown";
  return std::string(buf.data());
}

namespace {

/// The cgroup's CPU quota in CPUs, rounded up; nullopt when unlimited or unreadable.
std::optional<int> cgroup_cpu_limit() {
  double quota = -1, period = 0;
  std::ifstream v2("/sys/fs/cgroup/cpu.max");  // "max 100000" or "200000 100000"
  std::string q;
  if (v2 >> q >> period) {
    if (q == "max") return std::nullopt;
    quota = std::atof(q.c_str());
  } else {
    std::ifstream qf("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"), pf("/sys/fs/cgroup/cpu/cpu.cfs_period_us");
    if (!(qf >> quota) || !(pf >> period)) return std::nullopt;
  }
  if (!(quota > 0) || !(period > 0)) return std::nullopt;
  return std::max(1, static_cast<int>(std::ceil(quota / period)));
}

}  // namespace

int usable_cpu_count() {
  int cpus = 0;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) cpus = CPU_COUNT(&set);
  if (cpus <= 0) cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  if (const auto limit = cgroup_cpu_limit()) cpus = cpus > 0 ? std::min(cpus, *limit) : *limit;
  return std::max(1, cpus);
}

bool retain_freed_memory() {
  const char* mode = std::getenv("TRAINBENCH_MALLOC");  // NOLINT(concurrency-mt-unsafe): before threads start
  if (mode != nullptr && std::string(mode) == "system") return false;
  const bool no_mmap = mallopt(M_MMAP_MAX, 0) == 1;
  const bool no_trim = mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max()) == 1;
  return no_mmap && no_trim;
}

}  // namespace trainbench::worker
