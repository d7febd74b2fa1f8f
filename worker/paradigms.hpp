#pragma once
// The paradigms' steps and the one place that dispatches on the paradigm (step_factory).
// Adding a paradigm: its Step in one of the step TUs (or a new one), its validate_/make_ pair
// declared here, and its case in step_factory.

#include <memory>

#include "core/plan/run_config.hpp"
#include "core/spec/paradigm.hpp"
#include "worker/rank_env.hpp"
#include "worker/step.hpp"
#include "worker/train_loop.hpp"

namespace trainbench::worker {

class RankContext;

/// Builds a paradigm's step on a rank set up for it.
using StepFactory = std::unique_ptr<Step> (*)(RankContext& rank);

// none / ddp / zero / pipeline / model-parallel (worker/train_steps.cpp): one model trained on
// synthetic data. Throws ConfigError for configs these paradigms cannot run.
void validate_training(const RankEnv& env, const RunConfig& c, const WorkerOptions& o);
/// none: one process, one model.
std::unique_ptr<Step> make_single_process_step(RankContext& rank);
/// ddp: a replica per rank, gradients all-reduced by the DDP of spec.benchmark.ddp.implementation (worker/gradient_reducer.hpp).
std::unique_ptr<Step> make_ddp_step(RankContext& rank);
/// zero: ddp's step with Adam's state sharded over the ranks (ZeRO stage 1).
std::unique_ptr<Step> make_zero_step(RankContext& rank);
/// pipeline and model-parallel: this rank's stage of the model.
std::unique_ptr<Step> make_pipeline_step(RankContext& rank);

// allreduce (worker/allreduce_bench.cpp).
void validate_allreduce_run(const RankEnv& env, const RunConfig& c, const WorkerOptions& o);
std::unique_ptr<Step> make_allreduce_step(RankContext& rank);

// hybrid-ps (worker/hybrid_ps.cpp): trainers, parameter servers, and the one-process reference.
void validate_hybrid_ps(const RankEnv& env, const RunConfig& c, const WorkerOptions& o);
std::unique_ptr<Step> make_hybrid_ps_step(RankContext& rank);

/// Validates `c` for its paradigm and returns how to build that paradigm's step.
inline StepFactory step_factory(const RankEnv& env, const RunConfig& c, const WorkerOptions& o) {
  switch (c.paradigm) {
    case Paradigm::kAllreduce:
      validate_allreduce_run(env, c, o);
      return make_allreduce_step;
    case Paradigm::kHybridPs:
      validate_hybrid_ps(env, c, o);
      return make_hybrid_ps_step;
    case Paradigm::kNone:
    case Paradigm::kDdp:
    case Paradigm::kZero:
    case Paradigm::kPipeline:
    case Paradigm::kModelParallel:
      break;
  }
  validate_training(env, c, o);
  switch (c.paradigm) {
    case Paradigm::kDdp:
      return make_ddp_step;
    case Paradigm::kZero:
      return make_zero_step;
    case Paradigm::kPipeline:
    case Paradigm::kModelParallel:
      return make_pipeline_step;
    default:
      return make_single_process_step;
  }
}

}  // namespace trainbench::worker
