#include "file_io.hpp"

#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

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

}  // namespace trainbench::test
