#pragma once

#include <cstddef>
#include <optional>
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

/// Thrown when a document is not a valid BenchmarkJob; holds every problem found. Paths and
/// messages are made printable (escape_invalid_utf8) here, so no error echoes raw invalid bytes.
class SpecError : public std::runtime_error {
 public:
  explicit SpecError(std::vector<FieldError> errors);
  const std::vector<FieldError>& errors() const { return errors_; }
  /// what(), cut to at most `max_bytes` bytes at an error boundary with "... and N more errors"
  /// (a status condition's message has a bound: kMaxConditionMessageLength).
  std::string summary(std::size_t max_bytes) const;

 private:
  std::vector<FieldError> errors_;
};

/// The byte offset of the first byte of `s` that is not part of a well-formed UTF-8 sequence
/// (overlong forms, surrogates and code points past U+10FFFF count as ill-formed); nullopt when
/// `s` is valid UTF-8.
std::optional<std::size_t> invalid_utf8_offset(const std::string& s);

/// `s` with every byte outside a well-formed UTF-8 sequence, and every ASCII control character,
/// written as \xNN; valid text is unchanged.
std::string escape_invalid_utf8(const std::string& s);

/// Untrusted text for an error message: escape_invalid_utf8, newlines and tabs as \n and \t,
/// cut after `max_bytes` bytes of the input with "... (N bytes)" appended, so a 100 KB value
/// does not make a 100 KB message.
std::string printable(const std::string& s, std::size_t max_bytes = 80);

}  // namespace trainbench
