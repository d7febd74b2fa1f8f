#include "worker/gpu_monitor.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <sstream>
#include <vector>

namespace trainbench::worker {
namespace {

// The few NVML declarations used (nvml.h, stable C ABI since NVML 5 / CUDA 7).
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
constexpr nvmlReturn_t kNvmlSuccess = 0;

}  // namespace

std::string nvml_device_for(int cuda_index, const std::string& visible) {
  if (cuda_index < 0) return "";
  if (visible.empty()) return "index:" + std::to_string(cuda_index);
  std::vector<std::string> entries;
  std::stringstream in(visible);
  for (std::string e; std::getline(in, e, ',');) entries.push_back(e);
  if (static_cast<std::size_t>(cuda_index) >= entries.size()) return "";
  const std::string& e = entries[static_cast<std::size_t>(cuda_index)];
  if (!e.empty() && e.find_first_not_of("0123456789") == std::string::npos) return "index:" + e;
  if (e.rfind("GPU-", 0) == 0 || e.rfind("MIG-", 0) == 0) return "uuid:" + e;
  return "";
}

struct GpuMonitor::Impl {
  void* lib = nullptr;
  nvmlDevice_t device = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  ~Impl() {
    if (shutdown != nullptr) shutdown();
    if (lib != nullptr) dlclose(lib);
  }
};

std::unique_ptr<GpuMonitor> GpuMonitor::open(int cuda_index, std::string* why) {
  auto fail = [why](const std::string& m) {
    if (why != nullptr) *why = m;
    return std::unique_ptr<GpuMonitor>();
  };
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::string which = nvml_device_for(cuda_index, visible != nullptr ? visible : "");
  if (which.empty()) return fail("CUDA device " + std::to_string(cuda_index) + " is not in CUDA_VISIBLE_DEVICES");
  auto impl = std::make_unique<Impl>();
  impl->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (impl->lib == nullptr) return fail("libnvidia-ml.so.1 not found (no NVIDIA driver here)");
  auto sym = [&](const char* name) { return dlsym(impl->lib, name); };
  auto init = reinterpret_cast<nvmlReturn_t (*)()>(sym("nvmlInit_v2"));
  auto by_index = reinterpret_cast<nvmlReturn_t (*)(unsigned, nvmlDevice_t*)>(sym("nvmlDeviceGetHandleByIndex_v2"));
  auto by_uuid = reinterpret_cast<nvmlReturn_t (*)(const char*, nvmlDevice_t*)>(sym("nvmlDeviceGetHandleByUUID"));
  impl->utilization = reinterpret_cast<nvmlReturn_t (*)(nvmlDevice_t, nvmlUtilization_t*)>(
      sym("nvmlDeviceGetUtilizationRates"));
  impl->memory = reinterpret_cast<nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*)>(sym("nvmlDeviceGetMemoryInfo"));
  auto shutdown = reinterpret_cast<nvmlReturn_t (*)()>(sym("nvmlShutdown"));
  if (!init || !by_index || !by_uuid || !impl->utilization || !impl->memory || !shutdown) {
    return fail("libnvidia-ml.so.1 lacks the NVML functions used");
  }
  if (init() != kNvmlSuccess) return fail("nvmlInit failed");
  impl->shutdown = shutdown;
  const nvmlReturn_t rc = which.rfind("index:", 0) == 0
                              ? by_index(static_cast<unsigned>(std::stoul(which.substr(6))), &impl->device)
                              : by_uuid(which.substr(5).c_str(), &impl->device);
  if (rc != kNvmlSuccess) return fail("NVML has no device " + which);
  return std::unique_ptr<GpuMonitor>(new GpuMonitor(std::move(impl)));
}

GpuMonitor::GpuMonitor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GpuMonitor::~GpuMonitor() = default;

std::optional<GpuSample> GpuMonitor::sample() const {
  nvmlUtilization_t u{};
  nvmlMemory_t m{};
  if (impl_->utilization(impl_->device, &u) != kNvmlSuccess || impl_->memory(impl_->device, &m) != kNvmlSuccess) {
    return std::nullopt;
  }
  GpuSample s;
  s.utilization_ratio = u.gpu / 100.0;
  s.memory_used_bytes = static_cast<std::int64_t>(m.used);
  s.memory_total_bytes = static_cast<std::int64_t>(m.total);
  return s;
}

}  // namespace trainbench::worker
