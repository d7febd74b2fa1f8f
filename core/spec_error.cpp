#include "core/spec_error.hpp"

namespace trainbench {
namespace {

std::string join(const std::vector<FieldError>& errors) {
  std::string out;
  for (const auto& e : errors) {
    if (!out.empty()) out += "\n";
    out += e.str();
  }
  return out.empty() ? std::string("invalid BenchmarkJob") : out;
}

}  // namespace

SpecError::SpecError(std::vector<FieldError> errors)
    : std::runtime_error(join(errors)), errors_(std::move(errors)) {}

}  // namespace trainbench
