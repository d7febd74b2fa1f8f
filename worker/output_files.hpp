#pragma once

#include <string>
#include <vector>

namespace trainbench::worker {

/// Writes `content` to `path` atomically: a temporary file in the same directory, then
/// rename(2), so a reader never sees a partial file. Throws std::runtime_error on failure.
void write_file_atomically(const std::string& path, const std::string& content);

/// Writes `values` as raw little-endian float32 (TRAINBENCH_DUMP_PARAMS).
void write_float32_file(const std::string& path, const std::vector<float>& values);

}  // namespace trainbench::worker
