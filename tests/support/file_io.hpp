#pragma once
// Test support: whole-file reads and writes.

#include <string>

namespace trainbench::test {

/// The file's bytes; "" when it does not exist or cannot be read (tests poll for files).
std::string read_file(const std::string& path);
/// Writes (truncates) the file; `executable`: mode 0755. Throws when it cannot.
void write_file(const std::string& path, const std::string& text, bool executable = false);

}  // namespace trainbench::test
