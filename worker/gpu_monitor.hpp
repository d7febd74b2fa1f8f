#pragma once

// GPU utilization and memory from NVML, loaded at run time (dlopen of libnvidia-ml.so.1, which
// the NVIDIA container runtime mounts into GPU pods): the worker neither links nor needs NVML,
// and without it (CPU runs, no driver) open() just returns nullptr.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace trainbench::worker {

struct GpuSample {
  double utilization_ratio = 0;  ///< busy fraction of NVML's last sample period, 0..1
  std::int64_t memory_used_bytes = 0;
  std::int64_t memory_total_bytes = 0;
};

class GpuMonitor {
 public:
  /// NVML's handle for the GPU this process uses: `cuda_index` counts the devices the process
  /// sees, which NVML does not know about, so it is mapped through CUDA_VISIBLE_DEVICES (an
  /// index or a GPU-UUID there). nullptr when NVML or the device is not available; `why` then
  /// says which.
  static std::unique_ptr<GpuMonitor> open(int cuda_index, std::string* why = nullptr);
  ~GpuMonitor();
  GpuMonitor(const GpuMonitor&) = delete;
  GpuMonitor& operator=(const GpuMonitor&) = delete;

  /// nullopt when NVML answers with an error (e.g. the GPU fell off the bus).
  std::optional<GpuSample> sample() const;

 private:
  struct Impl;
  explicit GpuMonitor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// Which NVML device a process's CUDA device `cuda_index` is, given CUDA_VISIBLE_DEVICES
/// (`visible`, may be empty): "index:N" or "uuid:GPU-..."; "" when the index is out of range.
std::string nvml_device_for(int cuda_index, const std::string& visible);

}  // namespace trainbench::worker
