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

std::string rfc3339(Clock::time_point t) {
  std::time_t secs = Clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string now_rfc3339() { return rfc3339(Clock::now()); }

std::string now_rfc3339_micro() {
  auto now = Clock::now();
  std::time_t secs = Clock::to_time_t(now);
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() % 1000000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[48];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[64];
  std::snprintf(out, sizeof out, "%s.%06lldZ", buf, static_cast<long long>(micros));
  return out;
}

Clock::time_point parse_rfc3339(const std::string& s) {
  std::tm tm{};
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, se = 0;
  if (std::sscanf(s.c_str(), "%d-%d-%dT%d:%d:%d", &y, &mo, &d, &h, &mi, &se) != 6) return Clock::time_point{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = se;
  auto t = Clock::from_time_t(timegm(&tm));
  // fractional seconds and offset
  std::size_t pos = 19;
  if (pos < s.size() && s[pos] == '.') {
    std::size_t end = pos + 1;
    while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end]))) ++end;
    double frac = std::stod("0" + s.substr(pos, end - pos));
    t += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(frac));
    pos = end;
  }
  if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int oh = 0, om = 0;
    if (std::sscanf(s.c_str() + pos + 1, "%d:%d", &oh, &om) == 2) {
      auto off = std::chrono::hours(oh) + std::chrono::minutes(om);
      if (s[pos] == '+') t -= off; else t += off;
    }
  }
  return t;
}

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

std::string base64_encode(const std::string& data) {
  std::string out(4 * ((data.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(data.data()), static_cast<int>(data.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::string base64_decode(const std::string& text) {
  std::string clean;
  for (char c : text) {
    if (c == '\n' || c == '\r' || c == ' ' || c == '\t') continue;
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/' || c == '=')) {
      throw std::runtime_error("illegal base64 data");
    }
    clean += c;
  }
  std::size_t pad = 0;
  while (clean.size() % 4 != 0) {
    clean += '=';
    ++pad;
  }
  if (pad == 3) throw std::runtime_error("illegal base64 data");
  if (clean.empty()) return "";
  std::string out(clean.size() / 4 * 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(clean.data()), static_cast<int>(clean.size()));
  if (n < 0) throw std::runtime_error("illegal base64 data");
  std::size_t eq = 0;
  for (std::size_t i = clean.size(); i > 0 && clean[i - 1] == '='; --i) ++eq;
  out.resize(static_cast<std::size_t>(n) - eq);
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

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string to_lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string url_decode(const std::string& s, bool plus_is_space) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else if (s[i] == '+' && plus_is_space) {
      out += ' ';
    } else {
      out += s[i];
    }
  }
  return out;
}

const json* json_path(const json& obj, const std::string& dotted) {
  const json* cur = &obj;
  for (const auto& part : split(dotted, '.')) {
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(part);
    if (it == cur->end()) return nullptr;
    cur = &*it;
  }
  return cur;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file_atomic(const std::string& path, const std::string& data, unsigned mode) {
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) throw std::runtime_error("cannot write " + tmp);
  std::size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n <= 0) {
      ::close(fd);
      throw std::runtime_error("cannot write " + tmp);
    }
    off += static_cast<std::size_t>(n);
  }
  ::fchmod(fd, mode);
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) throw std::runtime_error("cannot rename " + tmp);
}

}  // namespace kubesim
