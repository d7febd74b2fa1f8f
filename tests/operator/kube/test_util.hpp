#pragma once

// Small helpers for the kube client tests: temporary directories, files, environment overrides,
// and a ClientConfig pointing at a FakeApiServer.

#include <cstdlib>
#include <optional>
#include <string>

#include "operator/kube/config.hpp"

namespace kubetest {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  /// Writes `content` to path()/name (creating subdirectories) and returns the full path.
  std::string write(const std::string& name, const std::string& content) const;

 private:
  std::string path_;
};

/// Sets (or with nullopt unsets) an environment variable for the lifetime of the object.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, const std::optional<std::string>& value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

/// A config for `url` trusting the test CA, with `token`, no rate limit and short timeouts.
trainbench::kube::ClientConfig fake_config(const std::string& url, const std::string& token = "test-token");

}  // namespace kubetest
