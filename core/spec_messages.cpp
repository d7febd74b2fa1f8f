#include "core/spec_messages.hpp"

#include <cstddef>
#include <sstream>

#include "core/spec_error.hpp"

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

}  // namespace trainbench::spec_messages
