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
//
// Its steps (trainer, server, and the one-process reference of TRAINBENCH_REFERENCE_WORLD_SIZE)
// come from make_hybrid_ps_step (worker/paradigms.hpp).

#include <ATen/ATen.h>

#include <cstdint>

namespace trainbench::worker {

/// Which parameter server owns which embedding rows: server s owns rows [s*N/P, (s+1)*N/P) of
/// every table (N = numEmbeddings, P = parameterServers).
struct RowSharding {
  std::int64_t rows = 1;     ///< N = numEmbeddings
  std::int64_t servers = 1;  ///< P
  std::int64_t begin(std::int64_t s) const { return s * rows / servers; }
  std::int64_t end(std::int64_t s) const { return (s + 1) * rows / servers; }
  std::int64_t count(std::int64_t s) const { return end(s) - begin(s); }
  /// The owner of each id: the largest s with floor(s*N/P) <= id, i.e. floor(((id+1)*P - 1) / N).
  at::Tensor owner(const at::Tensor& ids) const { return at::div((ids + 1) * servers - 1, rows, "floor"); }
};

}  // namespace trainbench::worker
