#pragma once

namespace trainbench {

/// The trainbench release, shown in every report's environment header.
inline constexpr const char* kVersion = "0.1.0";

}  // namespace trainbench
