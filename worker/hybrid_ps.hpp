#pragma once
// paradigm hybrid-ps: the DDP + RPC benchmark's shape (docs/paradigms-hybrid-ps.md).
//
// Ranks 0..T-1 are trainers (T = nodes x devicesPerNode), ranks T..T+P-1 parameter servers.
// Server s owns rows [s*N/P, (s+1)*N/P) of every one of the model's numTables embedding tables
// (N = numEmbeddings). Per step each trainer sends every server the ids it owns (a count, then
// the ids), gets back [B*numTables, D] partial bag sums, sums them into the features, runs the
// dense part (replicated with DDP over the trainers' own process group), and sends each server
// the features' gradient; a server serves step s's lookups in arrival order, then applies the T
// gradients in trainer order (plain SGD, learning rate / T) before it serves step s+1. The run
// equals one process holding the whole model and training on the trainers' concatenated batches
// (tests/worker/hybrid_ps_test.cpp).

#include "core/run_config.hpp"
#include "worker/rank_env.hpp"
#include "worker/train_loop.hpp"

namespace trainbench::worker {

/// One rank of a hybrid-ps run (WORLD_SIZE must be config.process_count()). With
/// TRAINBENCH_REFERENCE_WORLD_SIZE=W and WORLD_SIZE 1 (test hook): one process holding the whole
/// model trains on the batches of trainers 0..W-1 concatenated, tables with plain SGD and the
/// dense part with the run's optimizer.
void run_hybrid_ps(const RankEnv& env, const RunConfig& config, const WorkerOptions& options);

}  // namespace trainbench::worker
