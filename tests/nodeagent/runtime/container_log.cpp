#include "runtime/container_log.hpp"

#include <chrono>
#include <fstream>
#include <iterator>
#include <thread>

#include "runtime/util.hpp"

namespace noderuntime {

std::string tail_lines(const std::string& data, long long n) {
  if (n <= 0) return "";
  std::size_t pos = data.size();
  if (!data.empty() && data.back() == '\n') --pos;
  long long seen = 0;
  while (pos > 0) {
    if (data[pos - 1] == '\n' && ++seen >= n) break;
    --pos;
  }
  return data.substr(pos);
}

std::string read_log_tail(const std::string& path, std::size_t max_lines, std::size_t max_bytes) {
  std::string data;
  try {
    data = read_file(path);
  } catch (const std::exception&) {
    return "";
  }
  if (data.size() > max_bytes) data = data.substr(data.size() - max_bytes);
  return tail_lines(data, static_cast<long long>(max_lines));
}

namespace {

/// What the file holds from `offset` on; false when it cannot be read.
bool read_from(const std::string& path, std::size_t offset, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  in.seekg(static_cast<std::streamoff>(offset));
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

}  // namespace

bool follow_log(const std::string& path, std::size_t offset, const LogFollower& f) {
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (f.peer_closed()) return false;
    const bool done = f.finished();
    std::string more;
    if (!read_from(path, offset, more)) return true;
    if (!more.empty()) {
      if (!f.write(more)) return false;
      offset += more.size();
    }
    if (done) return true;
  }
}

}  // namespace noderuntime
