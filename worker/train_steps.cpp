// The steps of the paradigms that train one model on synthetic data: none and ddp
// (DataParallelStep), zero (the same with Adam's state sharded) and pipeline / model-parallel
// (PipelineTrainStep).

#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>

#include "core/spec/model_sizes.hpp"
#include "core/spec/paradigm.hpp"
#include "worker/amp.hpp"
#include "worker/gradient_reducer.hpp"
#include "worker/models.hpp"
#include "worker/paradigms.hpp"
#include "worker/pipeline.hpp"
#include "worker/process_group.hpp"
#include "worker/rank_context.hpp"
#include "worker/step.hpp"
#include "worker/torch_compat.hpp"
#include "worker/train_common.hpp"
#include "worker/worker_error.hpp"
#include "worker/zero_optimizer.hpp"

namespace trainbench::worker {

void validate_training(const RankEnv& env, const RunConfig& c, const WorkerOptions& o) {
  auto fail = [](const std::string& m) { throw ConfigError("run config: " + m); };
  if (!trains_model(c.paradigm) || has_parameter_servers(c.paradigm)) {  // step_factory sends those elsewhere
    fail("paradigm must be none, ddp, zero, pipeline or model-parallel, got '" + to_string(c.paradigm) + "'");
  }
  if (c.paradigm == Paradigm::kZero && c.optimizer != Optimizer::kAdam) {
    fail("paradigm zero shards Adam: optimizer must be adam");
  }
  if (splits_into_stages(c.paradigm) && c.precision == Precision::kAmpFp16) {
    fail("paradigm " + to_string(c.paradigm) + " does not support precision amp-fp16 (loss scaling)");
  }
  if (env.world_size != c.world_size()) {
    fail("the environment says world size " + std::to_string(env.world_size) + " but the config has " +
         std::to_string(c.nodes) + " node(s) x " + std::to_string(c.devices_per_node) + " device(s)");
  }
  if (c.paradigm == Paradigm::kNone && env.world_size != 1) {
    fail("paradigm none runs a single process, got world size " + std::to_string(env.world_size));
  }
  if (c.batch_size_per_device < 1) fail("batchSizePerDevice must be >= 1");
  if (c.warmup_steps < 0) fail("warmupSteps must be >= 0");
  if (c.measure_steps < 1) fail("measureSteps must be >= 1");
  if (c.repeats < 1) fail("repeats must be >= 1");
  if (c.threads_per_process < 1) fail("threadsPerProcess must be >= 1 (resolved)");
  if (!(c.learning_rate >= 0) || !std::isfinite(c.learning_rate)) fail("learningRate must be >= 0");
  if (c.collective_timeout_seconds < 1) fail("collectiveTimeoutSeconds must be >= 1");
  // (A one-stage pipeline with W micro-batches on the W ranks' batches accumulates their
  // gradients one batch at a time: the zero test's reference, see tests/worker.)
  if (o.reference_world_size != 0 &&
      ((c.paradigm != Paradigm::kNone && c.paradigm != Paradigm::kPipeline) || env.world_size != 1)) {
    throw ConfigError("TRAINBENCH_REFERENCE_WORLD_SIZE needs paradigm none and world size 1");
  }
  if (o.reference_world_size < 0) throw ConfigError("TRAINBENCH_REFERENCE_WORLD_SIZE must be >= 1");
  if (c.test.slow_rank != -1 && splits_into_stages(c.paradigm)) fail("testOptions.slowRank: paradigms none, ddp, zero");
  (void)autocast_dtype_for(c.precision, c.device);  // throws for amp-fp16 off CUDA
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

/// The batch a rank trains on every step, on its device: its own (rank_batch), or under
/// TRAINBENCH_REFERENCE_WORLD_SIZE=W the concatenation of ranks 0..W-1's.
SyntheticBatch make_batch(const BenchModel& model, const RunConfig& c, int rank, int reference_world,
                          const torch::Device& device) {
  SyntheticBatch b;
  if (reference_world > 0) {
    std::vector<torch::Tensor> xs, ys;
    for (int r = 0; r < reference_world; ++r) {
      SyntheticBatch part = rank_batch(model, c, r);
      xs.push_back(part.inputs);
      ys.push_back(part.targets);
    }
    b.inputs = torch::cat(xs);
    b.targets = torch::cat(ys);
  } else {
    b = rank_batch(model, c, rank);
  }
  b.inputs = b.inputs.to(device);
  b.targets = b.targets.to(device);
  return b;
}

/// The whole model on the rank's device, the same initial parameters on every rank.
std::shared_ptr<BenchModel> build_rank_model(const RunConfig& c, const torch::Device& device) {
  torch::manual_seed(c.seed);
  std::shared_ptr<BenchModel> model = build_model(c.model, c);
  model->to(device);
  model->train();
  return model;
}

/// set_to_none (PyTorch's default since 2.0; libtorch 1.13's zero_grad() writes zeros): autograd
/// then hands over fresh gradients instead of adding into zeroed ones.
void clear_gradients(const std::vector<torch::Tensor>& params) {
  for (auto p : params) p.mutable_grad() = torch::Tensor();
}

void synchronize(const torch::Device& device) {
  if (device.is_cuda()) compat::cuda_synchronize(device.index());
}

// ---------------------------------------------------------------- none / ddp / zero

/// Test option slowRank / slowFactor: `passes` extra forward + backward passes per step on a
/// private copy of the model (its gradients dropped), so that the rank computes slowFactor
/// times a step's work while its training stays that of the other ranks. Real compute, not a
/// sleep: the straggler score measures compute.
class SlowRankWork {
 public:
  SlowRankWork(const RunConfig& c, const torch::Device& device, int passes)
      : model_(build_rank_model(c, device)), params_(model_->parameters()), passes_(passes) {}

  void run(const SyntheticBatch& batch) {
    for (int k = 0; k < passes_; ++k) {
      clear_gradients(params_);
      model_->loss(batch.inputs, batch.targets).backward();
    }
    synchronize(model_device());
  }

 private:
  torch::Device model_device() const { return params_.empty() ? torch::Device(torch::kCPU) : params_[0].device(); }

  std::shared_ptr<BenchModel> model_;
  std::vector<torch::Tensor> params_;
  int passes_ = 0;
};

/// How the ranks of a data-parallel step keep their replicas equal.
enum class Replication {
  kNone,             ///< paradigm none: one process
  kAllReduce,        ///< ddp: gradients all-reduced by the bucketed reducer
  kShardedOptimizer  ///< zero: as ddp, then Adam's state and update sharded (ZeRO stage 1)
};

class DataParallelStep final : public Step {
 public:
  DataParallelStep(RankContext& rank, Replication replication) : Step(rank), device_(rank.device) {
    const RunConfig& c = rank.config;
    // Before the model: its copy reseeds the RNG, which the model's own build then reseeds.
    if (c.test.slow_rank == rank.env.rank && c.test.slow_factor > 1) {
      slow_ = std::make_unique<SlowRankWork>(c, device_, c.test.slow_factor - 1);
    }
    const bool ddp = replication != Replication::kNone;
    Communicator* comm = ddp ? &rank.comm() : nullptr;
    model_ = build_rank_model(c, device_);
    params_ = model_->parameters();
    buffers_ = model_->buffers();
    parameter_count_ = element_count(params_);
    if (ddp) reducer_ = make_ddp_reducer(params_, buffers_, *comm, c);
    sync_buffers_ = ddp && c.ddp.broadcast_buffers && comm->size() > 1 && !buffers_.empty();
    comm_ = comm;
    batch_ = make_batch(*model_, c, rank.env.rank, rank.options.reference_world_size, device_);
    optimizer_ = replication == Replication::kShardedOptimizer ? make_zero_adam(c.learning_rate, params_, *comm)
                                                               : make_optimizer(c.optimizer, c.learning_rate, params_);
    if (device_.is_cuda()) compat::cuda_reset_peak_memory(device_.index());
    autocast_ = autocast_dtype_for(c.precision, c.device);
    scaler_ = GradScaler::for_run(c.precision, c.test.loss_scale);
    // A user-facing diagnostic (not a test hook): every step's loss and time on stderr.
    log_steps_ = std::getenv("TRAINBENCH_LOG_STEPS") != nullptr;  // NOLINT(concurrency-mt-unsafe)
  }

  StepTiming run_step(const StepContext& step) override {
    const auto t0 = Clock::now();
    double communication = 0;
    if (sync_buffers_) {
      comm_->broadcast(buffers_, 0);
      communication += seconds_between(t0, Clock::now());
      rank_.progress().enter(ProgressPhase::kForward);
    }
    if (slow_) slow_->run(batch_);  // test option: extra compute on this rank
    if (reducer_) {
      reducer_->before_forward();
    } else {
      clear_gradients(params_);
    }
    torch::Tensor loss;
    {
      std::optional<compat::AutocastScope> autocast;
      if (autocast_) autocast.emplace(device_.type(), *autocast_);
      loss = model_->loss(batch_.inputs, batch_.targets);
    }
    rank_.progress().enter(ProgressPhase::kBackward);
    const torch::Tensor root = scaler_ ? scaler_->scale_loss(loss) : loss;
    if (reducer_) reducer_->before_backward(root);
    root.backward();
    if (reducer_) communication += reducer_->after_backward();
    rank_.progress().enter(ProgressPhase::kOptimizer);
    if (scaler_) {
      const bool finite = scaler_->unscale(params_);  // same all-reduced gradients on every rank
      if (finite) optimizer_->step();
      scaler_->update(finite);
    } else {
      optimizer_->step();
    }
    synchronize(device_);
    const auto t1 = Clock::now();
    ++steps_run_;
    communication += optimizer_->take_communication_seconds();  // zero: the parameters' all-gather
    StepTiming t{seconds_between(t0, t1), communication, loss.item<double>()};
    if (log_steps_) log_step(step, t);
    return t;
  }

  void finish(RankRecord& record) override {
    if (scaler_ && rank_.env.rank == 0) {
      std::cerr << "trainbench-worker: loss scaling skipped " << scaler_->skipped_steps() << " of " << steps_run_
                << " steps (inf/NaN gradients); final scale " << scaler_->scale() << "\n";
    }
    record.optimizer_state_bytes = optimizer_->state_bytes();
    record.parameter_count = parameter_count_;
  }

  void describe(RunResult& result) const override {
    result.parameter_count = parameter_count_;
    result.ddp_bucket_count = reducer_ ? static_cast<int>(reducer_->bucket_count()) : 0;
    result.optimizer = to_string(rank_.config.optimizer);
    result.micro_batches = 1;
  }

  std::optional<Role> metrics_role() const override { return Role::kTrainer; }
  std::int64_t allreduce_bytes_per_step() const override {
    return reducer_ && comm_->size() > 1 ? reducer_->bytes_per_step() : 0;
  }
  std::vector<at::Tensor> dumped_parameters() const override { return params_; }

 private:
  void log_step(const StepContext& step, const StepTiming& t) const {
    std::cerr << "trainbench-worker rank " << rank_.env.rank << ": step " << step.index + 1 << " loss " << *t.loss
              << " " << t.seconds << " s";
    if (scaler_) std::cerr << " loss scale " << scaler_->scale();
    std::cerr << "\n";
  }

  const torch::Device device_;
  std::shared_ptr<BenchModel> model_;
  std::vector<torch::Tensor> params_;
  std::vector<torch::Tensor> buffers_;
  std::int64_t parameter_count_ = 0;
  Communicator* comm_ = nullptr;
  std::unique_ptr<GradientReducer> reducer_;
  bool sync_buffers_ = false;
  SyntheticBatch batch_;
  std::unique_ptr<StepOptimizer> optimizer_;
  std::optional<at::ScalarType> autocast_;
  std::optional<GradScaler> scaler_;
  bool log_steps_ = false;
  std::unique_ptr<SlowRankWork> slow_;
  std::int64_t steps_run_ = 0;
};

// ---------------------------------------------------------------- pipeline / model-parallel

class PipelineTrainStep final : public Step {
 public:
  explicit PipelineTrainStep(RankContext& rank) : Step(rank), device_(rank.device) {
    const RunConfig& c = rank.config;
    // Before the rendezvous, so that every rank exits with the cause (pipeline.hpp).
    if (const int blocks = model_block_count(c.model, c.mlp, c.transformer, c.hybrid_embedding); blocks > 0) {
      check_stage_count(rank.env.world_size, blocks);
    }
    Communicator& comm = rank.comm();
    model_ = build_rank_model(c, device_);
    parameter_count_ = element_count(model_->parameters());
    stage_ = std::make_unique<PipelineStage>(*model_, c, comm);  // keeps this rank's stage
    params_ = stage_->parameters();
    // Counted and dumped: a weight tied across stages once, on the first stage holding it.
    owned_params_ = stage_->owned_parameters();
    // One batch (rank 0's, as the unsplit model would train): every stage makes it, stage 0
    // reads its inputs and the last stage its targets.
    batch_ = make_batch(*model_, c, 0, rank.options.reference_world_size, device_);
    optimizer_ = make_optimizer(c.optimizer, c.learning_rate, params_);
    if (device_.is_cuda()) compat::cuda_reset_peak_memory(device_.index());
    autocast_ = autocast_dtype_for(c.precision, c.device);
    waits_.reserve(static_cast<std::size_t>(c.warmup_steps) +
                   static_cast<std::size_t>(c.repeats) * static_cast<std::size_t>(c.measure_steps));
  }

  StepTiming run_step(const StepContext&) override {
    const auto t0 = Clock::now();
    clear_gradients(params_);
    const double loss = stage_->forward_backward(batch_.inputs, batch_.targets, autocast_);
    rank_.progress().enter(ProgressPhase::kOptimizer);
    optimizer_->step();
    synchronize(device_);
    const auto t1 = Clock::now();
    waits_.push_back(stage_->last_wait_seconds());
    return StepTiming{seconds_between(t0, t1), stage_->last_communication_seconds(), loss};
  }

  void finish(RankRecord& record) override {
    // The loss lives on the last stage; every rank reports it.
    std::vector<double> losses{record.final_loss, record.initial_loss};
    stage_->share_from_last_stage(losses);
    record.final_loss = losses[0];
    record.initial_loss = losses[1];
    // The measured bubble: waiting for the neighbours over the measured steps' time.
    double waited = 0, total = 0;
    std::size_t measured = 0;
    for (const auto& rep : record.step_seconds) {
      for (double sec : rep) total += sec;
      measured += rep.size();
    }
    for (std::size_t k = waits_.size() - measured; k < waits_.size(); ++k) waited += waits_[k];
    record.bubble_fraction = total > 0 ? waited / total : 0;
    record.optimizer_state_bytes = optimizer_->state_bytes();
    record.parameter_count = element_count(owned_params_);
    record.stage = stage_->stage();
  }

  void describe(RunResult& result) const override {
    result.parameter_count = parameter_count_;
    result.ddp_bucket_count = 0;
    result.optimizer = to_string(rank_.config.optimizer);
    result.micro_batches = stage_->micro_batches();
    result.block_count = stage_->block_count();
    result.stage_starts = stage_->starts();
  }

  std::optional<Role> metrics_role() const override { return Role::kTrainer; }
  std::vector<at::Tensor> dumped_parameters() const override { return owned_params_; }

 private:
  const torch::Device device_;
  std::shared_ptr<BenchModel> model_;
  std::int64_t parameter_count_ = 0;  ///< the whole model's
  std::unique_ptr<PipelineStage> stage_;
  std::vector<torch::Tensor> params_;
  std::vector<torch::Tensor> owned_params_;
  SyntheticBatch batch_;
  std::unique_ptr<StepOptimizer> optimizer_;
  std::optional<at::ScalarType> autocast_;
  std::vector<double> waits_;  ///< per step: seconds this stage waited on its neighbours
};

}  // namespace

std::unique_ptr<Step> make_single_process_step(RankContext& rank) {
  return std::make_unique<DataParallelStep>(rank, Replication::kNone);
}

std::unique_ptr<Step> make_ddp_step(RankContext& rank) {
  return std::make_unique<DataParallelStep>(rank, Replication::kAllReduce);
}

std::unique_ptr<Step> make_zero_step(RankContext& rank) {
  return std::make_unique<DataParallelStep>(rank, Replication::kShardedOptimizer);
}

std::unique_ptr<Step> make_pipeline_step(RankContext& rank) { return std::make_unique<PipelineTrainStep>(rank); }

}  // namespace trainbench::worker
