#pragma once

#include <stdexcept>
#include <string>

namespace trainbench::worker {

/// Bad environment or configuration, detected before any training starts: the worker exits 2.
/// Every other exception makes it exit 1.
class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(const std::string& what) : std::runtime_error(what) {}
};

/// The run hung (core/analysis/hang.hpp's message): the master exits 3 with the message as its
/// termination message, which the operator reads as condition reason Hang.
class HangError : public std::runtime_error {
 public:
  explicit HangError(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace trainbench::worker
