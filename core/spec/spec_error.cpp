#include "core/spec/spec_error.hpp"

#include <cstdint>
#include <cstdio>

namespace trainbench {
namespace {

std::string join(const std::vector<FieldError>& errors) {
  std::string out;
  for (const auto& e : errors) {
    if (!out.empty()) out += "\n";
    out += e.str();
  }
  return out.empty() ? std::string("invalid BenchmarkJob") : out;
}

std::vector<FieldError> printable_errors(std::vector<FieldError> errors) {
  for (auto& e : errors) {
    e.path = escape_invalid_utf8(e.path);
    e.message = escape_invalid_utf8(e.message);
  }
  return errors;
}

/// Length of the well-formed UTF-8 sequence at s[i] (RFC 3629, Unicode table 3-7), 0 if none.
std::size_t utf8_sequence_length(const std::string& s, std::size_t i) {
  const auto byte = [&s](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b0 = byte(i);
  if (b0 < 0x80) return 1;
  std::size_t len = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;  // no overlong forms
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;  // <= U+10FFFF
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < len; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return len;
}

void append_hex(std::string& out, unsigned char b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned>(b));
  out += buf;
}

}  // namespace

SpecError::SpecError(std::vector<FieldError> errors)
    : std::runtime_error(join(printable_errors(errors))), errors_(printable_errors(std::move(errors))) {}

std::string SpecError::summary(std::size_t max_bytes) const {
  std::string out;
  for (std::size_t i = 0; i < errors_.size(); ++i) {
    const std::string line = (out.empty() ? "" : "\n") + errors_[i].str();
    const std::string more = "\n... and " + std::to_string(errors_.size() - i) + " more errors";
    if (out.size() + line.size() + (i + 1 < errors_.size() ? more.size() : 0) > max_bytes) {
      return out + (out.size() + more.size() <= max_bytes ? more : std::string());
    }
    out += line;
  }
  return out;
}

std::optional<std::size_t> invalid_utf8_offset(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t len = utf8_sequence_length(s, i);
    if (len == 0) return i;
    i += len;
  }
  return std::nullopt;
}

std::string escape_invalid_utf8(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t len = utf8_sequence_length(s, i);
    const auto b = static_cast<unsigned char>(s[i]);
    if (len == 0 || (len == 1 && b < 0x20 && b != '\n' && b != '\t') || b == 0x7F) {
      append_hex(out, b);
      ++i;
    } else {
      out.append(s, i, len);
      i += len;
    }
  }
  return out;
}

std::string printable(const std::string& s, std::size_t max_bytes) {
  std::string head = s;
  std::string tail;
  if (s.size() > max_bytes) {
    std::size_t cut = max_bytes;
    // Do not cut inside a UTF-8 sequence: back up over continuation bytes.
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
    head = s.substr(0, cut);
    tail = "... (" + std::to_string(s.size()) + " bytes)";
  }
  std::string out;
  for (char c : escape_invalid_utf8(head)) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out += c;
    }
  }
  return out + tail;
}

}  // namespace trainbench
