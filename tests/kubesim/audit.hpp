#pragma once

// The request audit log: one JSON object per line in DIR/audit.log, flushed per request.
// Fields: ts, user, impersonator (if any), verb, apiGroup, apiVersion, resource, subresource,
// namespace, name, code, uri, userAgent.

#include <cstdio>
#include <mutex>
#include <string>

#include "util.hpp"

namespace kubesim {

class AuditLog {
 public:
  explicit AuditLog(const std::string& path);
  ~AuditLog();
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;
  void write(const json& entry);
  long long count() const;

 private:
  mutable std::mutex mu_;
  std::FILE* f_ = nullptr;
  long long count_ = 0;
};

}  // namespace kubesim
