#pragma once

// The `allreduce` paradigm: a communication-only benchmark in the manner of nccl-tests'
// all_reduce_perf. Message sizes are swept over powers of two; each size's time per all-reduce
// gives algbw = bytes / time and busbw = algbw * 2(n-1)/n (n = world size), which is shown as a
// fraction of the machine's own limit (memory copy bandwidth), measured in the same run.
// Pure data and arithmetic: no libtorch (the worker side is worker/allreduce_bench.cpp).

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/spec/spec_error.hpp"

namespace trainbench {

/// spec.benchmark.allreduce
struct AllreduceSpec {
  std::int64_t min_bytes = 1024;          ///< smallest message, a power of two
  std::int64_t max_bytes = 64LL << 20;    ///< largest message, a power of two
  std::string dtype = "fp32";             ///< fp32 | fp16 | bf16
};

/// Bounds of minBytes / maxBytes: 4 B (one fp32 element) to 1 GiB per message.
inline constexpr std::int64_t kAllreduceMinBytes = 4;
inline constexpr std::int64_t kAllreduceMaxBytes = 1LL << 30;

const std::vector<std::string>& known_allreduce_dtypes();  ///< fp32, fp16, bf16
/// Bytes per element of a dtype of known_allreduce_dtypes() (4 or 2); throws on others.
int allreduce_element_bytes(const std::string& dtype);
bool is_power_of_two(std::int64_t v);
/// Every power of two in [kAllreduceMinBytes, kAllreduceMaxBytes] (the CRD's enum of sizes).
std::vector<std::int64_t> allreduce_size_values();
/// The swept sizes: min, 2 min, 4 min, ..., max (both powers of two, min <= max).
std::vector<std::int64_t> allreduce_sizes(std::int64_t min_bytes, std::int64_t max_bytes);
/// Semantic checks of spec.benchmark.allreduce; `path` prefixes the fields.
std::vector<FieldError> validate_allreduce(const AllreduceSpec& spec, const std::string& path);
nlohmann::json to_json(const AllreduceSpec& spec);

/// nccl-tests' definitions (doc/PERFORMANCE.md there): algbw = bytes / seconds;
/// busbw = algbw * 2(n-1)/n for all-reduce (0 for one rank: nothing crosses a link).
double allreduce_algbw(std::int64_t bytes, double seconds);
double allreduce_busbw_factor(int world_size);
double allreduce_busbw(std::int64_t bytes, double seconds, int world_size);

/// The ceiling busbw is compared with, measured by rank 0 before the sweep: on CPU the
/// single-thread memcpy bandwidth of a buffer much larger than the last-level cache (bytes copied
/// per second, each byte counted once, although it is read once and written once), best of
/// `copies`; on CUDA a device-to-device copy (device memory bandwidth, counted the same way).
struct MemoryCopyLimit {
  std::string kind = "hostMemcpy";  ///< hostMemcpy | deviceMemcpy
  double bytes_per_sec = 0;
  std::int64_t buffer_bytes = 0;
  int copies = 0;
};

/// What the workers add to the RunResult of an allreduce run. The timings themselves are the
/// ranks' stepSeconds: stepSeconds[repeat][size] = seconds per all-reduce of sizes_bytes[size]
/// (measureSteps back-to-back all-reduces timed together, divided by measureSteps).
struct AllreduceRunInfo {
  std::string dtype = "fp32";
  std::vector<std::int64_t> sizes_bytes;
  MemoryCopyLimit limit;
  int warmup_ops = 0;      ///< untimed all-reduces per size before the first repeat
  int ops_per_repeat = 1;  ///< all-reduces timed together per repeat
  bool verified = false;   ///< the first all-reduce of every size summed correctly on every rank
};

nlohmann::json to_json(const AllreduceRunInfo& info);
/// `path` prefixes error messages ("allreduce").
AllreduceRunInfo allreduce_run_info_from_json(const nlohmann::json& j, const std::string& path);

/// One row of the report's all-reduce table.
struct AllreduceSizeReport {
  std::int64_t bytes = 0;
  std::int64_t elements = 0;
  double time_us = 0;         ///< p50 over repeats of the per-op time (mean over ranks)
  double algbw_gbps = 0;      ///< GB/s = 1e9 bytes/s, as nccl-tests
  double busbw_gbps = 0;
  double busbw_fraction = 0;  ///< busbw / limit
};

/// The all-reduce part of a run's report.
struct AllreduceReport {
  std::string dtype = "fp32";
  int world_size = 1;
  int warmup_ops = 0;
  int ops_per_repeat = 1;
  int repeats = 1;
  bool verified = false;
  MemoryCopyLimit limit;
  std::vector<AllreduceSizeReport> sizes;
};

/// Summarises the ranks' timings: rank_seconds[rank][repeat][size] (seconds per all-reduce).
/// For each repeat and size the per-op time is averaged over ranks (nccl-tests' default -a 1),
/// then the p50 over repeats is taken. Throws std::runtime_error on inconsistent shapes.
AllreduceReport summarize_allreduce(const AllreduceRunInfo& info,
                                    const std::vector<std::vector<std::vector<double>>>& rank_seconds,
                                    int world_size);

nlohmann::json to_json(const AllreduceReport& r);
AllreduceReport allreduce_report_from_json(const nlohmann::json& j, const std::string& path);

/// The seed-style table of one run: size, time (us) p50, algbw, busbw, busbw / limit.
std::string format_allreduce_table(const AllreduceReport& r, const std::string& title);
/// busbw per size of two runs side by side with the % change (sizes in only one are listed so).
std::string format_allreduce_diff(const AllreduceReport& base, const AllreduceReport& test,
                                  const std::string& title);
/// "1 KiB", "64 MiB", "3 B".
std::string format_byte_size(std::int64_t bytes);

}  // namespace trainbench
