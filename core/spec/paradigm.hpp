#pragma once

// The training paradigms (spec.benchmark.paradigm, a sweep entry's paradigm): one table giving
// each its text and what the rest of the project asks of it. Adding a paradigm starts here.

#include <array>
#include <optional>
#include <string_view>

#include "core/spec/vocabulary.hpp"

namespace trainbench {

enum class Paradigm {
  kNone,           ///< one device, no communication: the baseline of the speedup
  kDdp,            ///< data parallel, gradients all-reduced in buckets (spec.benchmark.ddp.implementation)
  kZero,           ///< DDP with Adam's state sharded over the ranks (ZeRO stage 1)
  kPipeline,       ///< one stage of the model per rank, GPipe micro-batches
  kModelParallel,  ///< one stage of the model per rank, the whole batch at once
  kAllreduce,      ///< no model: all-reduce bandwidth over message sizes
  kHybridPs,       ///< DDP trainers plus parameter servers holding sharded embedding tables
};

/// One row of the paradigm table.
struct ParadigmInfo {
  Paradigm value;
  std::string_view text;        ///< the spec's spelling
  bool ddp_reducer;             ///< all-reduces gradients with DDP (spec.benchmark.ddp applies)
  bool staged;                  ///< splits the model into one stage per rank (spec.benchmark.pipeline)
  bool trains_model;            ///< false: communication only (no spec.benchmark.model needed)
  bool parameter_servers;       ///< runs parameter servers besides the trainers
  Optimizer default_optimizer;  ///< when spec.benchmark.optimizer is not set
};

template <>
struct Spellings<Paradigm> {
  // clang-format off
  static constexpr std::array<ParadigmInfo, 7> table{{
      // value                    text              ddp    staged trains servers optimizer
      {Paradigm::kNone,          "none",           false, false, true,  false, Optimizer::kSgd},
      {Paradigm::kDdp,           "ddp",            true,  false, true,  false, Optimizer::kSgd},
      {Paradigm::kZero,          "zero",           true,  false, true,  false, Optimizer::kAdam},
      {Paradigm::kPipeline,      "pipeline",       false, true,  true,  false, Optimizer::kSgd},
      {Paradigm::kModelParallel, "model-parallel", false, true,  true,  false, Optimizer::kSgd},
      {Paradigm::kAllreduce,     "allreduce",      false, false, false, false, Optimizer::kSgd},
      {Paradigm::kHybridPs,      "hybrid-ps",      true,  false, true,  true,  Optimizer::kSgd},
  }};
  // clang-format on
};

inline std::optional<Paradigm> parse_paradigm(std::string_view t) { return parse_enum<Paradigm>(t); }

/// The table's row of `p`.
constexpr const ParadigmInfo& paradigm_info(Paradigm p) {
  for (const auto& row : Spellings<Paradigm>::table) {
    if (row.value == p) return row;
  }
  return Spellings<Paradigm>::table[0];  // unreachable: every value has a row (tests/core)
}

/// ddp and zero: gradients all-reduced by the DDP reducer.
constexpr bool uses_ddp_reducer(Paradigm p) { return paradigm_info(p).ddp_reducer; }
/// pipeline and model-parallel: the model split into one stage per rank.
constexpr bool splits_into_stages(Paradigm p) { return paradigm_info(p).staged; }
/// Every paradigm but allreduce trains spec.benchmark.model.
constexpr bool trains_model(Paradigm p) { return paradigm_info(p).trains_model; }
/// hybrid-ps: parameter-server processes besides the trainers.
constexpr bool has_parameter_servers(Paradigm p) { return paradigm_info(p).parameter_servers; }
/// The optimizer a paradigm uses when spec.benchmark.optimizer is not set: adam for zero (ZeRO
/// shards Adam's state), sgd (momentum 0.9) for the others.
constexpr Optimizer default_optimizer(Paradigm p) { return paradigm_info(p).default_optimizer; }

}  // namespace trainbench
