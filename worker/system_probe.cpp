#include "worker/system_probe.hpp"

#include <malloc.h>

#include <limits>

#include <link.h>
#include <sys/resource.h>
#include <unistd.h>

#include <array>
#include <climits>
#include <cstdlib>
#include <fstream>
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

std::int64_t peak_rss_bytes() {
  struct rusage usage {};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<std::int64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

std::string host_name() {
  std::array<char, 256> buf{};
  if (gethostname(buf.data(), buf.size() - 1) != 0) return "unknown";
  return std::string(buf.data());
}

bool retain_freed_memory() {
  const char* mode = std::getenv("TRAINBENCH_MALLOC");  // NOLINT(concurrency-mt-unsafe): before threads start
  if (mode != nullptr && std::string(mode) == "system") return false;
  const bool no_mmap = mallopt(M_MMAP_MAX, 0) == 1;
  const bool no_trim = mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max()) == 1;
  return no_mmap && no_trim;
}

}  // namespace trainbench::worker
