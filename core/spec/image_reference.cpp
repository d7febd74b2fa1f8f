// Image references checked by their grammar (core/spec/image_reference.hpp), part by part, so that
// an error names the part: the repository, the tag or the digest.

#include "core/spec/image_reference.hpp"

#include <algorithm>
#include <cstddef>
#include <string_view>

#include "core/spec/spec_messages.hpp"

namespace trainbench {
namespace {

using spec_messages::quote;

bool is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool is_alnum(char c) { return is_lower_alnum(c) || (c >= 'A' && c <= 'Z'); }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool is_lower_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f'); }
/// Every character any part of a reference may hold.
bool is_reference_char(char c) {
  return is_alnum(c) || c == '-' || c == '_' || c == '.' || c == ':' || c == '/' || c == '@' || c == '[' ||
         c == ']' || c == '+';
}

template <typename Pred>
bool all_of(std::string_view s, Pred pred) {
  return std::all_of(s.begin(), s.end(), pred);
}

/// [a-z0-9]+ (("." | "_" | "__" | "-"+) [a-z0-9]+)*
bool is_path_component(std::string_view s) {
  std::size_t i = 0;
  const auto run = [&] {
    const std::size_t start = i;
    while (i < s.size() && is_lower_alnum(s[i])) ++i;
    return i > start;
  };
  if (!run()) return false;
  while (i < s.size()) {
    if (s[i] == '_') {
      ++i;
      if (i < s.size() && s[i] == '_') ++i;
    } else if (s[i] == '.') {
      ++i;
    } else if (s[i] == '-') {
      while (i < s.size() && s[i] == '-') ++i;
    } else {
      return false;
    }
    if (!run()) return false;
  }
  return true;
}

/// [a-zA-Z0-9] ([-a-zA-Z0-9]* [a-zA-Z0-9])?
bool is_domain_component(std::string_view s) {
  return !s.empty() && is_alnum(s.front()) && is_alnum(s.back()) &&
         all_of(s, [](char c) { return is_alnum(c) || c == '-'; });
}

bool is_host(std::string_view s) {
  if (!s.empty() && s.front() == '[') {
    return s.size() > 2 && s.back() == ']' &&
           all_of(s.substr(1, s.size() - 2), [](char c) { return is_hex(c) || c == ':'; });
  }
  for (std::size_t start = 0;;) {
    const std::size_t dot = s.find('.', start);
    if (!is_domain_component(s.substr(start, dot == std::string_view::npos ? dot : dot - start))) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

/// host [":" port]
bool is_domain(std::string_view s) {
  const std::size_t bracket = s.rfind(']');
  const std::size_t colon = s.find(':', bracket == std::string_view::npos ? 0 : bracket);
  if (colon == std::string_view::npos) return is_host(s);
  const std::string_view port = s.substr(colon + 1);
  return is_host(s.substr(0, colon)) && !port.empty() && all_of(port, is_digit);
}

/// path-component ("/" path-component)*, each component tested by `component`.
template <typename Pred>
bool is_path(std::string_view s, Pred component) {
  for (std::size_t start = 0;;) {
    const std::size_t slash = s.find('/', start);
    if (!component(s.substr(start, slash == std::string_view::npos ? slash : slash - start))) return false;
    if (slash == std::string_view::npos) return true;
    start = slash + 1;
  }
}

/// [domain "/"] path; the grammar reads a first component as a domain only where the rest is a path.
bool is_name(std::string_view s, bool (*component)(std::string_view)) {
  if (is_path(s, component)) return true;
  const std::size_t slash = s.find('/');
  return slash != std::string_view::npos && is_domain(s.substr(0, slash)) && is_path(s.substr(slash + 1), component);
}

bool is_lowercased_path_component(std::string_view s) {
  std::string lower(s);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  });
  return is_path_component(lower);
}

std::string name_problem(std::string_view name) {
  const std::string n = quote(std::string(name));
  if (name.empty()) return "the repository is empty";
  if (is_name(name, is_path_component)) return "";
  if (name.find("//") != std::string_view::npos || name.front() == '/' || name.back() == '/') {
    return "the repository " + n + " has an empty path component";
  }
  if (is_name(name, is_lowercased_path_component)) return "the repository " + n + " must be lowercase";
  return "the repository " + n +
         " is not [HOST[:PORT]/]PATH, its path components lowercase letters and digits separated by "
         "'.', '_', '__' or '-'";
}

std::string tag_problem(std::string_view tag) {
  const bool ok = !tag.empty() && tag.size() <= 128 && (is_alnum(tag.front()) || tag.front() == '_') &&
                  all_of(tag, [](char c) { return is_alnum(c) || c == '_' || c == '.' || c == '-'; });
  if (ok) return "";
  return "the tag " + quote(std::string(tag)) +
         " must be 1 to 128 letters, digits, '_', '.' or '-', not starting with '.' or '-'";
}

bool is_algorithm_separator(char c) { return c == '-' || c == '_' || c == '+' || c == '.'; }

/// [A-Za-z][A-Za-z0-9]* ([-_+.] [A-Za-z][A-Za-z0-9]*)*: a component starts after each separator.
bool is_algorithm(std::string_view s) {
  bool component_start = true;
  for (char c : s) {
    if (component_start ? !is_alpha(c) : !(is_alnum(c) || is_algorithm_separator(c))) return false;
    component_start = is_algorithm_separator(c);
  }
  return !s.empty() && !component_start;
}

std::string digest_problem(std::string_view digest) {
  const std::string d = quote(std::string(digest));
  const std::size_t colon = digest.find(':');
  const std::string_view algorithm = digest.substr(0, colon);
  const std::string_view hex = colon == std::string_view::npos ? std::string_view() : digest.substr(colon + 1);
  if (colon == std::string_view::npos || !is_algorithm(algorithm) || hex.size() < 32 || !all_of(hex, is_hex)) {
    return "the digest " + d + " must be ALGORITHM:HEX with at least 32 hex digits (sha256: and 64 lowercase hex "
           "digits)";
  }
  for (const RegisteredDigest& r : registered_digests()) {
    if (algorithm == r.algorithm &&
        (hex.size() != static_cast<std::size_t>(r.hex_digits) || !all_of(hex, is_lower_hex))) {
      return "the digest " + d + " must be " + r.algorithm + ": and " + std::to_string(r.hex_digits) +
             " lowercase hex digits, got " + std::to_string(hex.size());
    }
  }
  return "";
}

}  // namespace

const std::vector<RegisteredDigest>& registered_digests() {
  static const std::vector<RegisteredDigest> kDigests{{"sha256", 64}, {"sha384", 96}, {"sha512", 128}};
  return kDigests;
}

std::string image_reference_problem(const std::string& ref) {
  const auto bad = std::find_if_not(ref.begin(), ref.end(), is_reference_char);
  if (bad != ref.end()) {
    return "contains " + quote(std::string(1, *bad)) + ", which no part of an image reference may hold";
  }
  std::string_view rest = ref;
  std::string problem;
  if (const std::size_t at = rest.find('@'); at != std::string_view::npos) {
    problem = digest_problem(rest.substr(at + 1));
    rest = rest.substr(0, at);
  }
  const std::size_t colon = rest.rfind(':');
  const std::size_t slash = rest.rfind('/');
  if (problem.empty() && colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash)) {
    problem = tag_problem(rest.substr(colon + 1));
    rest = rest.substr(0, colon);
  }
  return problem.empty() ? name_problem(rest) : problem;
}

std::string image_reference_message(const std::string& ref) {
  const std::string problem = image_reference_problem(ref);
  if (problem.empty()) return "";
  return "must be an image reference, [HOST[:PORT]/]PATH[:TAG][@DIGEST]: " + problem + ", got " + quote(ref);
}

std::string image_digest_cel_rule() {
  std::string rule;
  for (const RegisteredDigest& r : registered_digests()) {
    const std::string at = std::string("@") + r.algorithm + ":";
    rule += std::string(rule.empty() ? "" : " && ") + "(!self.contains('" + at + "') || self.matches('" + at +
            "[a-f0-9]{" + std::to_string(r.hex_digits) + "}$'))";
  }
  return rule;
}

std::string image_digest_rule_message() {
  std::string lengths;
  for (const RegisteredDigest& r : registered_digests()) {
    lengths += std::string(lengths.empty() ? "" : ", ") + r.algorithm + " " + std::to_string(r.hex_digits);
  }
  return "a digest of a registered algorithm is lowercase hex of its length (" + lengths + ")";
}

}  // namespace trainbench
