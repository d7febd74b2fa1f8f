#pragma once

// A bound on the nesting of JSON read from the API server.

#include <cstddef>
#include <string_view>

namespace trainbench::kube {

/// The deepest nesting a Kubernetes API server accepts in a JSON body (Go's encoding/json stops at
/// 10000 levels and the server's decoders inherit that), so no object it stores nests deeper.
inline constexpr std::size_t kMaxJsonDepth = 10000;

/// Whether `text` nests arrays and objects deeper than `max_depth` (brackets inside strings do
/// not count). One linear pass, run before parsing: a nlohmann::json is copied, compared and
/// written recursively, one stack frame per level, so an answer 100,000 levels deep would
/// overflow the operator's stack long after it was parsed.
bool json_nesting_exceeds(std::string_view text, std::size_t max_depth = kMaxJsonDepth);

}  // namespace trainbench::kube
