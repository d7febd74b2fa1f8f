#pragma once

#include "core/run_config.hpp"
#include "worker/rank_env.hpp"
#include "worker/train_loop.hpp"

namespace trainbench::worker {

/// One rank of a paradigm-allreduce run (nccl-tests' all_reduce_perf in the worker): rendezvous,
/// rank 0 measures the copy limit (core/allreduce.hpp MemoryCopyLimit), then for every size from
/// allreduce.minBytes to maxBytes (doubling): one all-reduce whose sums every rank verifies (a
/// wrong sum fails the run on every rank), warmupSteps untimed all-reduces, then `repeats` timings
/// of measureSteps back-to-back all-reduces. Rank 0 writes the RunResult (stepSeconds[repeat][size]
/// = seconds per all-reduce, plus the "allreduce" part) where run_worker would.
///
/// Test hook: TRAINBENCH_ALLREDUCE_FAULT_RANK=R makes rank R contribute a wrong value to the
/// verified all-reduce of every size, so that the check must fail the run.
void run_allreduce_benchmark(const RankEnv& env, const RunConfig& config, const WorkerOptions& options);

}  // namespace trainbench::worker
