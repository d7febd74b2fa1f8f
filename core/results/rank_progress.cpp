#include "core/results/rank_progress.hpp"

#include <stdexcept>

#include "core/spec/json_fields.hpp"

namespace trainbench {

namespace jf = json_fields;

bool is_waiting(ProgressPhase p) {
  switch (p) {
    case ProgressPhase::kStarting:
    case ProgressPhase::kAllReduce:
    case ProgressPhase::kAllGather:
    case ProgressPhase::kBroadcast:
    case ProgressPhase::kSend:
    case ProgressPhase::kRecv:
    case ProgressPhase::kPsRequest:
    case ProgressPhase::kPsWaiting:
    case ProgressPhase::kGather:
    case ProgressPhase::kDone:
      return true;
    case ProgressPhase::kForward:
    case ProgressPhase::kBackward:
    case ProgressPhase::kOptimizer:
    case ProgressPhase::kPsServing:
      return false;
  }
  return false;
}

bool is_collective(ProgressPhase p) {
  return p == ProgressPhase::kAllReduce || p == ProgressPhase::kAllGather || p == ProgressPhase::kBroadcast ||
         p == ProgressPhase::kGather;
}

nlohmann::json to_json(const RankProgressRecord& r) {
  nlohmann::json j = {{"rank", r.rank},
                      {"role", to_string(r.role)},
                      {"nodeRank", r.node_rank},
                      {"localRank", r.local_rank},
                      {"pid", r.pid},
                      {"step", r.step},
                      {"phase", to_string(r.phase)},
                      {"collective", r.collective},
                      {"since", r.since},
                      {"phaseSeconds", r.phase_seconds},
                      {"published", r.published}};
  if (!r.pod.empty()) j["pod"] = r.pod;
  if (!r.node.empty()) j["node"] = r.node;
  if (r.peer >= 0) j["peer"] = r.peer;
  if (r.bucket >= 0) {
    j["bucket"] = r.bucket;
    j["buckets"] = r.buckets;
  }
  return j;
}

RankProgressRecord rank_progress_from_json(const nlohmann::json& j) {
  const std::string p = "progress";
  jf::require_object(j, p);
  RankProgressRecord r;
  r.rank = jf::get_int32(j, "rank", p);
  r.role = jf::get_enum<Role>(j, "role", p);
  r.node_rank = jf::get_int32(j, "nodeRank", p);
  r.local_rank = jf::get_int32(j, "localRank", p);
  r.pid = jf::get_int32(j, "pid", p);
  r.step = jf::get_int(j, "step", p);
  r.phase = jf::get_enum<ProgressPhase>(j, "phase", p);
  const std::int64_t seq = jf::get_int(j, "collective", p);
  if (seq < 0) throw std::runtime_error(p + ".collective: must be >= 0");
  r.collective = static_cast<std::uint64_t>(seq);
  r.since = jf::get_number(j, "since", p);
  r.phase_seconds = jf::get_number(j, "phaseSeconds", p);
  r.published = jf::get_number(j, "published", p);
  if (jf::has(j, "pod")) r.pod = jf::get_string(j, "pod", p);
  if (jf::has(j, "node")) r.node = jf::get_string(j, "node", p);
  if (jf::has(j, "peer")) r.peer = jf::get_int32(j, "peer", p);
  if (jf::has(j, "bucket")) {
    r.bucket = jf::get_int32(j, "bucket", p);
    r.buckets = jf::get_int32(j, "buckets", p);
  }
  return r;
}

namespace {

std::string server_label(int peer, int trainers) {
  return "parameter server " + std::to_string(peer - trainers) + " (rank " + std::to_string(peer) + ")";
}

}  // namespace

std::string describe_position(const RankProgressRecord& r, int trainers) {
  const std::string peer = std::to_string(r.peer);
  const std::string seq = "#" + std::to_string(r.collective);
  switch (r.phase) {
    case ProgressPhase::kStarting:
      return r.collective > 0 ? "setup (collective " + seq + ")" : "setup (rendezvous)";
    case ProgressPhase::kAllReduce:
      return "all-reduce " + seq +
             (r.bucket >= 0 ? " (bucket " + std::to_string(r.bucket + 1) + " of " + std::to_string(r.buckets) + ")"
                            : "");
    case ProgressPhase::kAllGather:
      return "all-gather " + seq;
    case ProgressPhase::kBroadcast:
      return "broadcast " + seq;
    case ProgressPhase::kSend:
      return "send to rank " + peer;
    case ProgressPhase::kRecv:
      return "recv from rank " + peer;
    case ProgressPhase::kPsRequest:
      return "a lookup from " + server_label(r.peer, trainers);
    case ProgressPhase::kPsServing:
      return "serving lookups";
    case ProgressPhase::kPsWaiting:
      return "the trainers' requests";
    case ProgressPhase::kGather:
      return "the final gather " + seq;
    case ProgressPhase::kDone:
      return "done";
    case ProgressPhase::kForward:
    case ProgressPhase::kBackward:
    case ProgressPhase::kOptimizer:
      break;
  }
  return to_string(r.phase);
}

}  // namespace trainbench
