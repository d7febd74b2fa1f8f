#include "kube/base64.hpp"

#include <cstdint>

namespace trainbench::kube {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int value_of(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

std::string describe(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x21 && u < 0x7f) return std::string("'") + c + "'";
  static const char hex[] = "0123456789abcdef";
  return std::string("byte 0x") + hex[u >> 4] + hex[u & 15];
}

}  // namespace

std::optional<std::string> base64_decode(std::string_view in, std::string* error) {
  auto fail = [&](std::string msg) -> std::optional<std::string> {
    if (error) *error = std::move(msg);
    return std::nullopt;
  };
  std::string out;
  out.reserve(in.size() / 4 * 3);
  std::uint32_t acc = 0;
  int have = 0;     // sextets in the current quantum
  int padding = 0;  // '=' seen
  for (std::size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    if (c == '\n' || c == '\r') continue;
    if (c == '=') {
      if (have < 2) return fail("misplaced padding '=' at offset " + std::to_string(i));
      ++padding;
      if (have + padding > 4) return fail("too much padding at offset " + std::to_string(i));
      continue;
    }
    if (padding > 0) return fail("data after padding at offset " + std::to_string(i));
    const int v = value_of(c);
    if (v < 0) return fail("invalid character " + describe(c) + " at offset " + std::to_string(i));
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    if (++have == 4) {
      out += static_cast<char>((acc >> 16) & 0xff);
      out += static_cast<char>((acc >> 8) & 0xff);
      out += static_cast<char>(acc & 0xff);
      acc = 0;
      have = 0;
    }
  }
  if (have == 0 && padding == 0) return out;
  if (have + padding != 4) return fail("truncated input (length is not a multiple of 4)");
  if (have == 2) {
    if (acc & 0xf) return fail("non-canonical final quantum");
    out += static_cast<char>((acc >> 4) & 0xff);
  } else {  // have == 3
    if (acc & 0x3) return fail("non-canonical final quantum");
    out += static_cast<char>((acc >> 10) & 0xff);
    out += static_cast<char>((acc >> 2) & 0xff);
  }
  return out;
}

std::string base64_encode(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const std::uint32_t n = (static_cast<unsigned char>(in[i]) << 16) |
                            (static_cast<unsigned char>(in[i + 1]) << 8) | static_cast<unsigned char>(in[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += kAlphabet[(n >> 6) & 63];
    out += kAlphabet[n & 63];
  }
  if (i + 1 == in.size()) {
    const std::uint32_t n = static_cast<unsigned char>(in[i]) << 16;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    const std::uint32_t n = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += kAlphabet[(n >> 6) & 63];
    out += '=';
  }
  return out;
}

}  // namespace trainbench::kube
