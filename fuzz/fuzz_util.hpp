#pragma once

// Shared by the libFuzzer harnesses in fuzz/: a harness reports a broken property with
// FUZZ_CHECK (prints what and where, then aborts, which libFuzzer records as a crash).

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

namespace trainbench::fuzz {

[[noreturn]] inline void fail(const char* file, int line, const std::string& what) {
  std::fprintf(stderr, "%s:%d: fuzz property broken: %s\n", file, line, what.c_str());
  std::abort();
}

inline std::string as_string(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// dump() that never throws on invalid UTF-8 (for messages).
inline std::string safe_dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace trainbench::fuzz

#define FUZZ_CHECK(cond, what)                                       \
  do {                                                               \
    if (!(cond)) ::trainbench::fuzz::fail(__FILE__, __LINE__, what); \
  } while (0)
