#include "util.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <limits>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <mutex>
#include <random>
#include <regex>
#include <sstream>
#include <stdexcept>

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <yaml-cpp/yaml.h>

namespace kubesim {

std::string human_duration(double seconds_f) {
  long long seconds = static_cast<long long>(std::floor(seconds_f));
  char buf[32];
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 60 * 2) { std::snprintf(buf, sizeof buf, "%llds", seconds); return buf; }
  long long minutes = seconds / 60;
  if (minutes < 10) {
    long long s = seconds % 60;
    if (s == 0) std::snprintf(buf, sizeof buf, "%lldm", minutes);
    else std::snprintf(buf, sizeof buf, "%lldm%llds", minutes, s);
    return buf;
  }
  if (minutes < 60 * 3) { std::snprintf(buf, sizeof buf, "%lldm", minutes); return buf; }
  long long hours = minutes / 60;
  if (hours < 8) {
    long long m = minutes % 60;
    if (m == 0) std::snprintf(buf, sizeof buf, "%lldh", hours);
    else std::snprintf(buf, sizeof buf, "%lldh%lldm", hours, m);
    return buf;
  }
  if (hours < 48) { std::snprintf(buf, sizeof buf, "%lldh", hours); return buf; }
  if (hours < 24 * 8) {
    long long hh = hours % 24;
    if (hh == 0) std::snprintf(buf, sizeof buf, "%lldd", hours / 24);
    else std::snprintf(buf, sizeof buf, "%lldd%lldh", hours / 24, hh);
    return buf;
  }
  if (hours < 24 * 365 * 2) { std::snprintf(buf, sizeof buf, "%lldd", hours / 24); return buf; }
  long long days = hours / 24;
  if (hours < 24 * 365 * 8) {
    long long dy = days % 365;
    if (dy == 0) std::snprintf(buf, sizeof buf, "%lldy", days / 365);
    else std::snprintf(buf, sizeof buf, "%lldy%lldd", days / 365, dy);
    return buf;
  }
  std::snprintf(buf, sizeof buf, "%lldy", days / 365);
  return buf;
}

std::string age_of(const std::string& timestamp) {
  if (timestamp.empty()) return "<unknown>";
  auto age = std::chrono::duration<double>(Clock::now() - parse_rfc3339(timestamp)).count();
  return human_duration(age);
}

namespace {
std::mt19937_64& rng() {
  static std::mt19937_64 gen{std::random_device{}()};
  return gen;
}
std::mutex rng_mu;
}  // namespace

std::string random_hex(std::size_t bytes) {
  std::string raw(bytes, '\0');
  RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(bytes));
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : raw) {
    out += hex[c >> 4];
    out += hex[c & 15];
  }
  return out;
}

std::string new_uid() {
  std::string h = random_hex(16);
  h[12] = '4';
  h[16] = "89ab"[std::stoi(h.substr(16, 1), nullptr, 16) & 3];
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) + "-" + h.substr(20);
}

std::string random_name_suffix(std::size_t n) {
  static const std::string alphabet = "bcdfghjklmnpqrstvwxz2456789";
  std::lock_guard<std::mutex> lock(rng_mu);
  std::uniform_int_distribution<std::size_t> dist(0, alphabet.size() - 1);
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += alphabet[dist(rng())];
  return out;
}

std::string base64url_encode(const std::string& data) {
  std::string s = base64_encode(data);
  while (!s.empty() && s.back() == '=') s.pop_back();
  for (char& c : s) {
    if (c == '+') c = '-';
    else if (c == '/') c = '_';
  }
  return s;
}

std::string base64url_decode(const std::string& text) {
  std::string s = text;
  for (char& c : s) {
    if (c == '-') c = '+';
    else if (c == '_') c = '/';
  }
  return base64_decode(s);
}

namespace {

json scalar_to_json(const YAML::Node& node) {
  const std::string& v = node.Scalar();
  if (node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str") return v;
  static const std::regex int_re("[-+]?[0-9]+");
  static const std::regex float_re("[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?");
  if (v.empty() || v == "~" || v == "null" || v == "Null" || v == "NULL") return nullptr;
  if (v == "true" || v == "True" || v == "TRUE") return true;
  if (v == "false" || v == "False" || v == "FALSE") return false;
  if (std::regex_match(v, int_re)) {
    try {
      return std::stoll(v);
    } catch (...) {
      return std::stod(v);
    }
  }
  if (v.size() > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'o')) {
    try {
      return std::stoll(v.substr(2), nullptr, v[1] == 'x' ? 16 : 8);
    } catch (...) {
      return v;
    }
  }
  if (std::regex_match(v, float_re)) return std::stod(v);
  if (v == ".inf" || v == ".Inf" || v == "+.inf") return std::numeric_limits<double>::infinity();
  if (v == "-.inf" || v == "-.Inf") return -std::numeric_limits<double>::infinity();
  return v;
}

json node_to_json(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Scalar:
      return scalar_to_json(node);
    case YAML::NodeType::Sequence: {
      json arr = json::array();
      for (const auto& item : node) arr.push_back(node_to_json(item));
      return arr;
    }
    case YAML::NodeType::Map: {
      json obj = json::object();
      for (const auto& kv : node) obj[kv.first.as<std::string>()] = node_to_json(kv.second);
      return obj;
    }
  }
  return nullptr;
}

}  // namespace

json yaml_to_json(const std::string& text) {
  try {
    return node_to_json(YAML::Load(text));
  } catch (const YAML::Exception& e) {
    throw std::runtime_error(std::string("yaml: ") + e.what());
  }
}

json parse_json_or_yaml(const std::string& text) {
  auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && (text[first] == '{' || text[first] == '[')) {
    try {
      return json::parse(text);
    } catch (const json::exception& e) {
      throw std::runtime_error(e.what());
    }
  }
  return yaml_to_json(text);
}

}  // namespace kubesim
