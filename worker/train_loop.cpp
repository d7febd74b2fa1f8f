#include "worker/train_loop.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/analysis/mfu.hpp"
#include "core/results/run_result.hpp"
#include "core/results/utilization.hpp"
#include "core/util/version.hpp"
#include "worker/environment_info.hpp"
#include "worker/gpu_monitor.hpp"
#include "worker/metrics.hpp"
#include "worker/output_files.hpp"
#include "worker/paradigms.hpp"
#include "worker/peak_gemm.hpp"
#include "worker/rank_context.hpp"
#include "worker/rank_record.hpp"
#include "worker/step.hpp"
#include "worker/system_probe.hpp"
#include "worker/topology_probe.hpp"
#include "worker/torch_compat.hpp"
#include "worker/train_common.hpp"
#include "worker/ddp_reducer.hpp"
#include "worker/torch_ddp_reducer.hpp"
#include "worker/worker_error.hpp"

namespace trainbench::worker {
namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

}  // namespace

// ---------------------------------------------------------------- shared pieces (train_common.hpp)

void set_rank_threads(const RunConfig& c) {
  torch::set_num_threads(c.threads_per_process);
  try {
    at::set_num_interop_threads(1);  // only allowed before inter-op work started
  } catch (const c10::Error&) {
  }
}

std::int64_t element_count(const std::vector<at::Tensor>& tensors) {
  std::int64_t n = 0;
  for (const auto& t : tensors) n += t.numel();
  return n;
}

at::Device rank_device(const RankEnv& env, const RunConfig& c) {
  if (c.device != Device::kCuda) return at::Device(at::kCPU);
  if (!compat::built_with_cuda() || !torch::cuda::is_available()) {
    throw ConfigError("run config: device cuda, but " +
                      std::string(compat::built_with_cuda() ? "no CUDA device is available"
                                                         : "this worker was built without CUDA"));
  }
  compat::cuda_set_device(env.local_rank);
  return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(env.local_rank));
}

SyntheticBatch rank_batch(const BenchModel& model, const RunConfig& c, int rank) {
  at::Generator gen =
      at::detail::createCPUGenerator(splitmix64(c.seed ^ splitmix64(static_cast<std::uint64_t>(rank) + 1)));
  return model.synthetic_batch(c.batch_size_per_device, gen);
}

void write_progress(const std::string& path, const char* phase, int repeat, int repeats, int step,
                    int steps, double seconds) {
  nlohmann::json j{{"phase", phase}, {"repeat", repeat},   {"repeats", repeats},
                   {"step", step},   {"steps", steps},     {"secPerIter", seconds}};
  write_file_atomically(path, j.dump() + "\n");
}

void dump_parameters(const std::string& prefix, int rank, const std::vector<torch::Tensor>& params) {
  std::vector<float> values;
  for (const auto& p : params) {
    torch::Tensor flat = p.detach().to(torch::kCPU, torch::kFloat).contiguous().reshape({-1});
    const float* data = flat.data_ptr<float>();
    values.insert(values.end(), data, data + flat.numel());
  }
  write_float32_file(prefix + ".rank" + std::to_string(rank) + ".bin", values);
}

std::unique_ptr<GradientReducer> make_ddp_reducer(const std::vector<torch::Tensor>& params,
                                                  const std::vector<torch::Tensor>& buffers, Communicator& comm,
                                                  const RunConfig& c) {
  if (comm.size() > 1) {
    std::vector<torch::Tensor> state = params;
    state.insert(state.end(), buffers.begin(), buffers.end());
    comm.broadcast(state, 0);
  }
  switch (c.ddp.implementation) {
    case DdpImplementation::kTrainbench:
      return std::make_unique<DdpReducer>(params, comm, c.ddp.bucket_cap_mb, c.ddp.gradient_compression);
    case DdpImplementation::kPytorch:
      break;
  }
  return std::make_unique<TorchDdpReducer>(params, comm, c.ddp.bucket_cap_mb, c.ddp.gradient_compression);
}

std::unique_ptr<WorkerMetrics> serve_worker_metrics(const RankEnv& env, const RunConfig& c, const WorkerOptions& o,
                                                    Role role, int world) {
  if (o.metrics_port < 0) return nullptr;
  const std::string job = c.job_name.empty() ? "local" : c.job_name;  // the plan always sets it
  const int port = o.metrics_port == 0 ? 0 : o.metrics_port + env.local_rank;
  auto metrics =
      WorkerMetrics::serve(o.metrics_host + ":" + std::to_string(port),
                           MetricLabels{job, std::to_string(c.index), to_string(role), std::to_string(env.rank),
                                        std::to_string(env.node_rank), c.model, to_string(c.paradigm), world},
                           BuildInfo{kVersion, TORCH_VERSION, to_string(c.backend), to_string(c.device)});
  metrics->set_planned_steps(static_cast<std::int64_t>(c.warmup_steps) + c.repeats * c.measure_steps);
  return metrics;
}

// ---------------------------------------------------------------- rank setup

RankContext::RankContext(const RankEnv& e, const RunConfig& c, const WorkerOptions& o)
    : env(e),
      config(c),
      options(o),
      device((set_rank_threads(c), rank_device(e, c))),
      progress_(std::make_unique<RankProgress>(
          progress_identity(e, e.rank < c.world_size() ? Role::kTrainer : Role::kParameterServer))) {
  if (o.external_store) {
    store_ = RunStore::connect(env.master_addr, env.master_port, std::chrono::seconds(c.collective_timeout_seconds));
  }
  start_heartbeat();
}

RankContext::~RankContext() = default;

/// The watcher reads the records: the master pod from the store (a connection of the heartbeat's
/// own, so that it never waits behind the rank's store calls), trainbench run from a file.
void RankContext::start_heartbeat() {
  // Rank 0's record is also the run's progress, which the master serves to the operator.
  if (config.hang_timeout_seconds <= 0 && !(options.external_store && env.rank == 0)) return;
  if (options.external_store) {
    std::shared_ptr<RunStore> client =
        RunStore::connect(env.master_addr, env.master_port, std::chrono::seconds(config.collective_timeout_seconds));
    const std::string key = kProgressKeyPrefix + std::to_string(env.rank);
    heartbeat_ =
        std::make_unique<ProgressHeartbeat>(*progress_, [client, key](const std::string& j) { client->set(key, j); });
  } else if (!options.rank_progress_file.empty()) {
    const std::string file = options.rank_progress_file;
    heartbeat_ = std::make_unique<ProgressHeartbeat>(
        *progress_, [file](const std::string& j) { write_file_atomically(file, j + "\n"); });
  }
}

Communicator& RankContext::comm() {
  if (!comm_) {
    comm_ = Communicator::create(env, config, store_.get(), options.bind_address);
    comm_->set_progress(progress_.get());
  }
  return *comm_;
}

LoopShape Step::loop_shape() const {
  const RunConfig& c = rank_.config;
  return LoopShape{c.warmup_steps, c.repeats, c.measure_steps};
}

RecordShape Step::record_shape() const {
  const LoopShape s = loop_shape();
  return RecordShape{static_cast<std::size_t>(s.repeats), static_cast<std::size_t>(s.measure_steps), 0};
}

namespace {

// ---------------------------------------------------------------- the loop

/// The one non-finite-loss check of the worker.
void check_loss_is_finite(double loss, std::int64_t step_number) {
  if (!std::isfinite(loss)) {
    std::ostringstream msg;
    msg << "loss is not finite (" << loss << ") at step " << step_number;
    throw std::runtime_error(msg.str());
  }
}

/// The rank's /metrics (with the GPU's utilization where there is one), fed after every step,
/// and the same readings over the measured steps for the report (the rank's utilization).
class LoopMetrics {
 public:
  LoopMetrics(const RankContext& rank, const Step& step, const std::optional<MeasuredGemm>& gemm) : rank_(rank) {
    if (rank.device.is_cuda()) {
      std::string why;
      gpu_monitor_ = GpuMonitor::open(rank.device.index(), &why);
      if (!gpu_monitor_) std::cerr << "trainbench-worker: no GPU utilization (NVML): " << why << "\n";
    }
    const std::optional<Role> role = step.metrics_role();
    if (!role) return;
    metrics_ = serve_worker_metrics(rank.env, rank.config, rank.options, *role, rank.config.world_size());
    if (metrics_ && *role == Role::kTrainer) {
      const std::string device_name = rank.device.is_cuda() ? compat::cuda_device_name(rank.device.index()) : "";
      const std::optional<Peak> peak = resolve_peak(rank.config, device_name, gemm);
      metrics_->set_model_flops(rank_flops_per_example(rank.config),
                                peak ? std::optional<double>(peak->tflops * 1e12) : std::nullopt);
    }
    allreduce_bytes_ = step.allreduce_bytes_per_step();
  }

  void observe(const StepTiming& t, bool measured) {
    const std::optional<GpuSample> g = gpu_monitor_ ? gpu_monitor_->sample() : std::nullopt;
    if (g && measured) window_.add_gpu_sample(g->utilization_ratio, g->memory_used_bytes);
    if (!metrics_) return;
    metrics_->observe_step(t.seconds, t.communication_seconds, rank_.config.batch_size_per_device, allreduce_bytes_,
                           measured);
    metrics_->refresh_process();
    if (const Communicator* comm = rank_.comm_if_created()) metrics_->set_sent_bytes(comm->sent_bytes());
    const at::Device& device = rank_.device;
    if (device.is_cuda()) {
      metrics_->set_gpu_memory(compat::cuda_memory_allocated_bytes(device.index()),
                               compat::cuda_peak_memory_bytes(device.index()));
    }
    if (g) metrics_->set_gpu_utilization(g->utilization_ratio, g->memory_used_bytes);
  }

  /// Before the first measured step.
  void begin_measuring() { window_.begin(reading()); }
  /// After the last of `steps` measured steps.
  RankUtilization utilization(std::int64_t steps) const {
    const at::Device& device = rank_.device;
    return window_.end(
        reading(), steps, peak_rss_bytes(),
        device.is_cuda() ? std::optional<std::int64_t>(compat::cuda_peak_memory_bytes(device.index())) : std::nullopt);
  }

  /// Before the warm-up: waits for the first scrape of /metrics, up to
  /// TRAINBENCH_METRICS_AWAIT_SCRAPE_SECONDS. A scraper that finds a new pod only seconds after it
  /// starts (Prometheus's discovery sends targets at most every 5 s, its scrape manager reloads as
  /// often) then still holds the run's values from before its first step, and its rate() and
  /// increase() cover a run shorter than that delay.
  void await_first_scrape() const {
    const double wait = rank_.options.metrics_await_scrape_seconds;
    if (!metrics_ || wait <= 0) return;
    std::cerr << "trainbench-worker: rank " << rank_.env.rank << ": waiting up to " << wait
              << " s for a first scrape of /metrics (TRAINBENCH_METRICS_AWAIT_SCRAPE_SECONDS)\n";
    if (!metrics_->await_scrape(std::chrono::milliseconds(static_cast<std::int64_t>(wait * 1000)))) {
      std::cerr << "trainbench-worker: rank " << rank_.env.rank << ": no scrape of /metrics within " << wait
                << " s: training without one\n";
    }
  }

  /// Keeps the last values scrapeable a little longer (TRAINBENCH_METRICS_LINGER_SECONDS): the
  /// run is over and its result handed over, the operator now deletes the run's pods. Serve the
  /// last values through that SIGTERM until the linger ends (the pod's grace period covers it;
  /// SIGKILL still ends it).
  void linger() const {
    if (!metrics_ || rank_.options.metrics_linger_seconds <= 0) return;
    std::signal(SIGTERM, SIG_IGN);
    std::this_thread::sleep_for(std::chrono::duration<double>(rank_.options.metrics_linger_seconds));
  }

 private:
  const RankContext& rank_;
  std::unique_ptr<WorkerMetrics> metrics_;
  std::unique_ptr<GpuMonitor> gpu_monitor_;
  std::int64_t allreduce_bytes_ = 0;
  UtilizationWindow window_;

  UtilizationWindow::Reading reading() const {
    const Communicator* comm = rank_.comm_if_created();
    const auto now = std::chrono::steady_clock::now().time_since_epoch();
    return UtilizationWindow::Reading{std::chrono::duration<double>(now).count(), process_cpu_seconds(),
                                      comm != nullptr ? comm->sent_bytes() : 0};
  }
};

/// Appends a measured step's compute (its time not spent waiting on other ranks) and exposed
/// communication to repeat `r` of the record.
void add_split(RankRecord& record, std::size_t r, const StepTiming& t) {
  const double communication = std::min(std::max(t.communication_seconds, 0.0), t.seconds);
  record.compute_seconds[r].push_back(t.seconds - communication);
  record.communication_seconds[r].push_back(communication);
}

/// Runs `step` through the warm-up and the measured repeats; returns the rank's record with its
/// ids, step times, first and last measured losses and peak memory.
RankRecord run_loop(Step& step, const RankContext& rank, LoopMetrics& metrics) {
  const LoopShape shape = step.loop_shape();
  const RankEnv& env = rank.env;
  const std::string& progress = rank.options.progress_file;
  const bool report_progress = env.rank == 0 && !progress.empty();
  RankRecord record;
  record.rank = env.rank;
  record.node_rank = env.node_rank;
  record.local_rank = env.local_rank;
  double last_loss = 0;
  std::int64_t index = 0;
  const RunTestOptions& test = rank.config.test;
  auto run = [&](bool measured, int repeat) {
    rank.progress().begin_step(index, step.first_phase());
    if (index == test.sigstop_at_step && env.rank == test.sigstop_rank) {  // test option: a hung rank
      rank.publish_progress();
      std::raise(SIGSTOP);
    }
    const StepTiming t = step.run_step(StepContext{index, measured, repeat});
    ++index;
    if (t.loss) {
      last_loss = *t.loss;
      check_loss_is_finite(last_loss, index);
    }
    metrics.observe(t, measured);
    return t;
  };
  metrics.await_first_scrape();
  for (int s = 1; s <= shape.warmup_steps; ++s) {
    const double sec = run(false, 0).seconds;
    if (report_progress) write_progress(progress, "warmup", 0, shape.repeats, s, shape.warmup_steps, sec);
  }
  const int kill_rank = rank.config.test.sigkill_rank_at_first_measured_step;
  metrics.begin_measuring();
  const bool split = step.record_shape().compute_split;
  record.step_seconds.resize(static_cast<std::size_t>(shape.repeats));
  if (split) {
    record.compute_seconds.resize(static_cast<std::size_t>(shape.repeats));
    record.communication_seconds.resize(static_cast<std::size_t>(shape.repeats));
  }
  for (int r = 1; r <= shape.repeats; ++r) {
    auto& times = record.step_seconds[static_cast<std::size_t>(r - 1)];
    times.reserve(static_cast<std::size_t>(shape.measure_steps));
    for (int s = 1; s <= shape.measure_steps; ++s) {
      if (index == shape.warmup_steps && env.rank == kill_rank) std::raise(SIGKILL);  // test option
      const StepTiming t = run(true, r - 1);
      times.push_back(t.seconds);
      if (split) add_split(record, static_cast<std::size_t>(r - 1), t);
      if (r == 1 && s == 1) record.initial_loss = last_loss;
      if (report_progress) write_progress(progress, "measure", r, shape.repeats, s, shape.measure_steps, times.back());
    }
  }
  record.final_loss = last_loss;
  record.utilization = metrics.utilization(static_cast<std::int64_t>(shape.repeats) * shape.measure_steps);
  const at::Device& device = rank.device;
  record.peak_memory_bytes = device.is_cuda() ? compat::cuda_peak_memory_bytes(device.index()) : peak_rss_bytes();
  return record;
}

/// Every rank's record on rank 0, in rank order (other ranks: empty). All ranks must call it.
std::vector<RankRecord> gather_records(RankContext& rank, const RankRecord& mine, const RecordShape& shape) {
  Communicator* comm = rank.comm_if_created();
  if (comm == nullptr) return {mine};
  const torch::Tensor row = torch::tensor(encode_record(mine, shape), torch::TensorOptions().dtype(torch::kDouble));
  const torch::Tensor all =
      comm->allgather(rank.config.backend == Backend::kNccl ? row.to(rank.device) : row).to(torch::kCPU).contiguous();
  if (rank.env.rank != 0) return {};
  std::vector<RankRecord> records;
  const double* data = all.data_ptr<double>();
  for (std::int64_t k = 0; k < all.size(0); ++k) records.push_back(decode_record(data + k * all.size(1), shape));
  return records;
}

/// Every rank's text on rank 0, in rank order (other ranks: empty). All ranks must call it: two
/// all-gathers, the lengths, then the texts padded to the longest.
std::vector<std::string> gather_texts(RankContext& rank, const std::string& mine) {
  Communicator* comm = rank.comm_if_created();
  if (comm == nullptr) return {mine};
  const bool nccl = rank.config.backend == Backend::kNccl;
  const auto to_comm = [&](const torch::Tensor& t) { return nccl ? t.to(rank.device) : t; };
  const torch::Tensor lengths =
      comm->allgather(to_comm(torch::tensor({static_cast<std::int64_t>(mine.size())}, torch::kLong))).to(torch::kCPU);
  torch::Tensor bytes = torch::zeros({lengths.max().item<std::int64_t>()}, torch::kUInt8);
  std::copy(mine.begin(), mine.end(), reinterpret_cast<char*>(bytes.data_ptr<std::uint8_t>()));
  const torch::Tensor all = comm->allgather(to_comm(bytes)).to(torch::kCPU).contiguous();
  if (rank.env.rank != 0) return {};
  std::vector<std::string> texts;
  for (std::int64_t k = 0; k < all.size(0); ++k) {
    const auto* row = reinterpret_cast<const char*>(all[k].data_ptr<std::uint8_t>());
    texts.emplace_back(row, static_cast<std::size_t>(lengths[k].item<std::int64_t>()));
  }
  return texts;
}

/// Where every rank ran (worker/topology_probe.hpp), on rank 0. All ranks must call it.
std::optional<Topology> gather_topology(RankContext& rank) {
  const int gpu = rank.device.is_cuda() ? rank.device.index() : -1;
  const std::vector<std::string> readings = gather_texts(rank, local_topology(rank.env.rank, gpu).dump());
  if (rank.env.rank != 0) return std::nullopt;
  return topology_of_readings(readings);
}

void run_rank(const RankEnv& env, const RunConfig& c, const WorkerOptions& o) {
  const StepFactory make_step = step_factory(env, c, o);  // validates the config for its paradigm
  RankContext rank(env, c, o);
  const std::optional<MeasuredGemm> peak_gemm = measure_peak_gemm(c);  // every process at once
  const std::unique_ptr<Step> step = make_step(rank);
  LoopMetrics metrics(rank, *step, peak_gemm);
  RankRecord record = run_loop(*step, rank, metrics);
  rank.progress().enter(ProgressPhase::kGather);
  step->finish(record);
  if (!o.dump_params_prefix.empty()) {
    const std::vector<torch::Tensor> params = step->dumped_parameters();
    if (!params.empty()) dump_parameters(o.dump_params_prefix, env.rank, params);
  }
  const std::vector<RankRecord> records = gather_records(rank, record, step->record_shape());
  std::optional<Topology> topology = gather_topology(rank);
  rank.progress().enter(ProgressPhase::kDone);
  if (env.rank != 0) {
    if (rank.store()) rank.store()->add(kFinishedKey, 1);
    metrics.linger();
    return;
  }
  RunResult result;
  result.run_index = c.index;
  result.world_size = c.world_size();
  result.environment = environment_info(c, rank.device);
  step->describe(result);
  result.peak_gemm = peak_gemm;
  result.topology = std::move(topology);
  add_records(result, records, c.world_size());
  hand_over_result(to_json(result).dump(2) + "\n", rank.store(), o.result_file);
  metrics.linger();
}

}  // namespace

void run_worker(const RankEnv& env, const RunConfig& config, const WorkerOptions& options) {
  try {
    run_rank(env, config, options);
  } catch (const c10::Error& e) {
    throw std::runtime_error(compat::error_message(e));
  }
}

}  // namespace trainbench::worker
