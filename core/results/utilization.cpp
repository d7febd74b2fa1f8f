#include "core/results/utilization.hpp"

#include <algorithm>
#include <stdexcept>

#include "core/spec/allreduce.hpp"
#include "core/spec/json_fields.hpp"
#include "core/util/text_cells.hpp"

namespace trainbench {

namespace jf = json_fields;

double allreduce_sent_bytes(std::int64_t bytes, int ranks) {
  return static_cast<double>(bytes) * allreduce_busbw_factor(ranks);
}

double allgather_sent_bytes(std::int64_t bytes, int ranks) {
  return ranks > 1 ? static_cast<double>(bytes) * (ranks - 1) : 0.0;
}

void UtilizationWindow::add_gpu_sample(double utilization_ratio, std::int64_t memory_used_bytes) {
  ++gpu_samples_;
  gpu_utilization_sum_ += utilization_ratio;
  gpu_memory_max_ = std::max(gpu_memory_max_, memory_used_bytes);
}

RankUtilization UtilizationWindow::end(const Reading& stop, std::int64_t steps, std::int64_t peak_rss_bytes,
                                       std::optional<std::int64_t> gpu_peak_allocated_bytes) const {
  RankUtilization u;
  const double wall = stop.wall_seconds - start_.wall_seconds;
  if (wall > 0) u.cpu_cores = std::max(0.0, stop.cpu_seconds - start_.cpu_seconds) / wall;
  if (steps > 0) {
    u.network_bytes_per_step = static_cast<double>(std::max<std::int64_t>(0, stop.sent_bytes - start_.sent_bytes)) /
                               static_cast<double>(steps);
  }
  u.peak_rss_bytes = peak_rss_bytes;
  u.gpu_peak_allocated_bytes = gpu_peak_allocated_bytes;
  if (gpu_samples_ > 0) {
    u.gpu_utilization = gpu_utilization_sum_ / gpu_samples_;
    u.gpu_memory_used_bytes = gpu_memory_max_;
  }
  return u;
}

namespace {

/// The max of the set values of an optional field, nullopt when none is set.
template <typename T, typename Get>
std::optional<T> max_of(const std::vector<RankUtilization>& ranks, Get get) {
  std::optional<T> out;
  for (const auto& r : ranks) {
    if (const std::optional<T> v = get(r)) out = out ? std::max(*out, *v) : *v;
  }
  return out;
}

}  // namespace

std::optional<RunUtilization> summarize_utilization(const std::vector<RankUtilization>& ranks,
                                                    int threads_per_process) {
  if (ranks.empty()) return std::nullopt;
  RunUtilization s;
  s.ranks = static_cast<int>(ranks.size());
  s.threads_per_process = std::max(1, threads_per_process);
  double gpu_sum = 0;
  int gpu_ranks = 0;
  for (const auto& r : ranks) {
    s.cpu_cores_mean += r.cpu_cores / s.ranks;
    s.network_bytes_per_step_mean += r.network_bytes_per_step / s.ranks;
    s.peak_rss_bytes_max = std::max(s.peak_rss_bytes_max, r.peak_rss_bytes);
    if (r.gpu_utilization) {
      gpu_sum += *r.gpu_utilization;
      ++gpu_ranks;
    }
  }
  s.cpu_per_thread = s.cpu_cores_mean / s.threads_per_process;
  if (gpu_ranks > 0) s.gpu_utilization_mean = gpu_sum / gpu_ranks;
  s.gpu_peak_allocated_bytes_max =
      max_of<std::int64_t>(ranks, [](const RankUtilization& r) { return r.gpu_peak_allocated_bytes; });
  s.gpu_memory_used_bytes_max =
      max_of<std::int64_t>(ranks, [](const RankUtilization& r) { return r.gpu_memory_used_bytes; });
  return s;
}

namespace {

/// Bytes with a unit that keeps small per-step amounts readable: "0 B", "512 B", "37.5 KiB",
/// then fmt_bytes's MiB / GiB.
std::string fmt_small_bytes(double bytes) {
  if (bytes < 1024) return printf_str("%.0f B", bytes);
  if (bytes < 1024.0 * 1024.0) return printf_str("%.1f KiB", bytes / 1024.0);
  return fmt_bytes(static_cast<std::int64_t>(bytes));
}

}  // namespace

std::string utilization_line(const RunUtilization& u) {
  std::string line = "CPU " + printf_str("%.2f", u.cpu_cores_mean) + " cores/rank (" +
                     printf_str("%.0f%%", u.cpu_per_thread * 100) + " of " + std::to_string(u.threads_per_process) +
                     (u.threads_per_process == 1 ? " thread" : " threads") + "), peak RSS " +
                     fmt_bytes(u.peak_rss_bytes_max) + ", sent " + fmt_small_bytes(u.network_bytes_per_step_mean) +
                     "/step/rank";
  if (u.gpu_utilization_mean) line += ", GPU " + printf_str("%.0f%%", *u.gpu_utilization_mean * 100) + " busy";
  if (u.gpu_memory_used_bytes_max) line += ", " + fmt_bytes(*u.gpu_memory_used_bytes_max) + " used";
  if (u.gpu_peak_allocated_bytes_max) line += ", " + fmt_bytes(*u.gpu_peak_allocated_bytes_max) + " allocated";
  return line;
}

nlohmann::json to_json(const RankUtilization& u) {
  nlohmann::json j = {
      {"cpuCores", u.cpu_cores}, {"peakRssBytes", u.peak_rss_bytes}, {"networkBytesPerStep", u.network_bytes_per_step}};
  if (u.gpu_peak_allocated_bytes) j["gpuPeakAllocatedBytes"] = *u.gpu_peak_allocated_bytes;
  if (u.gpu_utilization) j["gpuUtilization"] = *u.gpu_utilization;
  if (u.gpu_memory_used_bytes) j["gpuMemoryUsedBytes"] = *u.gpu_memory_used_bytes;
  return j;
}

nlohmann::json to_json(const RunUtilization& u) {
  nlohmann::json j = {{"ranks", u.ranks},
                      {"threadsPerProcess", u.threads_per_process},
                      {"cpuCoresMean", u.cpu_cores_mean},
                      {"cpuPerThread", u.cpu_per_thread},
                      {"peakRssBytesMax", u.peak_rss_bytes_max},
                      {"networkBytesPerStepMean", u.network_bytes_per_step_mean}};
  if (u.gpu_peak_allocated_bytes_max) j["gpuPeakAllocatedBytesMax"] = *u.gpu_peak_allocated_bytes_max;
  if (u.gpu_utilization_mean) j["gpuUtilizationMean"] = *u.gpu_utilization_mean;
  if (u.gpu_memory_used_bytes_max) j["gpuMemoryUsedBytesMax"] = *u.gpu_memory_used_bytes_max;
  return j;
}

namespace {

/// The strict readers of one object's fields: numbers >= 0, a ratio in [0, 1].
struct FieldReader {
  const nlohmann::json& j;
  const std::string& path;

  double number(const char* key) const {
    const double v = jf::get_number(j, key, path);
    if (!(v >= 0)) throw std::runtime_error(path + "." + key + ": must be >= 0");
    return v;
  }
  std::int64_t bytes(const char* key) const {
    const std::int64_t v = jf::get_int(j, key, path);
    if (v < 0) throw std::runtime_error(path + "." + key + ": must be >= 0");
    return v;
  }
  std::optional<std::int64_t> optional_bytes(const char* key) const {
    return jf::has(j, key) ? std::optional<std::int64_t>(bytes(key)) : std::nullopt;
  }
  std::optional<double> optional_ratio(const char* key) const {
    if (!jf::has(j, key)) return std::nullopt;
    const double v = number(key);
    if (v > 1) throw std::runtime_error(path + "." + key + ": must be at most 1");
    return v;
  }
};

}  // namespace

RankUtilization rank_utilization_from_json(const nlohmann::json& j, const std::string& path) {
  jf::require_object(j, path);
  const FieldReader f{j, path};
  RankUtilization u;
  u.cpu_cores = f.number("cpuCores");
  u.peak_rss_bytes = f.bytes("peakRssBytes");
  u.network_bytes_per_step = f.number("networkBytesPerStep");
  u.gpu_peak_allocated_bytes = f.optional_bytes("gpuPeakAllocatedBytes");
  u.gpu_utilization = f.optional_ratio("gpuUtilization");
  u.gpu_memory_used_bytes = f.optional_bytes("gpuMemoryUsedBytes");
  return u;
}

RunUtilization run_utilization_from_json(const nlohmann::json& j, const std::string& path) {
  jf::require_object(j, path);
  const FieldReader f{j, path};
  RunUtilization u;
  u.ranks = jf::get_int32(j, "ranks", path);
  u.threads_per_process = jf::get_int32(j, "threadsPerProcess", path);
  if (u.ranks < 0 || u.threads_per_process < 1) {
    throw std::runtime_error(path + (u.ranks < 0 ? ".ranks: must be >= 0" : ".threadsPerProcess: must be >= 1"));
  }
  u.cpu_cores_mean = f.number("cpuCoresMean");
  u.cpu_per_thread = f.number("cpuPerThread");
  u.peak_rss_bytes_max = f.bytes("peakRssBytesMax");
  u.network_bytes_per_step_mean = f.number("networkBytesPerStepMean");
  u.gpu_peak_allocated_bytes_max = f.optional_bytes("gpuPeakAllocatedBytesMax");
  u.gpu_utilization_mean = f.optional_ratio("gpuUtilizationMean");
  u.gpu_memory_used_bytes_max = f.optional_bytes("gpuMemoryUsedBytesMax");
  return u;
}

}  // namespace trainbench
