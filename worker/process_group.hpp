#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/intrusive_ptr.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/plan/run_config.hpp"
#include "worker/rank_env.hpp"
#include "worker/rank_progress.hpp"

namespace c10d {
class ProcessGroup;
}

namespace trainbench::worker {

/// What a wait stands for in the rank's progress record (worker/rank_progress.hpp).
struct WaitTracking {
  RankProgress* progress = nullptr;  ///< nullptr: the wait is not recorded
  ProgressPhase phase = ProgressPhase::kAllReduce;
  std::uint64_t seq = 0;  ///< collectives: their sequence number
  int peer = -1;          ///< point-to-point: the other rank
  int bucket = -1;
  int buckets = 0;
};

/// A collective in flight; wait() records where the rank waits (its phase, collective or peer)
/// and blocks until it completes, rethrowing its error.
class PendingCollective {
 public:
  PendingCollective() = default;
  explicit PendingCollective(std::function<void()> wait_fn, WaitTracking tracking = {})
      : wait_(std::move(wait_fn)), tracking_(tracking) {}
  void wait();
  /// The wait is recorded as `phase` with `peer` instead (a trainer's lookup: kPsRequest).
  PendingCollective& as(ProgressPhase phase, int peer) {
    tracking_.phase = phase;
    tracking_.peer = peer;
    return *this;
  }
  /// DDP: the all-reduce of bucket `bucket` (0-based) of `buckets`.
  PendingCollective& in_bucket(int bucket, int buckets) {
    tracking_.bucket = bucket;
    tracking_.buckets = buckets;
    return *this;
  }
  /// Not recorded: waited for on a thread beside the rank's main one.
  PendingCollective& untracked() {
    tracking_.progress = nullptr;
    return *this;
  }

 private:
  std::function<void()> wait_;
  WaitTracking tracking_;
};

/// A receive from any rank in flight (Communicator::recv_any). wait() blocks until it completes
/// (the collective timeout applies) and returns the sender's rank, or -1 when abort() -- from
/// any thread -- ended it first.
class PendingRecv {
 public:
  PendingRecv() = default;
  PendingRecv(std::function<int()> wait_fn, std::function<void()> abort_fn)
      : wait_(std::move(wait_fn)), abort_(std::move(abort_fn)) {}
  int wait();
  void abort();

 private:
  std::function<int()> wait_;
  std::function<void()> abort_;
};

/// Store keys of the operator's report path: rank 0 sets the RunResult JSON under kResultKey;
/// every rank adds 1 to kFinishedKey when it is done with the store.
inline constexpr const char* kResultKey = "trainbench/result";
inline constexpr const char* kFinishedKey = "trainbench/finished";
/// Each rank's heartbeat sets its progress record (core/results/rank_progress.hpp) under this prefix +
/// its rank; the master pod watches them (worker/master.hpp).
inline constexpr const char* kProgressKeyPrefix = "trainbench/progress/";

/// A run's rendezvous store (c10d TCPStore) used as a key-value channel: in the operator's pods
/// the master hosts it and the ranks are clients (TRAINBENCH_EXTERNAL_STORE=1); rank 0 hands
/// the run's result to the master through it.
class RunStore {
 public:
  /// Client of the store at addr:port (retries until the server is up or `timeout` passes).
  static std::unique_ptr<RunStore> connect(const std::string& addr, int port, std::chrono::milliseconds timeout);
  /// Server on `port` (all interfaces), for the master.
  static std::unique_ptr<RunStore> serve(int port, std::chrono::milliseconds timeout);
  ~RunStore();
  RunStore(const RunStore&) = delete;
  RunStore& operator=(const RunStore&) = delete;

  /// A value of any size (one over 4 MiB is stored in parts: TCPStore's libuv server refuses
  /// values over 8 MiB).
  void set(const std::string& key, const std::string& value);
  /// Blocks until `key` exists or `timeout` passes (then throws).
  std::string get(const std::string& key, std::chrono::milliseconds timeout);
  /// The value of `key` if it exists now, without waiting.
  std::optional<std::string> try_get(const std::string& key);
  std::int64_t add(const std::string& key, std::int64_t delta);

 private:
  friend class Communicator;
  struct Impl;
  explicit RunStore(std::unique_ptr<Impl> impl);
  /// `value` as read under `key`, with its parts joined when it was stored in parts.
  std::string joined(const std::string& key, std::string value);
  std::unique_ptr<Impl> impl_;
};

/// Rank 0's hand-over of a run's result JSON: into the store under kResultKey (then kFinishedKey
/// + 1) when the run has one (the operator's master pod collects it), else to `result_file`
/// (atomically), else stdout.
void hand_over_result(const std::string& result_json, RunStore* store, const std::string& result_file);

/// The worker's process group: a c10d TCPStore rendezvous (rank 0 serves it at
/// MASTER_ADDR:MASTER_PORT) and a ProcessGroupGloo (CPU) or ProcessGroupNCCL (CUDA builds).
/// Every rank must call the collectives in the same order.
class Communicator {
 public:
  /// Rendezvous; timeout = config.collective_timeout_seconds. Throws on failure/timeout.
  /// `external`: rendezvous through this store instead of rank 0 serving one at
  /// MASTER_ADDR:MASTER_PORT. `bind_address`: the address gloo listens on (the pod IP); empty:
  /// 127.0.0.1 for a loopback master, else the host name's address.
  static std::unique_ptr<Communicator> create(const RankEnv& env, const RunConfig& config,
                                              const RunStore* external = nullptr,
                                              const std::string& bind_address = "");
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const;
  int size() const;
  const std::string& backend_name() const;
  /// Where the waits of this communicator (and its subgroups) are recorded: the rank's record
  /// once set_progress() named it, else one of its own.
  RankProgress& progress() const;
  void set_progress(RankProgress* progress);
  /// Bytes this rank has sent to other ranks so far, counted at each launch as
  /// core/results/utilization.hpp says (all-reduce 2(p-1)/p N, all-gather (p-1) N, a broadcast's root
  /// (p-1) N, a send N; receives count at their sender). A subgroup counts into its parent's.
  std::int64_t sent_bytes() const;

  /// In-place SUM all-reduce of a dense tensor, asynchronous.
  PendingCollective allreduce_sum(at::Tensor tensor);
  /// Blocking broadcast from `root` of any number of tensors (coalesced per dtype).
  void broadcast(const std::vector<at::Tensor>& tensors, int root);
  /// Blocking all-gather of a 1-D tensor of the same length on every rank: returns
  /// [size, length], row r from rank r.
  at::Tensor allgather(const at::Tensor& tensor);
  /// Blocking all-gather of `input` into `outputs`, one tensor like `input` per rank (views into
  /// one buffer work: no stacked copy as allgather() makes).
  void allgather_into(const at::Tensor& input, const std::vector<at::Tensor>& outputs);
  /// Point-to-point, asynchronous: wait() completes it. `tensor` (contiguous) is kept alive
  /// until then; a recv fills it. Messages between two ranks match by `tag`.
  PendingCollective send(at::Tensor tensor, int dst, int tag);
  PendingCollective recv(at::Tensor tensor, int src, int tag);
  /// Receive from whichever rank sends first with `tag` (gloo's recvAnysource; NCCL has none).
  /// Safe to call while another thread sends or receives on this communicator.
  PendingRecv recv_any(at::Tensor tensor, int tag);

  /// This group as a c10d::ProcessGroup over the same gloo or NCCL backend, made on first call:
  /// for PyTorch's own c10d::Reducer (worker/torch_ddp_reducer.hpp). What goes through it
  /// bypasses this class's accounting: its user counts it with count_allreduce().
  c10::intrusive_ptr<c10d::ProcessGroup> process_group();
  /// An all-reduce of `bytes` issued through process_group(), into sent_bytes().
  void count_allreduce(std::int64_t bytes);

  /// A process group of `members` only (ranks of this communicator, ascending; this rank must be
  /// one of them): a new gloo group over a c10d::PrefixStore `name` on this one's store, its
  /// rank the index of this rank in `members`. Collective over the members (the others do not
  /// call it). Same timeout and network device as this one.
  std::unique_ptr<Communicator> subgroup(const std::string& name, const std::vector<int>& members) const;

 private:
  struct Impl;
  explicit Communicator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace trainbench::worker
