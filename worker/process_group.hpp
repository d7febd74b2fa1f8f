#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/run_config.hpp"
#include "worker/rank_env.hpp"

namespace trainbench::worker {

/// A collective in flight; wait() blocks until it completes and rethrows its error.
class PendingCollective {
 public:
  PendingCollective() = default;
  explicit PendingCollective(std::function<void()> wait_fn) : wait_(std::move(wait_fn)) {}
  void wait();

 private:
  std::function<void()> wait_;
};

/// The worker's process group: a c10d TCPStore rendezvous (rank 0 serves it at
/// MASTER_ADDR:MASTER_PORT) and a ProcessGroupGloo (CPU) or ProcessGroupNCCL (CUDA builds).
/// Every rank must call the collectives in the same order.
class Communicator {
 public:
  /// Rendezvous; timeout = config.collective_timeout_seconds. Throws on failure/timeout.
  static std::unique_ptr<Communicator> create(const RankEnv& env, const RunConfig& config);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const;
  int size() const;
  const std::string& backend_name() const;

  /// In-place SUM all-reduce of a dense tensor, asynchronous.
  PendingCollective allreduce_sum(at::Tensor tensor);
  /// Blocking broadcast from `root` of any number of tensors (coalesced per dtype).
  void broadcast(const std::vector<at::Tensor>& tensors, int root);
  /// Blocking all-gather of a 1-D tensor of the same length on every rank: returns
  /// [size, length], row r from rank r.
  at::Tensor allgather(const at::Tensor& tensor);

 private:
  struct Impl;
  explicit Communicator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace trainbench::worker
