#pragma once
// The step interface: what a paradigm implements so that the one training loop
// (worker/train_loop.cpp) can run it. The loop owns the warm-up / measure / repeat structure,
// the timing record, progress, metrics, the non-finite-loss check, the end-of-run gather and
// the metrics linger; a Step owns what one step of its paradigm does and what it reports
// beyond the loop's measurements.
//
// A paradigm is one Step implementation plus its case in step_factory (worker/paradigms.hpp).

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/results/rank_progress.hpp"
#include "core/results/run_result.hpp"
#include "core/spec/vocabulary.hpp"
#include "worker/rank_record.hpp"

namespace trainbench::worker {

class RankContext;

/// Where a step lies in the run.
struct StepContext {
  std::int64_t index = 0;  ///< 0-based over the warm-up and measured steps
  bool measured = false;   ///< past the warm-up
  int repeat = 0;          ///< 0-based repeat of a measured step; 0 during warm-up
};

/// What one step reports to the loop.
struct StepTiming {
  double seconds = 0;  ///< the step's time (stepSeconds, progress, metrics)
  /// Of it, the exposed communication: waiting on other ranks (the gradients' all-reduce, a
  /// pipeline neighbour's activations / gradients, a parameter server's reply, ZeRO's
  /// all-gather). The rest is the step's compute (the record's computeSeconds, the straggler
  /// scores, /metrics).
  double communication_seconds = 0;
  std::optional<double> loss;        ///< the loss where this rank computes one (must be finite)
};

/// The loop's shape: warmup_steps, then repeats x measure_steps measured steps.
struct LoopShape {
  int warmup_steps = 0;
  int repeats = 1;
  int measure_steps = 1;
};

/// One paradigm's step on one rank. Built by step_factory's choice after the rank setup; every rank of a
/// run runs the same number of steps.
class Step {
 public:
  virtual ~Step() = default;

  /// One step, timed by the step itself (what is timed is the paradigm's to say).
  virtual StepTiming run_step(const StepContext& step) = 0;

  /// After the last step (the loop has filled record's ids, step times, losses and peak memory):
  /// completes the record. Collectives every rank joins go here.
  virtual void finish(RankRecord& record) = 0;

  /// Rank 0, before the records are added: the run-level fields of the result (run index,
  /// world size and environment are set already).
  virtual void describe(RunResult& result) const = 0;

  /// The loop's shape; by default the config's warm-up, repeats and measured steps.
  virtual LoopShape loop_shape() const;
  /// The record's list lengths; by default the loop's repeats x measured steps.
  virtual RecordShape record_shape() const;
  /// The /metrics role label when this rank serves /metrics (TRAINBENCH_METRICS_PORT); nullopt:
  /// it serves none.
  virtual std::optional<Role> metrics_role() const { return std::nullopt; }
  /// Bytes each step all-reduces (the metrics' counter).
  virtual std::int64_t allreduce_bytes_per_step() const { return 0; }
  /// The parameters TRAINBENCH_DUMP_PARAMS writes (empty: no dump).
  virtual std::vector<at::Tensor> dumped_parameters() const { return {}; }
  /// Where a step of this rank begins in its progress record (a parameter server: waiting).
  virtual ProgressPhase first_phase() const { return ProgressPhase::kForward; }

 protected:
  explicit Step(const RankContext& rank) : rank_(rank) {}
  const RankContext& rank_;
};

}  // namespace trainbench::worker
