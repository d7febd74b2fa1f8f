#pragma once
// What one rank measured in a run, and its encoding as one row of doubles for the end-of-run
// all-gather (every rank sends a row of the same width; rank 0 decodes them all into the
// RunResult). The one codec of the worker: every paradigm gathers its ranks through it.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/results/run_result.hpp"

namespace trainbench::worker {

/// One rank's measurements. Trainers fill the training fields, hybrid-ps parameter servers the
/// server fields; the rest stay at their defaults.
struct RankRecord {
  enum class Role { Trainer = 0, ParameterServer = 1 };
  Role role = Role::Trainer;
  int rank = 0;
  int node_rank = 0;
  int local_rank = 0;
  std::int64_t peak_memory_bytes = 0;
  double initial_loss = 0;  ///< loss of the first measured step
  double final_loss = 0;    ///< loss of the last measured step
  std::int64_t optimizer_state_bytes = 0;
  std::int64_t parameter_count = 0;  ///< parameters this rank holds (and dumps)
  int stage = -1;                    ///< pipeline / model-parallel: this rank's stage
  double bubble_fraction = 0;        ///< pipeline / model-parallel: measured wait / step time
  std::int64_t rows = 0;             ///< hybrid-ps server: embedding rows it owns
  std::int64_t lookups = 0;          ///< hybrid-ps server: lookups served in measured steps
  /// [repeat][step] seconds of each measured step (allreduce: [repeat][size] per all-reduce;
  /// hybrid-ps server: its update of each measured step).
  std::vector<std::vector<double>> step_seconds;
  /// [repeat][step]: each measured step's compute (its time not spent waiting on other ranks)
  /// and exposed communication (StepTiming::communication_seconds); empty where the shape has
  /// no split (paradigm allreduce).
  std::vector<std::vector<double>> compute_seconds{};
  std::vector<std::vector<double>> communication_seconds{};
  /// hybrid-ps server: [repeat][request], from service start to sums sent / arrival to start.
  std::vector<std::vector<double>> service_seconds;
  std::vector<std::vector<double>> queue_seconds;
  /// CPU, memory, network and GPU use over the measured steps (the loop's UtilizationWindow).
  std::optional<RankUtilization> utilization;
};

/// The lengths of a record's lists, the same on every rank of a run (so the rows have one width).
struct RecordShape {
  std::size_t repeats = 1;
  std::size_t steps_per_repeat = 0;     ///< step_seconds[r].size()
  std::size_t requests_per_repeat = 0;  ///< service_seconds[r].size() (hybrid-ps servers; else 0)
  bool compute_split = true;            ///< compute_seconds and communication_seconds (not allreduce)
  /// The row's length in doubles.
  std::size_t width() const;
};

/// The record as a row of shape.width() doubles. Lists shorter than the shape are padded with
/// zeros (a trainer has no service times); a longer one throws std::logic_error.
std::vector<double> encode_record(const RankRecord& record, const RecordShape& shape);
/// The record of a row of shape.width() doubles (encode_record's inverse).
RankRecord decode_record(const double* row, const RecordShape& shape);

/// The result's entry of a trainer's record.
RankResult to_rank_result(const RankRecord& record);
/// The result's entry of a parameter server's record (server index = rank - trainers).
ServerResult to_server_result(const RankRecord& record, int trainers);
/// Appends each record to result.ranks (trainers) or result.servers (parameter servers), in order.
void add_records(RunResult& result, const std::vector<RankRecord>& records, int trainers);

}  // namespace trainbench::worker
