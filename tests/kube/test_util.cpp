#include "test_util.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "test_pki.hpp"

namespace kubetest {

std::string TempDir::write(const std::string& name, const std::string& content) const {
  const std::filesystem::path p = std::filesystem::path(path()) / name;
  std::filesystem::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << content;
  if (!out) throw std::runtime_error("cannot write " + p.string());
  return p.string();
}

ScopedEnv::ScopedEnv(std::string name, const std::optional<std::string>& value) : name_(std::move(name)) {
  if (const char* old = std::getenv(name_.c_str())) old_ = old;
  if (value) {
    ::setenv(name_.c_str(), value->c_str(), 1);
  } else {
    ::unsetenv(name_.c_str());
  }
}

ScopedEnv::~ScopedEnv() {
  if (old_) {
    ::setenv(name_.c_str(), old_->c_str(), 1);
  } else {
    ::unsetenv(name_.c_str());
  }
}

trainbench::kube::ClientConfig fake_config(const std::string& url, const std::string& token) {
  trainbench::kube::ClientConfig cfg;
  cfg.server = url;
  cfg.tls.ca_pem = test_pki().ca.cert_pem;
  cfg.tls.ca_origin = "test CA";
  cfg.token = token;
  cfg.qps = 0;
  cfg.timeout = std::chrono::milliseconds(5000);
  cfg.source = "test";
  return cfg;
}

}  // namespace kubetest
