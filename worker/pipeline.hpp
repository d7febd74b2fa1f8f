#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "core/plan/run_config.hpp"
#include "worker/models.hpp"
#include "worker/process_group.hpp"

namespace trainbench::worker {

/// Throws ConfigError unless `stages` (ranks) is 1 to `blocks`. A rank checks it before its
/// rendezvous too: were it to fail after, a rank that failed first would close the mesh on ranks
/// still connecting, and they would report a lost peer in place of the cause.
void check_stage_count(int stages, int blocks);

/// Contiguous stages of `block_parameters.size()` blocks for `stages` ranks: the first block of
/// each stage (starts[0] = 0). `boundaries` (the spec's, the first block of stages 1..S-1) when
/// given, else the split that minimises the largest stage's parameter count. Throws ConfigError
/// when a stage would get no block.
std::vector<int> stage_starts(const std::vector<std::int64_t>& block_parameters, int stages,
                              const std::vector<int>& boundaries);

/// One stage of paradigms pipeline (GPipe) and model-parallel (the same with one micro-batch).
/// Every rank builds the whole model (the same initialisation as the unsplit model, from the
/// same seed), keeps its stage's blocks and frees the other blocks' parameters and buffers.
/// Activations go forward and their gradients backward with c10d send/recv between neighbours.
class PipelineStage {
 public:
  PipelineStage(BenchModel& model, const RunConfig& config, Communicator& comm);

  /// This stage's parameters / buffers, in block order (the model's registration order). A
  /// weight tied between blocks on several stages (GPT-2's token embedding and LM head) is in
  /// each of those stages' parameters(): the copies get the summed gradient and the same step.
  std::vector<at::Tensor> parameters() const;
  /// parameters() without tied copies that an earlier stage owns: the stages' owned parameters
  /// add up to the model's, once each (for counting and dumps).
  std::vector<at::Tensor> owned_parameters() const;
  std::vector<at::Tensor> buffers() const;

  /// One step's forward and backward over all micro-batches of `inputs` / `targets` (the same
  /// full batch on every stage; stage 0 reads the inputs, the last stage the targets): all
  /// forwards, then all backwards in reverse order; gradients accumulate in .grad and equal the
  /// unsplit model's on the whole batch (each micro-batch's loss is weighted by its share of the
  /// batch). Returns the batch loss on the last stage, 0 elsewhere.
  double forward_backward(const at::Tensor& inputs, const at::Tensor& targets,
                          std::optional<at::ScalarType> autocast);

  /// Seconds the last forward_backward spent waiting for neighbours (recv and send completion).
  double last_wait_seconds() const { return last_wait_; }
  /// Its exposed communication: that wait and the exchange of tied weights' gradients.
  double last_communication_seconds() const { return last_wait_ + last_shared_sync_; }
  /// Overwrites `values` with the last stage's (a broadcast every rank must join).
  void share_from_last_stage(std::vector<double>& values);

  int stage() const { return stage_; }
  int stages() const { return stages_; }
  int block_count() const { return static_cast<int>(blocks_total_); }
  const std::vector<int>& starts() const { return starts_; }
  int micro_batches() const { return micro_batches_; }

 private:
  Communicator& comm_;
  BenchModel& model_;  ///< its output_loss on the last stage
  int stage_ = 0;
  int stages_ = 1;
  int micro_batches_ = 1;
  std::size_t blocks_total_ = 0;
  std::vector<int> starts_;
  std::vector<ModelBlock> blocks_;          ///< this stage's
  std::vector<std::int64_t> input_shape_;   ///< per example, of this stage's input
  std::vector<std::int64_t> output_shape_;  ///< per example, of this stage's output
  double last_wait_ = 0;
  double last_shared_sync_ = 0;  ///< seconds of the last sync_shared_gradients()
  struct SharedTensor {
    at::Tensor tensor;
    std::vector<int> peers;  ///< the other stages holding a copy
    bool owned = false;      ///< this is the first stage holding it
  };
  std::vector<SharedTensor> shared_;
  void sync_shared_gradients();
};

}  // namespace trainbench::worker
