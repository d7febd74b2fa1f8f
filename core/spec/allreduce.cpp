#include "core/spec/allreduce.hpp"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "core/spec/json_fields.hpp"
#include "core/util/stats.hpp"
#include "core/util/text_cells.hpp"

namespace trainbench {

namespace jf = json_fields;

namespace {

std::string fmt_gbps(double v) { return printf_str(v >= 100 ? "%.1f" : (v >= 0.1 ? "%.2f" : "%.4f"), v); }

std::string fmt_us(double v) { return printf_str(v >= 100 ? "%.1f" : "%.2f", v); }

/// Nearest powers of two around v (v >= 1), for error messages.
std::string nearest_powers(std::int64_t v) {
  std::int64_t lo = 1;
  while (lo * 2 <= v) lo *= 2;
  return std::to_string(lo) + " or " + std::to_string(lo * 2);
}

nlohmann::json limit_json(const MemoryCopyLimit& l) {
  return {{"kind", l.kind}, {"bytesPerSec", l.bytes_per_sec}, {"bufferBytes", l.buffer_bytes}, {"copies", l.copies}};
}

MemoryCopyLimit limit_from_json(const nlohmann::json& j, const std::string& path) {
  jf::require_object(j, path);
  MemoryCopyLimit l;
  l.kind = jf::get_string(j, "kind", path);
  l.bytes_per_sec = jf::get_number(j, "bytesPerSec", path);
  l.buffer_bytes = jf::get_int(j, "bufferBytes", path);
  l.copies = jf::get_int32(j, "copies", path);
  if (!(l.bytes_per_sec >= 0)) throw std::runtime_error(path + ".bytesPerSec: must be >= 0");
  return l;
}

}  // namespace

const std::vector<std::string>& known_allreduce_dtypes() {
  static const std::vector<std::string> v{"fp32", "fp16", "bf16"};
  return v;
}

int allreduce_element_bytes(const std::string& dtype) {
  if (dtype == "fp32") return 4;
  if (dtype == "fp16" || dtype == "bf16") return 2;
  throw std::invalid_argument("unknown all-reduce dtype '" + dtype + "' (expected fp32, fp16 or bf16)");
}

bool is_power_of_two(std::int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

std::vector<std::int64_t> allreduce_size_values() { return allreduce_sizes(kAllreduceMinBytes, kAllreduceMaxBytes); }

std::vector<std::int64_t> allreduce_sizes(std::int64_t min_bytes, std::int64_t max_bytes) {
  if (!is_power_of_two(min_bytes) || !is_power_of_two(max_bytes) || min_bytes > max_bytes) {
    throw std::invalid_argument("all-reduce sizes: min and max must be powers of two with min <= max, got " +
                                std::to_string(min_bytes) + " and " + std::to_string(max_bytes));
  }
  std::vector<std::int64_t> out;
  for (std::int64_t s = min_bytes; s <= max_bytes; s *= 2) out.push_back(s);
  return out;
}

std::vector<FieldError> validate_allreduce(const AllreduceSpec& s, const std::string& path) {
  std::vector<FieldError> errors;
  auto check_size = [&](const std::string& field, std::int64_t v) {
    const std::string p = path + "." + field;
    if (v < kAllreduceMinBytes || v > kAllreduceMaxBytes) {
      errors.push_back({p, "must be a power of two from " + std::to_string(kAllreduceMinBytes) + " to " +
                               std::to_string(kAllreduceMaxBytes) + " (1 GiB), got " + std::to_string(v)});
      return false;
    }
    if (!is_power_of_two(v)) {
      errors.push_back({p, "must be a power of two (sizes are swept by doubling), got " + std::to_string(v) +
                               "; use " + nearest_powers(v)});
      return false;
    }
    return true;
  };
  const bool min_ok = check_size("minBytes", s.min_bytes);
  const bool max_ok = check_size("maxBytes", s.max_bytes);
  if (min_ok && max_ok && s.min_bytes > s.max_bytes) {
    errors.push_back({path + ".minBytes", "must be <= maxBytes (" + std::to_string(s.max_bytes) + "), got " +
                                              std::to_string(s.min_bytes)});
  }
  const auto& dtypes = known_allreduce_dtypes();
  if (std::find(dtypes.begin(), dtypes.end(), s.dtype) == dtypes.end()) {
    errors.push_back({path + ".dtype", "must be one of [fp32, fp16, bf16], got \"" + s.dtype + "\""});
  }
  return errors;
}

nlohmann::json to_json(const AllreduceSpec& s) {
  return {{"minBytes", s.min_bytes}, {"maxBytes", s.max_bytes}, {"dtype", s.dtype}};
}

double allreduce_algbw(std::int64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / seconds : 0.0;
}

double allreduce_busbw_factor(int world_size) {
  return world_size > 0 ? 2.0 * (world_size - 1) / world_size : 0.0;
}

double allreduce_busbw(std::int64_t bytes, double seconds, int world_size) {
  return allreduce_algbw(bytes, seconds) * allreduce_busbw_factor(world_size);
}

nlohmann::json to_json(const AllreduceRunInfo& i) {
  return {{"dtype", i.dtype},
          {"sizesBytes", i.sizes_bytes},
          {"limit", limit_json(i.limit)},
          {"warmupOps", i.warmup_ops},
          {"opsPerRepeat", i.ops_per_repeat},
          {"verified", i.verified}};
}

AllreduceRunInfo allreduce_run_info_from_json(const nlohmann::json& j, const std::string& p) {
  jf::require_object(j, p);
  AllreduceRunInfo i;
  i.dtype = jf::get_string(j, "dtype", p);
  const auto& sizes = jf::get_array(j, "sizesBytes", p);
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    if (!sizes[k].is_number_integer() || sizes[k].get<std::int64_t>() < 1) {
      throw std::runtime_error(p + ".sizesBytes[" + std::to_string(k) + "]: must be an integer >= 1");
    }
    i.sizes_bytes.push_back(sizes[k].get<std::int64_t>());
  }
  if (i.sizes_bytes.empty()) throw std::runtime_error(p + ".sizesBytes: must not be empty");
  i.limit = limit_from_json(jf::member(j, "limit", p), p + ".limit");
  i.warmup_ops = jf::get_int32(j, "warmupOps", p);
  i.ops_per_repeat = jf::get_int32(j, "opsPerRepeat", p);
  i.verified = jf::get_bool(j, "verified", p);
  return i;
}

AllreduceReport summarize_allreduce(const AllreduceRunInfo& info,
                                    const std::vector<std::vector<std::vector<double>>>& rank_seconds,
                                    int world_size) {
  if (rank_seconds.empty()) throw std::runtime_error("all-reduce result: no ranks");
  const std::size_t repeats = rank_seconds.front().size();
  const std::size_t nsizes = info.sizes_bytes.size();
  if (repeats == 0) throw std::runtime_error("all-reduce result: no repeats");
  for (std::size_t r = 0; r < rank_seconds.size(); ++r) {
    if (rank_seconds[r].size() != repeats) {
      throw std::runtime_error("all-reduce result: ranks disagree on the number of repeats");
    }
    for (const auto& rep : rank_seconds[r]) {
      if (rep.size() != nsizes) {
        throw std::runtime_error("all-reduce result: rank " + std::to_string(r) + " has " + std::to_string(rep.size()) +
                                 " timings per repeat, expected one per size (" + std::to_string(nsizes) + ")");
      }
    }
  }
  const int element_bytes = allreduce_element_bytes(info.dtype);
  AllreduceReport out;
  out.dtype = info.dtype;
  out.world_size = world_size;
  out.warmup_ops = info.warmup_ops;
  out.ops_per_repeat = info.ops_per_repeat;
  out.repeats = static_cast<int>(repeats);
  out.verified = info.verified;
  out.limit = info.limit;
  for (std::size_t s = 0; s < nsizes; ++s) {
    std::vector<double> per_repeat;
    for (std::size_t rep = 0; rep < repeats; ++rep) {
      double sum = 0;
      for (const auto& rank : rank_seconds) sum += rank[rep][s];
      per_repeat.push_back(sum / static_cast<double>(rank_seconds.size()));
    }
    const double sec = median(per_repeat);
    AllreduceSizeReport row;
    row.bytes = info.sizes_bytes[s];
    row.elements = row.bytes / element_bytes;
    row.time_us = sec * 1e6;
    row.algbw_gbps = allreduce_algbw(row.bytes, sec) / 1e9;
    row.busbw_gbps = allreduce_busbw(row.bytes, sec, world_size) / 1e9;
    row.busbw_fraction = info.limit.bytes_per_sec > 0 ? row.busbw_gbps * 1e9 / info.limit.bytes_per_sec : 0.0;
    out.sizes.push_back(row);
  }
  return out;
}

nlohmann::json to_json(const AllreduceReport& r) {
  nlohmann::json sizes = nlohmann::json::array();
  for (const auto& s : r.sizes) {
    sizes.push_back({{"bytes", s.bytes},
                     {"elements", s.elements},
                     {"timeUs", s.time_us},
                     {"algbwGBps", s.algbw_gbps},
                     {"busbwGBps", s.busbw_gbps},
                     {"busbwFractionOfLimit", s.busbw_fraction}});
  }
  return {{"dtype", r.dtype},
          {"worldSize", r.world_size},
          {"busbwFactor", allreduce_busbw_factor(r.world_size)},
          {"warmupOps", r.warmup_ops},
          {"opsPerRepeat", r.ops_per_repeat},
          {"repeats", r.repeats},
          {"verified", r.verified},
          {"limit", limit_json(r.limit)},
          {"sizes", sizes}};
}

AllreduceReport allreduce_report_from_json(const nlohmann::json& j, const std::string& p) {
  jf::require_object(j, p);
  AllreduceReport r;
  r.dtype = jf::get_string(j, "dtype", p);
  r.world_size = jf::get_int32(j, "worldSize", p);
  r.warmup_ops = jf::get_int32(j, "warmupOps", p);
  r.ops_per_repeat = jf::get_int32(j, "opsPerRepeat", p);
  r.repeats = jf::get_int32(j, "repeats", p);
  r.verified = jf::get_bool(j, "verified", p);
  r.limit = limit_from_json(jf::member(j, "limit", p), p + ".limit");
  const auto& sizes = jf::get_array(j, "sizes", p);
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    const std::string sp = p + ".sizes[" + std::to_string(k) + "]";
    jf::require_object(sizes[k], sp);
    AllreduceSizeReport s;
    s.bytes = jf::get_int(sizes[k], "bytes", sp);
    s.elements = jf::get_int(sizes[k], "elements", sp);
    s.time_us = jf::get_number(sizes[k], "timeUs", sp);
    s.algbw_gbps = jf::get_number(sizes[k], "algbwGBps", sp);
    s.busbw_gbps = jf::get_number(sizes[k], "busbwGBps", sp);
    s.busbw_fraction = jf::get_number(sizes[k], "busbwFractionOfLimit", sp);
    r.sizes.push_back(s);
  }
  return r;
}

std::string format_byte_size(std::int64_t b) {
  if (b >= (1LL << 30) && b % (1LL << 30) == 0) return std::to_string(b >> 30) + " GiB";
  if (b >= (1LL << 20) && b % (1LL << 20) == 0) return std::to_string(b >> 20) + " MiB";
  if (b >= (1LL << 10) && b % (1LL << 10) == 0) return std::to_string(b >> 10) + " KiB";
  return std::to_string(b) + " B";
}

std::string format_allreduce_table(const AllreduceReport& r, const std::string& title) {
  std::ostringstream os;
  const double limit_gbps = r.limit.bytes_per_sec / 1e9;
  os << title << ": all-reduce, " << r.dtype << ", " << r.world_size << (r.world_size == 1 ? " rank" : " ranks")
     << " (busbw = algbw x " << printf_str("%.3g", allreduce_busbw_factor(r.world_size)) << ")\n";
  os << "limit: " << (r.limit.kind == "deviceMemcpy" ? "device" : "host") << " memcpy " << fmt_gbps(limit_gbps)
     << " GB/s (" << format_byte_size(r.limit.buffer_bytes) << " buffer, best of " << r.limit.copies << ")"
     << "; time = p50 over " << r.repeats << " repeats of " << r.ops_per_repeat << " back-to-back all-reduces"
     << " (after " << r.warmup_ops << " warm-up), mean over ranks; sums "
     << (r.verified ? "verified" : "NOT verified") << "\n\n";
  os << pad_left("size", 10) << pad_left("count", 12) << pad_left("time (us)", 13) << pad_left("algbw GB/s", 12)
     << pad_left("busbw GB/s", 12) << pad_left("busbw/limit", 13) << "\n";
  for (const auto& s : r.sizes) {
    os << pad_left(format_byte_size(s.bytes), 10) << pad_left(std::to_string(s.elements), 12)
       << pad_left(fmt_us(s.time_us), 13) << pad_left(fmt_gbps(s.algbw_gbps), 12)
       << pad_left(fmt_gbps(s.busbw_gbps), 12)
       << pad_left(r.limit.bytes_per_sec > 0 ? printf_str("%.4f", s.busbw_fraction) : std::string("-"), 13) << "\n";
  }
  return os.str();
}

std::string format_allreduce_diff(const AllreduceReport& base, const AllreduceReport& test, const std::string& title) {
  std::ostringstream os;
  os << title << ": all-reduce busbw (GB/s), baseline " << base.dtype << " vs test " << test.dtype
     << "; limit " << fmt_gbps(base.limit.bytes_per_sec / 1e9) << " vs " << fmt_gbps(test.limit.bytes_per_sec / 1e9)
     << " GB/s\n";
  os << pad_left("size", 10) << pad_left("baseline", 12) << pad_left("test", 12) << pad_left("diff", 9)
     << pad_left("b/limit", 10) << pad_left("t/limit", 10) << "\n";
  std::vector<std::int64_t> sizes;
  for (const auto& s : base.sizes) sizes.push_back(s.bytes);
  for (const auto& s : test.sizes) {
    if (std::find(sizes.begin(), sizes.end(), s.bytes) == sizes.end()) sizes.push_back(s.bytes);
  }
  std::sort(sizes.begin(), sizes.end());
  auto find = [](const AllreduceReport& r, std::int64_t bytes) -> const AllreduceSizeReport* {
    for (const auto& s : r.sizes) {
      if (s.bytes == bytes) return &s;
    }
    return nullptr;
  };
  for (const auto bytes : sizes) {
    const auto* b = find(base, bytes);
    const auto* t = find(test, bytes);
    os << pad_left(format_byte_size(bytes), 10);
    if (!b || !t) {
      os << "  only in " << (b ? "baseline" : "test") << "\n";
      continue;
    }
    const std::string d =
        b->busbw_gbps > 0 ? printf_str("%+.1f%%", (t->busbw_gbps - b->busbw_gbps) / b->busbw_gbps * 100.0) : "n/a";
    os << pad_left(fmt_gbps(b->busbw_gbps), 12) << pad_left(fmt_gbps(t->busbw_gbps), 12) << pad_left(d, 9)
       << pad_left(printf_str("%.3f", b->busbw_fraction), 10) << pad_left(printf_str("%.3f", t->busbw_fraction), 10)
       << "\n";
  }
  return os.str();
}

}  // namespace trainbench
