#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace trainbench {

/// One problem in a BenchmarkJob, tied to the field it concerns.
/// `path` uses the Kubernetes field-path style: `spec.sweep[2].devicesPerNode`.
struct FieldError {
  std::string path;
  std::string message;  ///< e.g. "must be >= 1, got 0"

  std::string str() const { return path + ": " + message; }
};

/// Thrown when a document is not a valid BenchmarkJob; holds every problem found.
class SpecError : public std::runtime_error {
 public:
  explicit SpecError(std::vector<FieldError> errors);
  const std::vector<FieldError>& errors() const { return errors_; }

 private:
  std::vector<FieldError> errors_;
};

}  // namespace trainbench
