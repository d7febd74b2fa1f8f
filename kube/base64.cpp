#include "kube/base64.hpp"

#include <openssl/evp.h>

#include <cstring>

namespace trainbench::kube {
namespace {

// OpenSSL does the transform (EVP_EncodeBlock / EVP_DecodeBlock); this file only adds what
// OpenSSL does not report: where the input stops being strict base64, for kubeconfig's errors.

bool in_alphabet(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
}

std::string describe(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x21 && u < 0x7f) return std::string("'") + c + "'";
  static const char hex[] = "0123456789abcdef";
  return std::string("byte 0x") + hex[u >> 4] + hex[u & 15];
}

/// The input without line breaks, or an error naming the first offending offset.
std::optional<std::string> strict_text(std::string_view in, std::string& error, int& padding) {
  std::string text;
  text.reserve(in.size());
  int have = 0;  // sextets in the current quantum
  padding = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    if (c == '\n' || c == '\r') continue;
    if (c == '=') {
      if (have < 2) {
        error = "misplaced padding '=' at offset " + std::to_string(i);
        return std::nullopt;
      }
      ++padding;
      if (have + padding > 4) {
        error = "too much padding at offset " + std::to_string(i);
        return std::nullopt;
      }
    } else if (padding > 0) {
      error = "data after padding at offset " + std::to_string(i);
      return std::nullopt;
    } else if (!in_alphabet(c)) {
      error = "invalid character " + describe(c) + " at offset " + std::to_string(i);
      return std::nullopt;
    } else {
      have = (have + 1) % 4;
    }
    text += c;
  }
  if (text.size() % 4 != 0) {
    error = "truncated input (length is not a multiple of 4)";
    return std::nullopt;
  }
  return text;
}

}  // namespace

std::optional<std::string> base64_decode(std::string_view in, std::string* error) {
  std::string why;
  int padding = 0;
  const std::optional<std::string> text = strict_text(in, why, padding);
  if (!text) {
    if (error) *error = why;
    return std::nullopt;
  }
  std::string out(text->size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text->data()), static_cast<int>(text->size()));
  if (n < 0) {  // not reached after strict_text; kept so OpenSSL's own refusal is never ignored
    if (error) *error = "not base64";
    return std::nullopt;
  }
  out.resize(static_cast<std::size_t>(n - padding));  // EVP_DecodeBlock counts the padding's zero bytes
  if (base64_encode(out) != *text) {                  // unused low bits set in the final quantum
    if (error) *error = "non-canonical final quantum";
    return std::nullopt;
  }
  return out;
}

std::string base64_encode(std::string_view in) {
  std::string out((in.size() + 2) / 3 * 4 + 1, '\0');  // EVP_EncodeBlock writes a terminating NUL
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

}  // namespace trainbench::kube
