#pragma once

#include <string>
#include <vector>

#include "core/util/atomic_file.hpp"

namespace trainbench::worker {

/// Writes `values` as raw little-endian float32 (TRAINBENCH_DUMP_PARAMS).
void write_float32_file(const std::string& path, const std::vector<float>& values);

}  // namespace trainbench::worker
