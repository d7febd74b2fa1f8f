#pragma once

#include <string>

namespace trainbench::cli {

/// Writes `text` to `path` through a temporary file renamed over it, so a reader never sees half
/// a report or plot. Throws std::runtime_error naming the file.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace trainbench::cli
