#pragma once

// Small helpers for the kube client tests: temporary directories, files, environment overrides,
// and a ClientConfig pointing at a FakeApiServer.

#include <cstdlib>
#include <optional>
#include <string>

#include "kube/config.hpp"
#include "temp_dir.hpp"

namespace kubetest {

/// tests/support's TempDir, plus writing files into it.
class TempDir : public trainbench::test::TempDir {
 public:
  /// Writes `content` to path()/name (creating subdirectories) and returns the full path.
  std::string write(const std::string& name, const std::string& content) const;
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
