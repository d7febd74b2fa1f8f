#include "worker/allreduce_bench.hpp"

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

#include <nlohmann/json.hpp>

#include "core/allreduce.hpp"
#include "core/run_result.hpp"
#include "core/version.hpp"
#include "worker/output_files.hpp"
#include "worker/process_group.hpp"
#include "worker/train_common.hpp"
#include "worker/environment_info.hpp"
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

void write_progress(const std::string& path, int step, int steps, double seconds) {
  nlohmann::json j{{"phase", "measure"}, {"repeat", 1}, {"repeats", 1},
                   {"step", step},       {"steps", steps}, {"secPerIter", seconds}};
  write_file_atomically(path, j.dump() + "\n");
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

}  // namespace

void run_allreduce_benchmark(const RankEnv& env, const RunConfig& c, const WorkerOptions& o) {
  validate(env, c);
  const at::ScalarType dtype = scalar_type(c.allreduce.dtype);
  at::set_num_threads(c.threads_per_process);
  const at::Device device = rank_device(env, c);
  auto sync_device = [&] {
    if (device.is_cuda()) compat::cuda_synchronize(device.index());
  };
  int fault_rank = -1;
  if (const char* f = std::getenv("TRAINBENCH_ALLREDUCE_FAULT_RANK"); f != nullptr && *f != '\0') {
    const auto r = parse_int(f);
    if (!r) throw ConfigError(std::string("TRAINBENCH_ALLREDUCE_FAULT_RANK must be an integer, got '") + f + "'");
    fault_rank = *r;
  }

  std::unique_ptr<RunStore> store;
  if (o.external_store) {
    store = RunStore::connect(env.master_addr, env.master_port, std::chrono::seconds(c.collective_timeout_seconds));
  }
  std::unique_ptr<Communicator> comm = Communicator::create(env, c, store.get(), o.bind_address);
  const int world = env.world_size;
  const auto opts = at::TensorOptions().dtype(dtype).device(device);
  at::Tensor flag = at::zeros({1}, at::TensorOptions().dtype(at::kFloat).device(device));
  auto barrier = [&] { comm->allreduce_sum(flag.zero_()).wait(); };

  // The same collective on every rank first: does the backend take this dtype at all?
  try {
    comm->allreduce_sum(at::zeros({1}, opts)).wait();
  } catch (const std::exception& e) {
    throw ConfigError("allreduce.dtype " + c.allreduce.dtype + " is not supported by the " + comm->backend_name() +
                      " backend of this libtorch (" + e.what() + ")");
  }

  // The limit, on rank 0 alone while the others wait in the barrier.
  MemoryCopyLimit limit;
  if (env.rank == 0) limit = device.is_cuda() ? measure_device_copy(device) : measure_host_memcpy();
  barrier();

  const std::vector<std::int64_t> sizes = allreduce_sizes(c.allreduce.min_bytes, c.allreduce.max_bytes);
  const int element_bytes = allreduce_element_bytes(c.allreduce.dtype);
  at::Tensor buffer = at::empty({sizes.back() / element_bytes}, opts);
  const bool report_progress = env.rank == 0 && !o.progress_file.empty();
  // seconds[repeat][size]: seconds per all-reduce
  std::vector<std::vector<double>> seconds(static_cast<std::size_t>(c.repeats),
                                           std::vector<double>(sizes.size(), 0.0));
  for (std::size_t s = 0; s < sizes.size(); ++s) {
    const std::int64_t count = sizes[s] / element_bytes;
    at::Tensor t = buffer.narrow(0, 0, count);
    // 1. Correctness: one all-reduce of the pattern, checked on every rank.
    t.copy_(pattern(count, env.rank, dtype, device));
    if (env.rank == fault_rank) t.narrow(0, 0, 1).add_(1);
    comm->allreduce_sum(t).wait();
    sync_device();
    const double err = max_error(t, world);
    // Exact, except partial sums beyond a 16-bit type's integers (bf16: 256, fp16: 2048) in a
    // non-ring reduction order; a wrong contribution is off by at least 1 either way.
    const bool inexact = (dtype == at::kBFloat16 && world > 3 * 256) || (dtype == at::kHalf && world > 3 * 2048);
    const double tolerance = inexact ? 0.5 : 1e-3;
    flag.fill_(err > tolerance ? 1.0 : 0.0);
    comm->allreduce_sum(flag).wait();
    const int bad_ranks = static_cast<int>(std::lround(flag.item<double>()));
    if (bad_ranks > 0) {
      std::ostringstream msg;
      msg << "all-reduce of " << format_byte_size(sizes[s]) << " (" << c.allreduce.dtype << ") summed wrongly on "
          << bad_ranks << " of " << world << " ranks (this rank's largest error " << err << ")";
      throw std::runtime_error(msg.str());
    }
    // 2. Timing on zeros (no denormals, no overflow however many all-reduces).
    t.zero_();
    for (int w = 0; w < c.warmup_steps; ++w) comm->allreduce_sum(t).wait();
    for (int r = 0; r < c.repeats; ++r) {
      barrier();  // start together, as nccl-tests does before its timed loop
      sync_device();
      const auto t0 = Clock::now();
      for (int k = 0; k < c.measure_steps; ++k) comm->allreduce_sum(t).wait();
      sync_device();
      seconds[static_cast<std::size_t>(r)][s] = seconds_since(t0) / c.measure_steps;
    }
    if (report_progress) {
      write_progress(o.progress_file, static_cast<int>(s) + 1, static_cast<int>(sizes.size()),
                     seconds.back()[s]);
    }
  }
  buffer = at::Tensor();
  const std::int64_t peak_memory = device.is_cuda() ? compat::cuda_peak_memory_bytes(device.index()) : peak_rss_bytes();

  // Gather one row of doubles per rank: rank, node rank, local rank, peak memory, seconds.
  std::vector<double> row{static_cast<double>(env.rank), static_cast<double>(env.node_rank),
                          static_cast<double>(env.local_rank), static_cast<double>(peak_memory)};
  for (const auto& rep : seconds) row.insert(row.end(), rep.begin(), rep.end());
  at::Tensor mine = at::tensor(row, at::TensorOptions().dtype(at::kDouble));
  at::Tensor all = comm->allgather(c.backend == Backend::kNccl ? mine.to(device) : mine).to(at::kCPU).contiguous();
  if (env.rank != 0) {
    if (store) store->add(kFinishedKey, 1);
    return;
  }

  RunResult result;
  result.run_index = c.index;
  result.world_size = world;
  result.environment = environment_info(c, device);
  AllreduceRunInfo info;
  info.dtype = c.allreduce.dtype;
  info.sizes_bytes = sizes;
  info.limit = limit;
  info.warmup_ops = c.warmup_steps;
  info.ops_per_repeat = c.measure_steps;
  info.verified = true;  // a wrong sum has thrown above, on every rank
  result.allreduce = info;
  const double* data = all.data_ptr<double>();
  const std::int64_t width = all.size(1);
  for (std::int64_t k = 0; k < all.size(0); ++k) {
    const double* x = data + k * width;
    RankResult rr;
    rr.rank = static_cast<int>(x[0]);
    rr.node_rank = static_cast<int>(x[1]);
    rr.local_rank = static_cast<int>(x[2]);
    rr.peak_memory_bytes = static_cast<std::int64_t>(x[3]);
    std::size_t pos = 4;
    for (int r = 0; r < c.repeats; ++r) {
      rr.step_seconds.emplace_back(x + pos, x + pos + sizes.size());
      pos += sizes.size();
    }
    result.ranks.push_back(std::move(rr));
  }
  hand_over_result(to_json(result).dump(2) + "\n", store.get(), o.result_file);
}

}  // namespace trainbench::worker
