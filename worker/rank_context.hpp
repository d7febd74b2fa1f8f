#pragma once
// The rank setup every paradigm shares: threads, device, the run's store and (on first use) the
// process group over every rank. Built by run_worker (worker/train_loop.cpp) after the
// paradigm's validation, handed to the paradigm's Step (worker/step.hpp).

#include <c10/core/Device.h>

#include <memory>

#include "core/plan/run_config.hpp"
#include "worker/process_group.hpp"
#include "worker/rank_env.hpp"
#include "worker/rank_progress.hpp"
#include "worker/train_loop.hpp"

namespace trainbench::worker {

class RankContext {
 public:
  /// Sets the rank's threads, makes its device current and (TRAINBENCH_EXTERNAL_STORE) connects
  /// to the master pod's store. Throws ConfigError when device cuda has no device.
  RankContext(const RankEnv& env, const RunConfig& config, const WorkerOptions& options);
  ~RankContext();
  RankContext(const RankContext&) = delete;
  RankContext& operator=(const RankContext&) = delete;

  const RankEnv& env;
  const RunConfig& config;
  const WorkerOptions& options;
  const at::Device device;

  /// The process group over every rank of the run: its rendezvous happens on the first call
  /// (paradigm none never calls it).
  Communicator& comm();
  /// The process group if comm() made one, else nullptr.
  Communicator* comm_if_created() const { return comm_.get(); }
  /// The master pod's store, or nullptr (rank 0 serves the rendezvous itself).
  RunStore* store() const { return store_.get(); }
  /// This rank's progress record; the steps set its phases, the communicator its waits.
  RankProgress& progress() const { return *progress_; }
  /// Publishes the record now when a heartbeat runs (hangTimeoutSeconds > 0).
  void publish_progress() const {
    if (heartbeat_) heartbeat_->beat();
  }

 private:
  void start_heartbeat();

  std::unique_ptr<RankProgress> progress_;
  std::unique_ptr<ProgressHeartbeat> heartbeat_;  ///< after progress_: stopped before it goes
  std::unique_ptr<RunStore> store_;
  std::unique_ptr<Communicator> comm_;
};

}  // namespace trainbench::worker
