#include "core/analysis/hang.hpp"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <sstream>
#include <tuple>

namespace trainbench {
namespace {

/// The longest list of stuck ranks described one by one, and of places where the others wait;
/// the rest are listed by number, so that the message of a 1,000-rank run stays a few lines.
constexpr std::size_t kMaxDescribed = 8;

double heartbeat_age(const RankProgressRecord& r, double now) { return std::max(0.0, now - r.published); }

/// How long the rank has been where it is: its phase's age when published plus the time since.
double idle(const RankProgressRecord& r, double now) { return r.phase_seconds + heartbeat_age(r, now); }

bool stale(const RankProgressRecord& r, double now) {
  return r.phase != ProgressPhase::kDone && heartbeat_age(r, now) > kStaleHeartbeatSeconds;
}

std::string whole_seconds(double s) { return std::to_string(std::llround(s)); }

std::string utc_clock(double epoch_seconds) {
  const std::time_t t = static_cast<std::time_t>(epoch_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%H:%M:%S UTC", &tm);
  return buf;
}

/// "pod J-r0-a0-trainer-1 on node n2, local 1" / "parameter server 0, pid 4242, local 2".
std::string identity(const RankProgressRecord& r, const HangRun& run) {
  std::string out;
  if (r.role == Role::kParameterServer) out += "parameter server " + std::to_string(r.rank - run.trainers) + ", ";
  out += r.pod.empty() ? "pid " + std::to_string(r.pid) : "pod " + r.pod;
  if (!r.node.empty()) out += " on node " + r.node;
  return out + ", local " + std::to_string(r.local_rank);
}

/// Waiting for a parameter server's answer or for requests reads "for", everything else "in".
bool waits_for(ProgressPhase p) { return p == ProgressPhase::kPsRequest || p == ProgressPhase::kPsWaiting; }

std::string describe_stuck(const RankProgressRecord& r, double now, const HangRun& run) {
  std::string out = "rank " + std::to_string(r.rank) + " (" + identity(r, run) + ")" +
                    (waits_for(r.phase) ? " waiting for " : " in ") + describe_position(r, run.trainers);
  if (r.step >= 0 && r.phase != ProgressPhase::kStarting) out += " of step " + std::to_string(r.step + 1);
  out += " for " + whole_seconds(idle(r, now)) + " s";
  if (stale(r, now)) out += " (no heartbeat for " + whole_seconds(heartbeat_age(r, now)) + " s)";
  return out;
}

/// Ranks in a collective other than the one most ranks of their role wait in.
std::vector<int> missing_from_collective(const std::vector<RankProgressRecord>& rs) {
  std::map<std::tuple<Role, ProgressPhase, std::uint64_t>, int> count;
  for (const auto& r : rs) {
    if (is_collective(r.phase)) ++count[{r.role, r.phase, r.collective}];
  }
  if (count.size() < 2) return {};
  auto majority = count.begin();
  for (auto it = count.begin(); it != count.end(); ++it) {
    // Ties: the higher sequence number is the one the laggards have not reached.
    if (it->second > majority->second ||
        (it->second == majority->second && std::get<2>(it->first) > std::get<2>(majority->first))) {
      majority = it;
    }
  }
  const auto& [role, phase, seq] = majority->first;
  std::vector<int> out;
  for (const auto& r : rs) {
    if (r.role == role && r.phase != ProgressPhase::kDone && (r.phase != phase || r.collective != seq)) {
      out.push_back(r.rank);
    }
  }
  return out;
}

/// The stuck ranks by the first kind of evidence that names any (see hang.hpp).
std::vector<int> stuck_ranks(const std::vector<RankProgressRecord>& rs, double now) {
  std::vector<int> out;
  for (const auto& r : rs) {
    if (stale(r, now)) out.push_back(r.rank);
  }
  if (!out.empty()) return out;
  for (const auto& r : rs) {
    if (!is_waiting(r.phase)) out.push_back(r.rank);
  }
  if (!out.empty()) return out;
  return missing_from_collective(rs);
}

/// Where a waiting rank stands, with its collective's sequence number left out: ranks of one
/// ring all-reduce may finish it at different moments when one rank stops inside it, so the
/// others wait in #N and #N+1 of the same bucket, and they are one group with a range.
std::string waiting_place(RankProgressRecord r, const HangRun& run) {
  r.collective = 0;
  return (waits_for(r.phase) ? "for " : "in ") + describe_position(r, run.trainers);
}

/// "in all-reduce #491-492 (bucket 1 of 1)": the place with the group's range of collectives.
std::string place_with_range(RankProgressRecord r, std::uint64_t last, const HangRun& run) {
  std::string out = (waits_for(r.phase) ? "for " : "in ") + describe_position(r, run.trainers);
  const std::string first = "#" + std::to_string(r.collective);
  const auto at = out.find(first);
  if (last > r.collective && at != std::string::npos) {
    out.insert(at + first.size(), "-" + std::to_string(last));
  }
  return out;
}

/// "ranks 0-2, 4-7 wait in all-reduce #412 (bucket 3 of 5) since 14:02:10 UTC; rank 8 waits ...".
std::string describe_waiting(const std::vector<RankProgressRecord>& waiting, const HangRun& run) {
  struct Group {
    std::vector<int> ranks;
    RankProgressRecord first;  ///< the member in the lowest-numbered collective
    std::uint64_t last = 0;    ///< the highest collective a member waits in
    double since = 0;          ///< the earliest
  };
  std::map<std::string, Group> groups;  // place -> its ranks
  for (const auto& r : waiting) {
    const auto it = groups.try_emplace(waiting_place(r, run), Group{{}, r, r.collective, r.since}).first;
    Group& g = it->second;
    g.ranks.push_back(r.rank);
    if (r.collective < g.first.collective) g.first = r;
    g.last = std::max(g.last, r.collective);
    g.since = std::min(g.since, r.since);
  }
  std::vector<std::tuple<int, std::string, const Group*>> parts;  // ordered by their lowest rank
  for (const auto& [place, g] : groups) {
    const bool one = g.ranks.size() == 1;
    const std::string position = place_with_range(g.first, g.last, run);
    const std::string what =
        position == "in done" ? (one ? " is done" : " are done") : (one ? " waits " : " wait ") + position;
    parts.emplace_back(*std::min_element(g.ranks.begin(), g.ranks.end()),
                       (one ? "rank " : "ranks ") + compress_ranks(g.ranks) + what + " since " + utc_clock(g.since),
                       &g);
  }
  std::sort(parts.begin(), parts.end());
  std::string out;
  std::vector<int> elsewhere;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const Group& g = *std::get<2>(parts[i]);
    if (i < kMaxDescribed) {
      out += (out.empty() ? "" : "; ") + std::get<1>(parts[i]);
    } else {
      elsewhere.insert(elsewhere.end(), g.ranks.begin(), g.ranks.end());
    }
  }
  if (!elsewhere.empty()) out += "; ranks " + compress_ranks(elsewhere) + " wait elsewhere";
  return out;
}

std::string hang_message(const HangVerdict& v, double now, const HangRun& run) {
  std::string out = "hang: ";
  if (v.stuck.empty()) {
    out += "no rank advanced for " + whole_seconds(v.idle_seconds) +
           " s and none is missing from where the others wait (a network or backend hang?); ";
  }
  std::vector<int> rest;
  for (std::size_t i = 0; i < v.stuck.size(); ++i) {
    if (i < kMaxDescribed) {
      out += (i == 0 ? "" : ", ") + describe_stuck(v.stuck[i], now, run);
    } else {
      rest.push_back(v.stuck[i].rank);
    }
  }
  if (!rest.empty()) out += ", and ranks " + compress_ranks(rest);
  if (!v.stuck.empty() && !v.waiting.empty()) out += "; ";
  return out + describe_waiting(v.waiting, run);
}

}  // namespace

std::string compress_ranks(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::string out;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    if (j - i >= 2) {
      out += std::to_string(ranks[i]) + "-" + std::to_string(ranks[j]);
      i = j + 1;
    } else {
      out += std::to_string(ranks[i]);
      ++i;
    }
  }
  return out;
}

std::optional<HangVerdict> detect_hang(const std::vector<RankProgressRecord>& records, double now,
                                       double timeout_seconds, const HangRun& run) {
  if (timeout_seconds <= 0 || run.processes <= 0) return std::nullopt;
  std::map<int, RankProgressRecord> latest;
  for (const auto& r : records) {
    if (r.rank < 0 || r.rank >= run.processes) continue;
    auto it = latest.find(r.rank);
    if (it == latest.end() || r.published >= it->second.published) latest[r.rank] = r;
  }
  if (static_cast<int>(latest.size()) != run.processes) return std::nullopt;  // not every rank started
  std::vector<RankProgressRecord> rs;
  bool all_done = true;
  double least_idle = -1;
  for (const auto& [rank, r] : latest) {
    rs.push_back(r);
    all_done = all_done && r.phase == ProgressPhase::kDone;
    least_idle = least_idle < 0 ? idle(r, now) : std::min(least_idle, idle(r, now));
  }
  if (all_done || least_idle < timeout_seconds) return std::nullopt;
  const std::vector<int> stuck = stuck_ranks(rs, now);
  HangVerdict v;
  v.idle_seconds = least_idle;
  for (const auto& r : rs) {
    (std::find(stuck.begin(), stuck.end(), r.rank) != stuck.end() ? v.stuck : v.waiting).push_back(r);
  }
  v.message = hang_message(v, now, run);
  return v;
}

std::optional<HangVerdict> detect_silent_ranks(const std::vector<int>& silent, double elapsed, double timeout) {
  if (silent.empty() || timeout <= 0 || elapsed < timeout) return std::nullopt;
  HangVerdict v;
  v.idle_seconds = elapsed;
  std::string ranks;
  for (int r : silent) {
    RankProgressRecord rec;
    rec.rank = r;
    v.stuck.push_back(rec);
    ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
  }
  std::ostringstream msg;
  msg << "hang: rank" << (silent.size() > 1 ? "s " : " ") << ranks << " published no progress in "
      << static_cast<long long>(elapsed) << " s since the run started (spec.runPolicy.hangTimeoutSeconds "
      << static_cast<long long>(timeout)
      << "): the program never created its probe (trainbench_probe.Probe) or hangs before it, e.g. in "
         "its imports, data loading or rendezvous";
  v.message = msg.str();
  return v;
}

}  // namespace trainbench
