#pragma once

// A small writer of SVG documents, for the plots trainbench draws itself (core/plot/scaling_plot):
// elements with attributes, text escaped for XML, numbers printed the same way on every machine
// (two decimals, no locale), so the same input gives the same bytes.

#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace trainbench {

/// `text` safe inside an XML element or a double-quoted attribute: & < > " ' escaped, control
/// characters XML 1.0 forbids replaced by a space and bytes that are not UTF-8 by '?'.
std::string xml_escape(const std::string& text);

/// A coordinate or length: at most two decimals, trailing zeros dropped ("12.5", "3", "-0.25").
std::string svg_number(double v);

/// One attribute, its value unescaped (the writer escapes it).
struct SvgAttr {
  std::string name;
  std::string value;
  SvgAttr(std::string n, std::string v) : name(std::move(n)), value(std::move(v)) {}
  SvgAttr(std::string n, const char* v) : name(std::move(n)), value(v) {}
  SvgAttr(std::string n, double v) : name(std::move(n)), value(svg_number(v)) {}
  SvgAttr(std::string n, int v) : name(std::move(n)), value(std::to_string(v)) {}
};
using SvgAttrs = std::vector<SvgAttr>;

class SvgWriter {
 public:
  /// An <svg> of `width` x `height` user units (pixels), viewBox the same.
  SvgWriter(double width, double height);

  /// <name attrs...> ... until the matching close().
  void open(const std::string& name, const SvgAttrs& attrs = {});
  void close();
  /// <name attrs.../>
  void leaf(const std::string& name, const SvgAttrs& attrs);
  /// <name attrs...>text</name>
  void text_element(const std::string& name, const SvgAttrs& attrs, const std::string& text);

  /// The document; closes what is still open.
  std::string finish();

 private:
  void start_tag(const std::string& name, const SvgAttrs& attrs);
  std::ostringstream out_;
  std::vector<std::string> open_;
};

}  // namespace trainbench
