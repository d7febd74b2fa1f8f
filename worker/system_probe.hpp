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

/// Peak resident set size of this process in bytes (getrusage ru_maxrss).
std::int64_t peak_rss_bytes();

/// gethostname(), "unknown" on failure.
std::string host_name();

}  // namespace trainbench::worker
