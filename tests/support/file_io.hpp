#pragma once
// Test support: whole-file reads and writes.

#include <functional>
#include <string>
#include <vector>

namespace trainbench::test {

/// The file's bytes; "" when it does not exist or cannot be read (tests poll for files).
std::string read_file(const std::string& path);
/// Writes (truncates) the file; `executable`: mode 0755. Throws when it cannot.
void write_file(const std::string& path, const std::string& text, bool executable = false);
/// A poll for a process's progress: each call is true when the files' total size changed since
/// the call before (missing files count 0), e.g. wait_exit's `progressed` on a run's logs.
std::function<bool()> files_grew(std::vector<std::string> paths);

}  // namespace trainbench::test
