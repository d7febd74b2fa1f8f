#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace trainbench::kube {

/// Strict standard base64 (RFC 4648, with padding) as kubeconfig's `*-data` fields use.
/// Line breaks (\r, \n) are skipped. Returns nullopt and sets `error` (e.g. "invalid character
/// '%' at offset 12") on anything else that is not base64.
std::optional<std::string> base64_decode(std::string_view in, std::string* error = nullptr);

std::string base64_encode(std::string_view in);

}  // namespace trainbench::kube
