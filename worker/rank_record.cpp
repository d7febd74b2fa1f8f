#include "worker/rank_record.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace trainbench::worker {
namespace {

/// The scalar fields, in row order; the lists follow them.
enum Field : std::size_t {
  kRole,
  kRank,
  kNodeRank,
  kLocalRank,
  kPeakMemory,
  kInitialLoss,
  kFinalLoss,
  kOptimizerState,
  kParameters,
  kStage,
  kBubble,
  kRows,
  kLookups,
  kCpuCores,  ///< the utilization: NaN where absent (the whole of it, or a GPU field on CPU)
  kPeakRss,
  kNetworkBytes,
  kGpuPeakAllocated,
  kGpuUtilization,
  kGpuMemoryUsed,
  kScalarFields
};

void put_lists(const std::vector<std::vector<double>>& lists, std::size_t repeats, std::size_t each, double* out) {
  if (lists.size() > repeats) throw std::logic_error("rank record: more repeats than the shape's");
  for (std::size_t r = 0; r < lists.size(); ++r) {
    if (lists[r].size() > each) {
      throw std::logic_error("rank record: " + std::to_string(lists[r].size()) + " values in a repeat of " +
                             std::to_string(each));
    }
    for (std::size_t k = 0; k < lists[r].size(); ++k) out[r * each + k] = lists[r][k];
  }
}

std::vector<std::vector<double>> get_lists(const double* in, std::size_t repeats, std::size_t each) {
  std::vector<std::vector<double>> out;
  out.reserve(repeats);
  for (std::size_t r = 0; r < repeats; ++r) out.emplace_back(in + r * each, in + (r + 1) * each);
  return out;
}

constexpr double kAbsent = std::numeric_limits<double>::quiet_NaN();

template <typename T>
double or_absent(const std::optional<T>& v) {
  return v ? static_cast<double>(*v) : kAbsent;
}

template <typename T>
std::optional<T> unless_absent(double v) {
  return std::isnan(v) ? std::nullopt : std::optional<T>(static_cast<T>(v));
}

void put_utilization(const std::optional<RankUtilization>& u, double* row) {
  std::fill(row + kCpuCores, row + kScalarFields, kAbsent);
  if (!u) return;
  row[kCpuCores] = u->cpu_cores;
  row[kPeakRss] = static_cast<double>(u->peak_rss_bytes);
  row[kNetworkBytes] = u->network_bytes_per_step;
  row[kGpuPeakAllocated] = or_absent(u->gpu_peak_allocated_bytes);
  row[kGpuUtilization] = or_absent(u->gpu_utilization);
  row[kGpuMemoryUsed] = or_absent(u->gpu_memory_used_bytes);
}

std::optional<RankUtilization> get_utilization(const double* row) {
  if (std::isnan(row[kCpuCores])) return std::nullopt;
  RankUtilization u;
  u.cpu_cores = row[kCpuCores];
  u.peak_rss_bytes = static_cast<std::int64_t>(row[kPeakRss]);
  u.network_bytes_per_step = row[kNetworkBytes];
  u.gpu_peak_allocated_bytes = unless_absent<std::int64_t>(row[kGpuPeakAllocated]);
  u.gpu_utilization = unless_absent<double>(row[kGpuUtilization]);
  u.gpu_memory_used_bytes = unless_absent<std::int64_t>(row[kGpuMemoryUsed]);
  return u;
}

}  // namespace

std::size_t RecordShape::width() const {
  return kScalarFields + (compute_split ? 3 : 1) * repeats * steps_per_repeat + 2 * repeats * requests_per_repeat;
}

std::vector<double> encode_record(const RankRecord& x, const RecordShape& shape) {
  std::vector<double> row(shape.width(), 0.0);
  row[kRole] = static_cast<double>(x.role);
  row[kRank] = x.rank;
  row[kNodeRank] = x.node_rank;
  row[kLocalRank] = x.local_rank;
  row[kPeakMemory] = static_cast<double>(x.peak_memory_bytes);
  row[kInitialLoss] = x.initial_loss;
  row[kFinalLoss] = x.final_loss;
  row[kOptimizerState] = static_cast<double>(x.optimizer_state_bytes);
  row[kParameters] = static_cast<double>(x.parameter_count);
  row[kStage] = x.stage;
  row[kBubble] = x.bubble_fraction;
  row[kRows] = static_cast<double>(x.rows);
  row[kLookups] = static_cast<double>(x.lookups);
  put_utilization(x.utilization, row.data());
  double* lists = row.data() + kScalarFields;
  const std::size_t steps = shape.repeats * shape.steps_per_repeat;
  const std::size_t requests = shape.repeats * shape.requests_per_repeat;
  put_lists(x.step_seconds, shape.repeats, shape.steps_per_repeat, lists);
  put_lists(x.service_seconds, shape.repeats, shape.requests_per_repeat, lists + steps);
  put_lists(x.queue_seconds, shape.repeats, shape.requests_per_repeat, lists + steps + requests);
  if (shape.compute_split) {
    double* split = lists + steps + 2 * requests;
    put_lists(x.compute_seconds, shape.repeats, shape.steps_per_repeat, split);
    put_lists(x.communication_seconds, shape.repeats, shape.steps_per_repeat, split + steps);
  } else if (!x.compute_seconds.empty() || !x.communication_seconds.empty()) {
    throw std::logic_error("rank record: a compute / communication split in a shape without one");
  }
  return row;
}

RankRecord decode_record(const double* row, const RecordShape& shape) {
  RankRecord x;
  x.role = row[kRole] == 0 ? RankRecord::Role::Trainer : RankRecord::Role::ParameterServer;
  x.rank = static_cast<int>(row[kRank]);
  x.node_rank = static_cast<int>(row[kNodeRank]);
  x.local_rank = static_cast<int>(row[kLocalRank]);
  x.peak_memory_bytes = static_cast<std::int64_t>(row[kPeakMemory]);
  x.initial_loss = row[kInitialLoss];
  x.final_loss = row[kFinalLoss];
  x.optimizer_state_bytes = static_cast<std::int64_t>(row[kOptimizerState]);
  x.parameter_count = static_cast<std::int64_t>(row[kParameters]);
  x.stage = static_cast<int>(row[kStage]);
  x.bubble_fraction = row[kBubble];
  x.rows = static_cast<std::int64_t>(row[kRows]);
  x.lookups = static_cast<std::int64_t>(row[kLookups]);
  x.utilization = get_utilization(row);
  const double* lists = row + kScalarFields;
  const std::size_t steps = shape.repeats * shape.steps_per_repeat;
  const std::size_t requests = shape.repeats * shape.requests_per_repeat;
  x.step_seconds = get_lists(lists, shape.repeats, shape.steps_per_repeat);
  if (shape.requests_per_repeat > 0) {
    x.service_seconds = get_lists(lists + steps, shape.repeats, shape.requests_per_repeat);
    x.queue_seconds = get_lists(lists + steps + requests, shape.repeats, shape.requests_per_repeat);
  }
  if (shape.compute_split) {
    const double* split = lists + steps + 2 * requests;
    x.compute_seconds = get_lists(split, shape.repeats, shape.steps_per_repeat);
    x.communication_seconds = get_lists(split + steps, shape.repeats, shape.steps_per_repeat);
  }
  return x;
}

RankResult to_rank_result(const RankRecord& x) {
  RankResult r;
  r.rank = x.rank;
  r.node_rank = x.node_rank;
  r.local_rank = x.local_rank;
  r.step_seconds = x.step_seconds;
  r.peak_memory_bytes = x.peak_memory_bytes;
  r.final_loss = x.final_loss;
  r.initial_loss = x.initial_loss;
  r.optimizer_state_bytes = x.optimizer_state_bytes;
  r.parameter_count = x.parameter_count;
  r.stage = x.stage;
  r.bubble_fraction = x.bubble_fraction;
  r.compute_seconds = x.compute_seconds;
  r.communication_seconds = x.communication_seconds;
  r.utilization = x.utilization;
  return r;
}

ServerResult to_server_result(const RankRecord& x, int trainers) {
  ServerResult s;
  s.rank = x.rank;
  s.server = x.rank - trainers;
  s.rows = x.rows;
  s.lookups = x.lookups;
  s.lookup_service_seconds = x.service_seconds;
  s.lookup_queue_seconds = x.queue_seconds;
  s.update_seconds = x.step_seconds;
  s.peak_memory_bytes = x.peak_memory_bytes;
  s.utilization = x.utilization;
  return s;
}

void add_records(RunResult& result, const std::vector<RankRecord>& records, int trainers) {
  for (const RankRecord& x : records) {
    if (x.role == RankRecord::Role::Trainer) {
      result.ranks.push_back(to_rank_result(x));
    } else {
      result.servers.push_back(to_server_result(x, trainers));
    }
  }
}

}  // namespace trainbench::worker
