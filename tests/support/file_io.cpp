#include "file_io.hpp"

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace trainbench::test {

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& text, bool executable) {
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (!f) throw std::runtime_error("cannot write " + path);
    f << text;
  }
  if (executable) ::chmod(path.c_str(), 0755);
}

std::function<bool()> files_grew(std::vector<std::string> paths) {
  return [paths = std::move(paths), last = std::uintmax_t{0}]() mutable {
    std::uintmax_t n = 0;
    for (const std::string& p : paths) {
      std::error_code ec;
      const auto size = std::filesystem::file_size(p, ec);
      if (!ec) n += size;
    }
    return n != std::exchange(last, n);
  };
}

}  // namespace trainbench::test
