#pragma once

#include <string>

namespace trainbench {

/// Writes `content` to `path` atomically: a temporary file in the same directory, then
/// rename(2), so a reader never sees half a file (a report, a plot, a result or progress file the
/// CLI or a watcher reads while it is replaced). The one home of that write for the CLI and the
/// worker. Throws std::runtime_error starting "cannot write " and naming the file and the cause;
/// no temporary file is left behind.
void write_file_atomically(const std::string& path, const std::string& content);

}  // namespace trainbench
