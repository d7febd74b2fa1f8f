#include "core/util/text_cells.hpp"

#include <cstdio>

namespace trainbench {

std::string printf_str(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string pad_left(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

std::string pad_right(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

std::string fmt_sec(double seconds) { return printf_str(seconds < 0.01 ? "%.4fs" : "%.3fs", seconds); }

std::string fmt_rate(double per_second) {
  if (per_second >= 100) return printf_str("%.0f/s", per_second);
  if (per_second >= 10) return printf_str("%.1f/s", per_second);
  return printf_str("%.2f/s", per_second);
}

std::string fmt_bytes(std::int64_t bytes) {
  const double mib = static_cast<double>(bytes) / (1024.0 * 1024.0);
  if (mib >= 1024) return printf_str("%.2f GiB", mib / 1024.0);
  return printf_str("%.1f MiB", mib);
}

}  // namespace trainbench
