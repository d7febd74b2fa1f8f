#include "worker/rank_env.hpp"

#include <cerrno>
#include <climits>
#include <cstdlib>

#include "worker/worker_error.hpp"

namespace trainbench::worker {
namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

class Reader {
 public:
  explicit Reader(const EnvLookup& lookup) : lookup_(lookup) {}

  bool has(const std::string& name) const { return lookup_(name).has_value(); }

  std::string required_string(const std::string& name, const std::string& why) const {
    auto v = lookup_(name);
    if (!v || trim(*v).empty()) {
      throw ConfigError("environment variable " + name + " is not set" + why);
    }
    return trim(*v);
  }

  int required_int(const std::string& name, const std::string& why) const {
    auto v = lookup_(name);
    if (!v) throw ConfigError("environment variable " + name + " is not set" + why);
    return to_int(name, *v);
  }

  std::optional<int> optional_int(const std::string& name) const {
    auto v = lookup_(name);
    if (!v) return std::nullopt;
    return to_int(name, *v);
  }

  /// Slurm's per-node task count may read "4(x2)" or "4,3": use the leading integer.
  std::optional<int> optional_leading_int(const std::string& name) const {
    auto v = lookup_(name);
    if (!v) return std::nullopt;
    std::string t = trim(*v);
    std::size_t n = 0;
    while (n < t.size() && t[n] >= '0' && t[n] <= '9') ++n;
    if (n == 0) throw ConfigError(name + " must be an integer, got '" + *v + "'");
    return to_int(name, t.substr(0, n));
  }

 private:
  static int to_int(const std::string& name, const std::string& text) {
    auto parsed = parse_int(text);
    if (!parsed) throw ConfigError(name + " must be an integer, got '" + text + "'");
    return *parsed;
  }

  const EnvLookup& lookup_;
};

void check_range(const std::string& name, int value, int lo, int hi) {
  if (value < lo || value > hi) {
    throw ConfigError(name + " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                      "], got " + std::to_string(value));
  }
}

}  // namespace

std::optional<int> parse_int(const std::string& text) {
  const std::string t = trim(text);
  if (t.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const long v = std::strtol(t.c_str(), &end, 10);
  if (errno != 0 || end != t.c_str() + t.size() || v < INT_MIN || v > INT_MAX) return std::nullopt;
  return static_cast<int>(v);
}

RankEnv parse_rank_env(const EnvLookup& lookup) {
  const Reader env(lookup);
  RankEnv r;
  if (env.has("RANK") || env.has("WORLD_SIZE")) {
    const std::string why = " (torchrun-style launch)";
    r.source = "torchrun";
    r.rank = env.required_int("RANK", why);
    r.world_size = env.required_int("WORLD_SIZE", why);
    r.local_rank = env.optional_int("LOCAL_RANK").value_or(r.rank);
    r.local_world_size = env.optional_int("LOCAL_WORLD_SIZE").value_or(r.world_size);
    auto node = env.optional_int("NODE_RANK");
    auto group = env.optional_int("GROUP_RANK");
    if (node && group && *node != *group) {
      throw ConfigError("NODE_RANK (" + std::to_string(*node) + ") and GROUP_RANK (" +
                        std::to_string(*group) + ") disagree");
    }
    r.node_rank = node ? *node : group.value_or(0);
  } else if (env.has("SLURM_PROCID")) {
    const std::string why = " (Slurm launch)";
    r.source = "slurm";
    r.rank = env.required_int("SLURM_PROCID", why);
    r.world_size = env.required_int("SLURM_NTASKS", why);
    r.local_rank = env.optional_int("SLURM_LOCALID").value_or(0);
    r.node_rank = env.optional_int("SLURM_NODEID").value_or(0);
    r.local_world_size = env.optional_leading_int("SLURM_NTASKS_PER_NODE").value_or(r.world_size);
  } else {
    throw ConfigError(
        "environment variable RANK is not set (expected torchrun's RANK/WORLD_SIZE or Slurm's "
        "SLURM_PROCID/SLURM_NTASKS)");
  }
  r.master_addr = env.required_string("MASTER_ADDR", "");
  r.master_port = env.required_int("MASTER_PORT", "");

  const std::string world_name = r.source == "slurm" ? "SLURM_NTASKS" : "WORLD_SIZE";
  const std::string rank_name = r.source == "slurm" ? "SLURM_PROCID" : "RANK";
  const std::string local_name = r.source == "slurm" ? "SLURM_LOCALID" : "LOCAL_RANK";
  const std::string local_world_name =
      r.source == "slurm" ? "SLURM_NTASKS_PER_NODE" : "LOCAL_WORLD_SIZE";
  const std::string node_name = r.source == "slurm" ? "SLURM_NODEID" : "NODE_RANK";
  check_range("MASTER_PORT", r.master_port, 1, 65535);
  check_range(world_name, r.world_size, 1, 1 << 20);
  check_range(rank_name, r.rank, 0, r.world_size - 1);
  check_range(local_world_name, r.local_world_size, 1, r.world_size);
  check_range(local_name, r.local_rank, 0, r.local_world_size - 1);
  check_range(node_name, r.node_rank, 0, r.world_size - 1);
  return r;
}

std::optional<std::string> process_env(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

RankEnv rank_env_from_process() { return parse_rank_env(process_env); }

}  // namespace trainbench::worker
