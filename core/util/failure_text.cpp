#include "core/util/failure_text.hpp"

#include <cctype>
#include <vector>

namespace trainbench {
namespace {

constexpr std::size_t kMaxTextBytes = 8 * 1024;
constexpr std::string_view kWorkerMarker = "trainbench-worker rank ";

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

/// glog's prefix, "Lmmdd hh:mm:ss.uuuuuu threadid file:line] " (some builds write the year too,
/// "L20261124 ..."): a severity letter, then 4 or 8 digits and a space.
bool glog_prefix(std::string_view line, char& severity) {
  std::size_t digits = 0;
  while (1 + digits < line.size() && is_digit(line[1 + digits])) ++digits;
  if ((digits != 4 && digits != 8) || 1 + digits >= line.size() || line[1 + digits] != ' ') return false;
  severity = line[0];
  return (severity == 'I' || severity == 'W' || severity == 'E' || severity == 'F') &&
         line.find("] ") != std::string_view::npos;
}

/// c10's own prefix without glog, "[W socket.cpp:601] ".
bool c10_prefix(std::string_view line, char& severity) {
  if (line.size() < 4 || line[0] != '[' || line[2] != ' ' || line.find(']') == std::string_view::npos) return false;
  severity = line[1];
  return severity == 'I' || severity == 'W' || severity == 'E' || severity == 'F';
}

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())) != 0) s.remove_prefix(1);
  while (!s.empty() && (std::isspace(static_cast<unsigned char>(s.back())) != 0 || s.back() == ':')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    out.push_back(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

}  // namespace

bool is_library_log_line(std::string_view line) {
  char severity = 0;
  return glog_prefix(line, severity) || c10_prefix(line, severity);
}

bool is_library_noise(std::string_view line) {
  line = trimmed(line);
  if (line.rfind("WARNING: Logging before InitGoogleLogging()", 0) == 0) return true;
  if (line.rfind("Exception raised from ", 0) == 0 || line.rfind("frame #", 0) == 0) return true;
  char severity = 0;
  return (glog_prefix(line, severity) || c10_prefix(line, severity)) && (severity == 'I' || severity == 'W');
}

FailureText read_failure_text(std::string_view text) {
  if (text.size() > kMaxTextBytes) text = text.substr(text.size() - kMaxTextBytes);
  const std::vector<std::string_view> lines = lines_of(text);
  FailureText out;
  for (auto it = lines.rbegin(); it != lines.rend() && out.error_line.empty(); ++it) {
    const std::size_t at = it->find(kWorkerMarker);
    if (at != std::string_view::npos) out.error_line = std::string(trimmed(it->substr(at)));
  }
  for (std::string_view line : lines) {
    // The error line, wherever it stands (node-launch prefixes it, then echoes the rank's log),
    // leaves only what precedes it, e.g. "rank 3 exited with code 1".
    const std::size_t at = out.error_line.empty() ? std::string_view::npos : line.find(kWorkerMarker);
    if (at != std::string_view::npos && trimmed(line.substr(at)) == out.error_line) line = line.substr(0, at);
    line = trimmed(line);
    if (line.empty() || is_library_noise(line) || (!out.error_line.empty() && is_library_log_line(line))) continue;
    if (!out.context.empty()) out.context += "; ";
    out.context += line;
  }
  return out;
}

}  // namespace trainbench
