#pragma once

#include <cstdint>
#include <string>

namespace trainbench::worker {

/// "model name" of the first processor in /proc/cpuinfo ("unknown CPU" when absent).
std::string cpu_model_name();

/// Resolved path of the BLAS shared object loaded into this process (libblas, libopenblas,
/// libmkl_rt, libflexiblas, ...), found with dl_iterate_phdr; "unknown" when none is loaded
/// (e.g. a libtorch with BLAS linked in statically).
std::string loaded_blas_library();

/// The BLAS a run computes with: `loaded_library` (loaded_blas_library()) when one is loaded,
/// else what libtorch's build configuration (`torch_config`: at::show_config()) names: the PyPI
/// wheels link MKL into libtorch_cpu ("MKL in libtorch_cpu: Intel(R) oneAPI Math Kernel Library
/// Version ..."), or its BLAS_INFO. "unknown" when neither says.
std::string blas_description(const std::string& loaded_library, const std::string& torch_config);

/// Peak resident set size of this process in bytes (getrusage ru_maxrss).
std::int64_t peak_rss_bytes();

/// User + system CPU seconds of this process, all its threads (getrusage, microseconds: finer
/// than /proc/self/stat's clock ticks, the same accounting). /metrics' process CPU counter and
/// the report's CPU utilization both read it.
double process_cpu_seconds();

/// Makes glibc keep freed memory for reuse instead of returning it to the kernel: no mmap for
/// large blocks, no heap trimming. libtorch's CPU allocator frees every step's large
/// temporaries (a 4096x4096 gradient is 64 MiB, above glibc's 32 MiB mmap ceiling), and mapping
/// them afresh each step costs a page fault per 4 KiB: measured here as 40% of an MLP step.
/// Off when TRAINBENCH_MALLOC=system. Returns whether it was applied.
bool retain_freed_memory();

/// gethostname(), "unknown" on failure.
std::string host_name();

/// CPUs this process may run on: its affinity mask (sched_getaffinity), capped by the cgroup's
/// CPU quota rounded up (cgroup v2 cpu.max, v1 cpu.cfs_quota_us / cpu.cfs_period_us: a pod's CPU
/// limit, which the affinity mask does not show). At least 1.
int usable_cpu_count();

}  // namespace trainbench::worker
