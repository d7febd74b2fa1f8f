#include "core/plot/svg_writer.hpp"

#include <cmath>
#include <cstdio>

namespace trainbench {
namespace {

/// Length of the UTF-8 sequence starting at s[i], or 0 when it is not valid UTF-8.
std::size_t utf8_length(const std::string& s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return 0;
  }
  // Overlong forms, UTF-16 surrogates and code points past U+10FFFF are not UTF-8 either.
  const auto c1 = n > 1 ? static_cast<unsigned char>(s[i + 1]) : 0;
  if (c == 0xC0 || c == 0xC1 || (c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 >= 0xA0) || (c == 0xF0 && c1 < 0x90) ||
      (c == 0xF4 && c1 >= 0x90) || c > 0xF4) {
    return 0;
  }
  return n;
}

}  // namespace

std::string xml_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    const std::size_t n = utf8_length(text, i);
    if (n == 0) {
      out += '?';
      ++i;
      continue;
    }
    if (n > 1) {
      out.append(text, i, n);
      i += n;
      continue;
    }
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') ? ' ' : c;
    }
    ++i;
  }
  return out;
}

std::string svg_number(double v) {
  if (!std::isfinite(v)) return "0";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  std::string s = buf;
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

SvgWriter::SvgWriter(double width, double height) {
  out_ << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  const std::string w = svg_number(width), h = svg_number(height);
  open("svg", {{"xmlns", "http://www.w3.org/2000/svg"},
               {"width", w},
               {"height", h},
               {"viewBox", "0 0 " + w + " " + h},
               {"font-family", "DejaVu Sans, Helvetica, Arial, sans-serif"}});
}

void SvgWriter::start_tag(const std::string& name, const SvgAttrs& attrs) {
  out_ << std::string(open_.size() * 2, ' ') << '<' << name;
  for (const auto& a : attrs) out_ << ' ' << a.name << "=\"" << xml_escape(a.value) << '"';
}

void SvgWriter::open(const std::string& name, const SvgAttrs& attrs) {
  start_tag(name, attrs);
  out_ << ">\n";
  open_.push_back(name);
}

void SvgWriter::close() {
  if (open_.empty()) return;
  const std::string name = open_.back();
  open_.pop_back();
  out_ << std::string(open_.size() * 2, ' ') << "</" << name << ">\n";
}

void SvgWriter::leaf(const std::string& name, const SvgAttrs& attrs) {
  start_tag(name, attrs);
  out_ << "/>\n";
}

void SvgWriter::text_element(const std::string& name, const SvgAttrs& attrs, const std::string& text) {
  start_tag(name, attrs);
  out_ << '>' << xml_escape(text) << "</" << name << ">\n";
}

std::string SvgWriter::finish() {
  while (!open_.empty()) close();
  return out_.str();
}

}  // namespace trainbench
