#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/spec/vocabulary.hpp"
#include "worker/process_group.hpp"

namespace trainbench::worker {

/// The optimizer step of a run, whatever the paradigm.
class StepOptimizer {
 public:
  virtual ~StepOptimizer() = default;
  virtual void step() = 0;
  /// Bytes of optimizer state this rank holds now (SGD momentum buffers, Adam's two moments).
  virtual std::int64_t state_bytes() const = 0;
  /// Seconds the steps since the last call waited on other ranks (ZeRO's all-gather; 0 for a
  /// local optimizer), and starts counting again.
  virtual double take_communication_seconds() { return 0; }
};

/// `name` sgd: torch::optim::SGD with momentum 0.9; adam: torch::optim::Adam with its defaults
/// (betas 0.9 / 0.999, eps 1e-8, no weight decay).
std::unique_ptr<StepOptimizer> make_optimizer(Optimizer name, double learning_rate, std::vector<at::Tensor> params);

/// One rank's shard of the parameters flattened in order: `total` elements cut into `ranks`
/// shards of shard_size = ceil(total / ranks) (the last ones shorter, possibly empty); this rank
/// holds elements [begin, end).
struct ZeroShard {
  std::int64_t shard_size = 0;
  std::int64_t begin = 0;
  std::int64_t end = 0;
};
ZeroShard zero_shard(std::int64_t total, int ranks, int rank);

/// ZeRO stage 1 with Adam (the update of torch::optim::Adam, same defaults): the parameters,
/// flattened in order, are cut into comm.size() equal shards (the last one shorter); this rank
/// keeps Adam's moments for its shard only and updates only its shard, then an all-gather of
/// the shards gives every rank all updated parameters. The parameters are made views into one
/// flat buffer (set_data) so that the all-gather (a ring of send/recv) writes into them directly.
///
/// Gradients must already be averaged over the ranks when step() runs: libtorch 1.13's
/// ProcessGroupGloo has no reduce_scatter ("does not support reduce_scatter"), so the worker
/// all-reduces them with its DDP reducer (bucketed, overlapped with backward) and each rank
/// reads its shard -- as PyTorch's ZeroRedundancyOptimizer does under DDP. That moves
/// 2(n-1)/n of the gradient bytes per rank instead of a reduce-scatter's (n-1)/n; the
/// all-gather of parameters adds (n-1)/n. ZeRO-1 does not shard gradients, so the full
/// gradient buffer stays on every rank either way.
std::unique_ptr<StepOptimizer> make_zero_adam(double learning_rate, std::vector<at::Tensor> params,
                                              Communicator& comm);

}  // namespace trainbench::worker
