#pragma once

// The cells of the text tables (core/report/report_format, core/spec/allreduce, core/report/hybrid_ps_report):
// numbers formatted the same way everywhere, and padding to a column width.

#include <cstddef>
#include <cstdint>
#include <string>

namespace trainbench {

/// snprintf of one double.
std::string printf_str(const char* fmt, double v);
/// `s` right-aligned / left-aligned in `width` characters (never cut).
std::string pad_left(const std::string& s, std::size_t width);
std::string pad_right(const std::string& s, std::size_t width);
/// Seconds per iteration: "0.0046s" below 10 ms, else "0.150s".
std::string fmt_sec(double seconds);
/// A rate: "133/s" from 100 up, "50.0/s" from 10, else "5.00/s".
std::string fmt_rate(double per_second);
/// Bytes in MiB ("164.4 MiB"), in GiB from 1 GiB ("4.38 GiB").
std::string fmt_bytes(std::int64_t bytes);

}  // namespace trainbench
