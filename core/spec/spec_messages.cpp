#include "core/spec/spec_messages.hpp"

#include <cstddef>
#include <map>
#include <mutex>
#include <regex>
#include <sstream>

#include "core/spec/spec_error.hpp"

namespace trainbench::spec_messages {
namespace {

/// Characters (code points) of a valid UTF-8 string: what the API server's maxLength counts.
std::size_t utf8_length(const std::string& s) {
  std::size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

}  // namespace

std::string quote(const std::string& s) { return "\"" + printable(s) + "\""; }

std::string join_list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

std::string one_of_message(const std::vector<std::string>& allowed, const std::string& value) {
  return "must be one of [" + join_list(allowed) + "], got " + quote(value);
}

std::string fmt_number(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

std::string text_problem(const std::string& s, int max_length) {
  if (const auto bad = invalid_utf8_offset(s)) {
    return "must be valid UTF-8, got byte " + escape_invalid_utf8(std::string(1, s[*bad])) + " at offset " +
           std::to_string(*bad);
  }
  if (utf8_length(s) > static_cast<std::size_t>(max_length)) {
    return "must be at most " + std::to_string(max_length) + " characters, got " + std::to_string(utf8_length(s));
  }
  return "";
}

/// `pattern` on `s`, only when `s` is at most `max_length` bytes: std::regex recurses once per
/// character, so no pattern runs on unbounded text.
bool matches(const std::string& s, const char* pattern, int max_length) {
  if (s.size() > static_cast<std::size_t>(max_length)) return false;
  // Compiled once per pattern (a std::regex costs ~400 us to build, a match well under 1 us).
  // The patterns are core's constants, so the cache is bounded by their number.
  static std::mutex mu;
  static std::map<std::string, std::regex> compiled;
  const std::regex* re = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = compiled.find(pattern);
    if (it == compiled.end()) it = compiled.emplace(pattern, std::regex(pattern)).first;
    re = &it->second;  // map nodes are stable; matching a const regex is thread-safe
  }
  return std::regex_match(s, *re);
}

}  // namespace trainbench::spec_messages
