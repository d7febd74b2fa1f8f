#pragma once
// Pieces of the training loop (worker/train_loop.cpp) that other paradigm engines reuse
// (worker/hybrid_ps.cpp, worker/allreduce_bench.cpp): threads and device, per-rank synthetic data, progress and parameter dumps, the DDP
// reducer's set-up and the worker's /metrics.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/plan/run_config.hpp"
#include "worker/gradient_reducer.hpp"
#include "worker/metrics.hpp"
#include "worker/models.hpp"
#include "worker/process_group.hpp"
#include "worker/rank_env.hpp"
#include "worker/train_loop.hpp"

namespace trainbench::worker {

/// The rank's threads: c.threads_per_process intra-op threads, one inter-op thread.
void set_rank_threads(const RunConfig& c);

/// The device a rank works on: the CPU, or (device cuda) CUDA device LOCAL_RANK, made current.
/// Throws ConfigError when device cuda has no CUDA build or no device.
at::Device rank_device(const RankEnv& env, const RunConfig& c);

/// The batch data-parallel rank `rank` trains on, from a CPU generator seeded by (seed, rank) --
/// independent of the global seed used for the model.
SyntheticBatch rank_batch(const BenchModel& model, const RunConfig& c, int rank);

/// Elements in `tensors` together (a model's or a shard's parameter count).
std::int64_t element_count(const std::vector<at::Tensor>& tensors);

/// Rewrites TRAINBENCH_PROGRESS_FILE atomically (format: worker/main.cpp).
void write_progress(const std::string& path, const char* phase, int repeat, int repeats, int step, int steps,
                    double seconds);

/// TRAINBENCH_DUMP_PARAMS: `params` flattened in order, float32, to PREFIX.rank<R>.bin.
void dump_parameters(const std::string& prefix, int rank, const std::vector<at::Tensor>& params);

/// DDP's set-up over `comm`: broadcast of rank 0's parameters and buffers (when comm has more
/// than one rank), then the reducer of c.ddp.implementation (its bucket size and compression).
std::unique_ptr<GradientReducer> make_ddp_reducer(const std::vector<at::Tensor>& params,
                                                  const std::vector<at::Tensor>& buffers, Communicator& comm,
                                                  const RunConfig& c);

/// The rank's /metrics endpoint (nullptr unless TRAINBENCH_METRICS_PORT is set), labelled with
/// `role` and `world` ranks, planned steps set.
std::unique_ptr<WorkerMetrics> serve_worker_metrics(const RankEnv& env, const RunConfig& c, const WorkerOptions& o,
                                                    Role role, int world);

}  // namespace trainbench::worker
