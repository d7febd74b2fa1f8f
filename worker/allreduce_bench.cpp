// paradigm allreduce (nccl-tests' all_reduce_perf in the worker): rendezvous, rank 0 measures
// the copy limit (core/spec/allreduce.hpp MemoryCopyLimit), then for every size from
// allreduce.minBytes to maxBytes (doubling): one all-reduce whose sums every rank verifies (a
// wrong sum fails the run on every rank), warmupSteps untimed all-reduces, then `repeats` timings
// of measureSteps back-to-back all-reduces. Rank 0's RunResult has stepSeconds[repeat][size] =
// seconds per all-reduce, plus the "allreduce" part.
//
// Its step: make_allreduce_step (worker/paradigms.hpp). Test option:
// RunConfig::test.allreduce_fault_rank = R makes rank R contribute a wrong value to the
// verified all-reduce of every size, so that the check must fail the run.

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <sstream>
#include <vector>

#include "core/results/run_result.hpp"
#include "core/spec/allreduce.hpp"
#include "worker/paradigms.hpp"
#include "worker/process_group.hpp"
#include "worker/rank_context.hpp"
#include "worker/step.hpp"
#include "worker/system_probe.hpp"
#include "worker/torch_compat.hpp"
#include "worker/worker_error.hpp"

namespace trainbench::worker {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

at::ScalarType scalar_type(const std::string& dtype) {
  if (dtype == "fp32") return at::kFloat;
  if (dtype == "fp16") return at::kHalf;
  if (dtype == "bf16") return at::kBFloat16;
  throw ConfigError("run config: allreduce.dtype must be fp32, fp16 or bf16, got '" + dtype + "'");
}

void validate(const RankEnv& env, const RunConfig& c) {
  auto fail = [](const std::string& m) { throw ConfigError("run config: " + m); };
  if (env.world_size != c.world_size()) {
    fail("the environment says world size " + std::to_string(env.world_size) + " but the config has " +
         std::to_string(c.nodes) + " node(s) x " + std::to_string(c.devices_per_node) + " device(s)");
  }
  for (const auto& e : validate_allreduce(c.allreduce, "allreduce")) fail(e.str());
  if (c.warmup_steps < 0) fail("warmupSteps must be >= 0");
  if (c.measure_steps < 1) fail("measureSteps must be >= 1");
  if (c.repeats < 1) fail("repeats must be >= 1");
  if (c.threads_per_process < 1) fail("threadsPerProcess must be >= 1 (resolved)");
  if (c.collective_timeout_seconds < 1) fail("collectiveTimeoutSeconds must be >= 1");
}

/// The buffer the copy limit is measured on: 256 MiB, beyond what one core's share of a
/// last-level cache holds on current CPUs (here: 64 MiB copies at 20.7 GB/s from cache, 256 MiB
/// and 1 GiB alike at 8.1-8.3 GB/s from memory; docs/allreduce.md).
constexpr std::int64_t kLimitBufferBytes = 256LL << 20;
constexpr int kLimitCopies = 5;

/// Anonymous memory, huge pages asked for: faulting 2 x 256 MiB in 4 KiB pages costs seconds on
/// some VMs (and is never timed anyway).
class Mapping {
 public:
  explicit Mapping(std::size_t n) : n_(n) {
    p_ = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p_ == MAP_FAILED) throw std::runtime_error("memcpy limit: cannot map " + std::to_string(n) + " bytes");
#ifdef MADV_HUGEPAGE
    ::madvise(p_, n, MADV_HUGEPAGE);
#endif
  }
  ~Mapping() { ::munmap(p_, n_); }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  char* data() const { return static_cast<char*>(p_); }

 private:
  void* p_ = nullptr;
  std::size_t n_ = 0;
};

/// Single-thread memcpy bandwidth of this host (bytes copied per second, best of kLimitCopies
/// after one untimed copy; both buffers written first so that no page fault is timed).
MemoryCopyLimit measure_host_memcpy() {
  MemoryCopyLimit l;
  l.kind = "hostMemcpy";
  l.buffer_bytes = kLimitBufferBytes;
  l.copies = kLimitCopies;
  const auto n = static_cast<std::size_t>(l.buffer_bytes);
  Mapping src_map(n), dst_map(n);
  char* src = src_map.data();
  char* dst = dst_map.data();
  std::memset(src, 1, n);
  std::memset(dst, 2, n);
  volatile char sink = 0;
  double best = 0;
  for (int k = 0; k <= kLimitCopies; ++k) {
    src[static_cast<std::size_t>(k) * 4099 % n] = static_cast<char>(k);  // a copy is never a no-op
    const auto t0 = Clock::now();
    std::memcpy(dst, src, n);
    const double sec = seconds_since(t0);
    sink = static_cast<char>(sink + dst[static_cast<std::size_t>(k) * 7919 % n]);
    if (k > 0 && sec > 0) best = std::max(best, static_cast<double>(n) / sec);
  }
  (void)sink;
  l.bytes_per_sec = best;
  return l;
}

/// Device-to-device copy bandwidth of the run's GPU, counted like the host memcpy.
MemoryCopyLimit measure_device_copy(const at::Device& device) {
  MemoryCopyLimit l;
  l.kind = "deviceMemcpy";
  l.buffer_bytes = 1LL << 30;
  l.copies = kLimitCopies;
  const auto opts = at::TensorOptions().dtype(at::kByte).device(device);
  at::Tensor src = at::ones({l.buffer_bytes}, opts);
  at::Tensor dst = at::zeros({l.buffer_bytes}, opts);
  double best = 0;
  for (int k = 0; k <= kLimitCopies; ++k) {
    compat::cuda_synchronize(device.index());
    const auto t0 = Clock::now();
    dst.copy_(src);
    compat::cuda_synchronize(device.index());
    const double sec = seconds_since(t0);
    if (k > 0 && sec > 0) best = std::max(best, static_cast<double>(l.buffer_bytes) / sec);
  }
  l.bytes_per_sec = best;
  return l;
}

/// Rank r contributes ((r + i) mod 3) - 1 at element i: -1, 0 or 1. Any run of consecutive ranks
/// sums to -1, 0 or 1 (each period of 3 cancels), so the result and a ring's partial sums are
/// exact in every dtype; other reduction orders stay within |n/3|.
at::Tensor pattern(std::int64_t count, int rank, at::ScalarType dtype, const at::Device& device) {
  at::Tensor idx = at::arange(count, at::TensorOptions().dtype(at::kInt).device(device));
  return (idx.add_(rank).remainder_(3).sub_(1)).to(dtype);
}

/// Largest |result - expected| of the verified all-reduce: expected[i] = sum over ranks r of
/// ((r + i) mod 3) - 1, which depends on i mod 3 only.
double max_error(const at::Tensor& result, int world) {
  double e[3] = {0, 0, 0};
  for (int k = 0; k < 3; ++k) {
    for (int r = 0; r < world; ++r) e[k] += static_cast<double>((r + k) % 3) - 1.0;
  }
  const auto count = result.numel();
  at::Tensor m = at::arange(count, at::TensorOptions().dtype(at::kInt).device(result.device())).remainder_(3);
  at::Tensor expected = at::full({count}, e[2], at::TensorOptions().dtype(at::kFloat).device(result.device()));
  expected.masked_fill_(m == 0, e[0]);
  expected.masked_fill_(m == 1, e[1]);
  return (result.to(at::kFloat) - expected).abs().max().item<double>();
}

/// One step per message size, nccl-tests' order: a size is verified, warmed up and timed
/// `repeats` times before the next (its repeats lie inside the step, so the loop runs one
/// repeat of the sizes and the record takes the step's [repeat][size] seconds).
class AllreduceStep final : public Step {
 public:
  explicit AllreduceStep(RankContext& rank)
      : Step(rank),
        dtype_(scalar_type(rank.config.allreduce.dtype)),
        device_(rank.device),
        comm_(rank.comm()),
        flag_(at::zeros({1}, at::TensorOptions().dtype(at::kFloat).device(device_))) {
    const RunConfig& c = rank.config;
    const auto opts = at::TensorOptions().dtype(dtype_).device(device_);
    // The same collective on every rank first: does the backend take this dtype at all?
    try {
      comm_.allreduce_sum(at::zeros({1}, opts)).wait();
    } catch (const std::exception& e) {
      throw ConfigError("allreduce.dtype " + c.allreduce.dtype + " is not supported by the " + comm_.backend_name() +
                        " backend of this libtorch (" + e.what() + ")");
    }
    // The limit, on rank 0 alone while the others wait in the barrier.
    if (rank.env.rank == 0) limit_ = device_.is_cuda() ? measure_device_copy(device_) : measure_host_memcpy();
    barrier();
    sizes_ = allreduce_sizes(c.allreduce.min_bytes, c.allreduce.max_bytes);
    element_bytes_ = allreduce_element_bytes(c.allreduce.dtype);
    buffer_ = at::empty({sizes_.back() / element_bytes_}, opts);
    seconds_.assign(static_cast<std::size_t>(c.repeats), std::vector<double>(sizes_.size(), 0.0));
  }

  StepTiming run_step(const StepContext& step) override {
    const RunConfig& c = rank_.config;
    const auto s = static_cast<std::size_t>(step.index);
    const std::int64_t count = sizes_[s] / element_bytes_;
    at::Tensor t = buffer_.narrow(0, 0, count);
    verify(t, sizes_[s]);
    // Timing on zeros (no denormals, no overflow however many all-reduces).
    t.zero_();
    for (int w = 0; w < c.warmup_steps; ++w) comm_.allreduce_sum(t).wait();
    for (int r = 0; r < c.repeats; ++r) {
      barrier();  // start together, as nccl-tests does before its timed loop
      sync_device();
      const auto t0 = Clock::now();
      for (int k = 0; k < c.measure_steps; ++k) comm_.allreduce_sum(t).wait();
      sync_device();
      seconds_[static_cast<std::size_t>(r)][s] = seconds_since(t0) / c.measure_steps;
    }
    return StepTiming{seconds_.back()[s], 0, std::nullopt};
  }

  void finish(RankRecord& record) override {
    buffer_ = at::Tensor();
    record.step_seconds = seconds_;
  }

  void describe(RunResult& result) const override {
    const RunConfig& c = rank_.config;
    AllreduceRunInfo info;
    info.dtype = c.allreduce.dtype;
    info.sizes_bytes = sizes_;
    info.limit = limit_;
    info.warmup_ops = c.warmup_steps;
    info.ops_per_repeat = c.measure_steps;
    info.verified = true;  // a wrong sum has thrown in run_step, on every rank
    result.allreduce = info;
  }

  LoopShape loop_shape() const override { return LoopShape{0, 1, static_cast<int>(sizes_.size())}; }
  RecordShape record_shape() const override {
    // Pure communication: no compute / communication split.
    return RecordShape{static_cast<std::size_t>(rank_.config.repeats), sizes_.size(), 0, false};
  }

 private:
  void sync_device() const {
    if (device_.is_cuda()) compat::cuda_synchronize(device_.index());
  }
  void barrier() { comm_.allreduce_sum(flag_.zero_()).wait(); }

  /// One all-reduce of the pattern into `t`, checked on every rank; throws on a wrong sum.
  void verify(at::Tensor& t, std::int64_t bytes) {
    const RunConfig& c = rank_.config;
    const int world = rank_.env.world_size;
    t.copy_(pattern(t.numel(), rank_.env.rank, dtype_, device_));
    if (rank_.env.rank == c.test.allreduce_fault_rank) t.narrow(0, 0, 1).add_(1);  // test option
    comm_.allreduce_sum(t).wait();
    sync_device();
    const double err = max_error(t, world);
    // Exact, except partial sums beyond a 16-bit type's integers (bf16: 256, fp16: 2048) in a
    // non-ring reduction order; a wrong contribution is off by at least 1 either way.
    const bool inexact = (dtype_ == at::kBFloat16 && world > 3 * 256) || (dtype_ == at::kHalf && world > 3 * 2048);
    const double tolerance = inexact ? 0.5 : 1e-3;
    flag_.fill_(err > tolerance ? 1.0 : 0.0);
    comm_.allreduce_sum(flag_).wait();
    const int bad_ranks = static_cast<int>(std::lround(flag_.item<double>()));
    if (bad_ranks > 0) {
      std::ostringstream msg;
      msg << "all-reduce of " << format_byte_size(bytes) << " (" << c.allreduce.dtype << ") summed wrongly on "
          << bad_ranks << " of " << world << " ranks (this rank's largest error " << err << ")";
      throw std::runtime_error(msg.str());
    }
  }

  const at::ScalarType dtype_;
  const at::Device device_;
  Communicator& comm_;
  at::Tensor flag_;
  MemoryCopyLimit limit_;
  std::vector<std::int64_t> sizes_;
  int element_bytes_ = 1;
  at::Tensor buffer_;
  std::vector<std::vector<double>> seconds_;  ///< [repeat][size]: seconds per all-reduce
};

}  // namespace

void validate_allreduce_run(const RankEnv& env, const RunConfig& c, const WorkerOptions&) {
  validate(env, c);
  (void)scalar_type(c.allreduce.dtype);
}

std::unique_ptr<Step> make_allreduce_step(RankContext& rank) { return std::make_unique<AllreduceStep>(rank); }

}  // namespace trainbench::worker
