#include "audit.hpp"

#include <stdexcept>

namespace kubesim {

AuditLog::AuditLog(const std::string& path) {
  f_ = std::fopen(path.c_str(), "a");
  if (!f_) throw std::runtime_error("cannot open " + path);
}

AuditLog::~AuditLog() {
  if (f_) std::fclose(f_);
}

void AuditLog::write(const json& entry) {
  std::string line = entry.dump() + "\n";
  std::lock_guard<std::mutex> lock(mu_);
  std::fwrite(line.data(), 1, line.size(), f_);
  std::fflush(f_);
  ++count_;
}

long long AuditLog::count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return count_;
}

}  // namespace kubesim
