#include "worker/train_loop.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdlib>
#include <cmath>
#include <csignal>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/run_result.hpp"
#include "core/version.hpp"
#include "worker/amp.hpp"
#include "worker/allreduce_bench.hpp"
#include "worker/ddp_reducer.hpp"
#include "worker/gpu_monitor.hpp"
#include "worker/hybrid_ps.hpp"
#include "worker/metrics.hpp"
#include "worker/models.hpp"
#include "worker/output_files.hpp"
#include "worker/pipeline.hpp"
#include "worker/process_group.hpp"
#include "worker/environment_info.hpp"
#include "worker/system_probe.hpp"
#include "worker/torch_compat.hpp"
#include "worker/train_common.hpp"
#include "worker/worker_error.hpp"
#include "worker/zero_optimizer.hpp"

namespace trainbench::worker {
namespace {

void validate(const RankEnv& env, const RunConfig& c, const WorkerOptions& o) {
  auto fail = [](const std::string& m) { throw ConfigError("run config: " + m); };
  if (!trains_model(c.paradigm) || has_parameter_servers(c.paradigm)) {  // run_worker dispatches those elsewhere
    fail("paradigm must be none, ddp, zero, pipeline or model-parallel, got '" + to_string(c.paradigm) + "'");
  }
  if (c.paradigm == Paradigm::kZero && c.optimizer != Optimizer::kAdam) {
    fail("paradigm zero shards Adam: optimizer must be adam");
  }
  if (splits_into_stages(c.paradigm) && c.precision == Precision::kAmpFp16) {
    fail("paradigm " + to_string(c.paradigm) + " does not support precision amp-fp16 (loss scaling)");
  }
  if (env.world_size != c.world_size()) {
    fail("the environment says world size " + std::to_string(env.world_size) +
         " but the config has " + std::to_string(c.nodes) + " node(s) x " +
         std::to_string(c.devices_per_node) + " device(s)");
  }
  if (c.paradigm == Paradigm::kNone && env.world_size != 1) {
    fail("paradigm none runs a single process, got world size " + std::to_string(env.world_size));
  }
  if (c.batch_size_per_device < 1) fail("batchSizePerDevice must be >= 1");
  if (c.warmup_steps < 0) fail("warmupSteps must be >= 0");
  if (c.measure_steps < 1) fail("measureSteps must be >= 1");
  if (c.repeats < 1) fail("repeats must be >= 1");
  if (c.threads_per_process < 1) fail("threadsPerProcess must be >= 1 (resolved)");
  if (!(c.learning_rate >= 0) || !std::isfinite(c.learning_rate)) fail("learningRate must be >= 0");
  if (c.collective_timeout_seconds < 1) fail("collectiveTimeoutSeconds must be >= 1");
  // (A one-stage pipeline with W micro-batches on the W ranks' batches accumulates their
  // gradients one batch at a time: the zero test's reference, see tests/worker.)
  if (o.reference_world_size != 0 &&
      ((c.paradigm != Paradigm::kNone && c.paradigm != Paradigm::kPipeline) || env.world_size != 1)) {
    throw ConfigError("TRAINBENCH_REFERENCE_WORLD_SIZE needs paradigm none and world size 1");
  }
  if (o.reference_world_size < 0) throw ConfigError("TRAINBENCH_REFERENCE_WORLD_SIZE must be >= 1");
}

std::optional<at::ScalarType> autocast_dtype(const RunConfig& c) {
  return autocast_dtype_for(c.precision, c.device);  // worker/amp.hpp
}

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

using Batch = SyntheticBatch;

}  // namespace

void set_rank_threads(const RunConfig& c) {
  torch::set_num_threads(c.threads_per_process);
  try {
    at::set_num_interop_threads(1);  // only allowed before inter-op work started
  } catch (const c10::Error&) {
  }
}

at::Device rank_device(const RankEnv& env, const RunConfig& c) {
  if (c.device != Device::kCuda) return at::Device(at::kCPU);
  if (!compat::kBuiltWithCuda || !torch::cuda::is_available()) {
    throw ConfigError("run config: device cuda, but " +
                      std::string(compat::kBuiltWithCuda ? "no CUDA device is available"
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

namespace {

Batch make_batch(const BenchModel& model, const RunConfig& c, int rank, int reference_world,
                 const torch::Device& device) {
  Batch b;
  if (reference_world > 0) {
    std::vector<torch::Tensor> xs, ys;
    for (int r = 0; r < reference_world; ++r) {
      Batch part = rank_batch(model, c, r);
      xs.push_back(part.inputs);
      ys.push_back(part.targets);
    }
    b.inputs = torch::cat(xs);
    b.targets = torch::cat(ys);
  } else {
    b = rank_batch(model, c, rank);
  }
  b.inputs = b.inputs.to(device);
  b.targets = b.targets.to(device);
  return b;
}

}  // namespace

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

std::unique_ptr<DdpReducer> make_ddp_reducer(const std::vector<torch::Tensor>& params,
                                             const std::vector<torch::Tensor>& buffers, Communicator& comm,
                                             const RunConfig& c) {
  if (comm.size() > 1) {
    std::vector<torch::Tensor> state = params;
    state.insert(state.end(), buffers.begin(), buffers.end());
    comm.broadcast(state, 0);
  }
  return std::make_unique<DdpReducer>(params, comm, c.ddp.bucket_cap_mb, c.ddp.gradient_compression);
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

namespace {

void run(const RankEnv& env, const RunConfig& c, const WorkerOptions& o) {
  validate(env, c, o);
  const auto precision = autocast_dtype(c);
  set_rank_threads(c);
  const torch::Device device = rank_device(env, c);
  const bool zero = c.paradigm == Paradigm::kZero;
  const bool ddp = uses_ddp_reducer(c.paradigm);  // zero all-reduces gradients with the DDP reducer
  const bool pipelined = splits_into_stages(c.paradigm);

  std::unique_ptr<RunStore> store;
  if (o.external_store) {
    store = RunStore::connect(env.master_addr, env.master_port, std::chrono::seconds(c.collective_timeout_seconds));
  }
  std::unique_ptr<Communicator> comm;
  if (ddp || pipelined) comm = Communicator::create(env, c, store.get(), o.bind_address);
  const int world = env.world_size;

  torch::manual_seed(c.seed);  // same initial model on every rank
  std::shared_ptr<BenchModel> model = build_model(c.model, c);
  model->to(device);
  model->train();
  std::int64_t parameter_count = 0;  // the whole model's
  for (const auto& p : model->parameters()) parameter_count += p.numel();
  // pipeline / model-parallel: this rank keeps one stage of the model (worker/pipeline.hpp).
  std::unique_ptr<PipelineStage> stage;
  if (pipelined) stage = std::make_unique<PipelineStage>(*model, c, *comm);
  const std::vector<torch::Tensor> params = stage ? stage->parameters() : model->parameters();
  const std::vector<torch::Tensor> buffers = stage ? stage->buffers() : model->buffers();
  // Counted and dumped: a weight tied across stages once, on the first stage holding it.
  const std::vector<torch::Tensor> owned_params = stage ? stage->owned_parameters() : params;
  std::int64_t rank_parameter_count = 0;
  for (const auto& p : owned_params) rank_parameter_count += p.numel();

  std::unique_ptr<DdpReducer> reducer;
  if (ddp) reducer = make_ddp_reducer(params, buffers, *comm, c);
  const bool sync_buffers = ddp && c.ddp.broadcast_buffers && world > 1 && !buffers.empty();

  // A pipeline trains one batch (rank 0's, as the unsplit model would): every stage makes it,
  // stage 0 reads its inputs and the last stage its targets.
  const Batch batch = make_batch(*model, c, pipelined ? 0 : env.rank, o.reference_world_size, device);
  const std::unique_ptr<StepOptimizer> optimizer =
      zero ? make_zero_adam(c.learning_rate, params, *comm) : make_optimizer(c.optimizer, c.learning_rate, params);
  if (device.is_cuda()) compat::cuda_reset_peak_memory(device.index());

  std::unique_ptr<WorkerMetrics> metrics = serve_worker_metrics(env, c, o, Role::kTrainer, world);
  std::unique_ptr<GpuMonitor> gpu_monitor;
  if (metrics && device.is_cuda()) {
    std::string why;
    gpu_monitor = GpuMonitor::open(device.index(), &why);
    if (!gpu_monitor) std::cerr << "trainbench-worker: no GPU utilization metrics: " << why << "\n";
  }
  const std::int64_t allreduce_bytes = reducer && world > 1 ? reducer->bytes_per_step() : 0;
  double last_communication = 0;

  double last_loss = 0;
  double first_measured_loss = 0;
  std::optional<GradScaler> scaler = GradScaler::for_precision(c.precision);
  const bool log_steps = std::getenv("TRAINBENCH_LOG_STEPS") != nullptr;
  int step_number = 0;
  // pipeline / model-parallel: this stage's part of every micro-batch's forward and backward.
  std::vector<double> pipeline_waits;  // per step: seconds spent waiting on the neighbours
  auto pipeline_step = [&]() -> double {
    const auto t0 = std::chrono::steady_clock::now();
    for (auto& p : params) p.mutable_grad() = torch::Tensor();
    last_loss = stage->forward_backward(batch.inputs, batch.targets, precision);
    optimizer->step();
    if (device.is_cuda()) compat::cuda_synchronize(device.index());
    const auto t1 = std::chrono::steady_clock::now();
    ++step_number;
    pipeline_waits.push_back(stage->last_wait_seconds());
    if (!std::isfinite(last_loss)) {
      throw std::runtime_error("loss is not finite (" + std::to_string(last_loss) + ") at step " +
                               std::to_string(step_number));
    }
    return std::chrono::duration<double>(t1 - t0).count();
  };
  auto train_step = [&]() -> double {
    if (stage) return pipeline_step();
    const auto t0 = std::chrono::steady_clock::now();
    if (sync_buffers) comm->broadcast(buffers, 0);
    if (reducer) {
      reducer->zero_grad();
      reducer->prepare_for_backward();
    } else {
      // set_to_none (PyTorch's default since 2.0; libtorch 1.13's zero_grad() writes zeros):
      // autograd then hands over fresh gradients instead of adding into zeroed ones.
      for (auto& p : params) p.mutable_grad() = torch::Tensor();
    }
    torch::Tensor loss;
    {
      std::optional<compat::AutocastScope> autocast;
      if (precision) autocast.emplace(device.type(), *precision);
      loss = model->loss(batch.inputs, batch.targets);
    }
    if (scaler) {
      scaler->scale_loss(loss).backward();
    } else {
      loss.backward();
    }
    if (reducer) {
      const auto w0 = std::chrono::steady_clock::now();
      reducer->finish_backward();
      last_communication = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    }
    if (scaler) {
      const bool finite = scaler->unscale(params);  // same all-reduced gradients on every rank
      if (finite) optimizer->step();
      scaler->update(finite);
    } else {
      optimizer->step();
    }
    if (device.is_cuda()) compat::cuda_synchronize(device.index());
    const auto t1 = std::chrono::steady_clock::now();
    ++step_number;
    last_loss = loss.item<double>();
    if (log_steps) {
      std::cerr << "trainbench-worker rank " << env.rank << ": step " << step_number << " loss " << last_loss << " "
                << std::chrono::duration<double>(t1 - t0).count() << " s";
      if (scaler) std::cerr << " loss scale " << scaler->scale();
      std::cerr << "\n";
    }
    if (!std::isfinite(last_loss)) {
      std::ostringstream msg;
      msg << "loss is not finite (" << last_loss << ") at step " << step_number;
      throw std::runtime_error(msg.str());
    }
    return std::chrono::duration<double>(t1 - t0).count();
  };

  auto observe = [&](double sec, bool measured) {
    if (!metrics) return;
    metrics->observe_step(sec, last_communication, c.batch_size_per_device, allreduce_bytes, measured);
    metrics->refresh_process();
    if (device.is_cuda()) {
      metrics->set_gpu_memory(compat::cuda_memory_allocated_bytes(device.index()),
                              compat::cuda_peak_memory_bytes(device.index()));
    }
    if (gpu_monitor) {
      if (const auto g = gpu_monitor->sample()) metrics->set_gpu_utilization(g->utilization_ratio, g->memory_used_bytes);
    }
  };
  const bool report_progress = env.rank == 0 && !o.progress_file.empty();
  for (int s = 1; s <= c.warmup_steps; ++s) {
    const double sec = train_step();
    observe(sec, false);
    if (report_progress) write_progress(o.progress_file, "warmup", 0, c.repeats, s, c.warmup_steps, sec);
  }
  std::vector<std::vector<double>> step_seconds(static_cast<std::size_t>(c.repeats));
  for (int r = 1; r <= c.repeats; ++r) {
    auto& times = step_seconds[static_cast<std::size_t>(r - 1)];
    times.reserve(static_cast<std::size_t>(c.measure_steps));
    for (int s = 1; s <= c.measure_steps; ++s) {
      times.push_back(train_step());
      if (r == 1 && s == 1) first_measured_loss = last_loss;
      observe(times.back(), true);
      if (report_progress) {
        write_progress(o.progress_file, "measure", r, c.repeats, s, c.measure_steps, times.back());
      }
    }
  }
  const std::int64_t peak_memory =
      device.is_cuda() ? compat::cuda_peak_memory_bytes(device.index()) : peak_rss_bytes();

  if (scaler && env.rank == 0) {
    std::cerr << "trainbench-worker: loss scaling skipped " << scaler->skipped_steps() << " of " << step_number
              << " steps (inf/NaN gradients); final scale " << scaler->scale() << "\n";
  }
  if (!o.dump_params_prefix.empty()) dump_parameters(o.dump_params_prefix, env.rank, owned_params);

  // pipeline: the loss lives on the last stage; every rank reports it.
  if (stage) {
    std::vector<double> losses{last_loss, first_measured_loss};
    stage->share_from_last_stage(losses);
    last_loss = losses[0];
    first_measured_loss = losses[1];
  }
  double bubble_fraction = 0;
  if (stage) {
    const std::size_t measured = static_cast<std::size_t>(c.repeats) * static_cast<std::size_t>(c.measure_steps);
    double waited = 0, total = 0;
    for (std::size_t k = pipeline_waits.size() - measured; k < pipeline_waits.size(); ++k) waited += pipeline_waits[k];
    for (const auto& rep : step_seconds) {
      for (double sec : rep) total += sec;
    }
    bubble_fraction = total > 0 ? waited / total : 0;
  }

  // Gather: one row of doubles per rank.
  std::vector<double> row{static_cast<double>(env.rank), static_cast<double>(env.node_rank),
                          static_cast<double>(env.local_rank), static_cast<double>(peak_memory),
                          last_loss, first_measured_loss};
  for (const auto& rep : step_seconds) row.insert(row.end(), rep.begin(), rep.end());
  // After the step times: optimizer state bytes, the rank's parameters, its stage, its bubble.
  row.push_back(static_cast<double>(optimizer->state_bytes()));
  row.push_back(static_cast<double>(rank_parameter_count));
  row.push_back(stage ? static_cast<double>(stage->stage()) : -1.0);
  row.push_back(bubble_fraction);
  torch::Tensor mine = torch::tensor(row, torch::TensorOptions().dtype(torch::kDouble));
  torch::Tensor all;
  if (comm) {
    all = comm->allgather(c.backend == Backend::kNccl ? mine.to(device) : mine).to(torch::kCPU);
  } else {
    all = mine.unsqueeze(0);
  }
  // Keep the last values scrapeable a little longer (the result hand-over below does not wait).
  auto linger = [&] {
    if (metrics && o.metrics_linger_seconds > 0) {
      // The run is over and its result handed over: the operator now deletes the run's pods.
      // Serve the last values through that SIGTERM until the linger ends (the pod's grace
      // period covers it; SIGKILL still ends it).
      std::signal(SIGTERM, SIG_IGN);
      std::this_thread::sleep_for(std::chrono::duration<double>(o.metrics_linger_seconds));
    }
  };
  if (env.rank != 0) {
    if (store) store->add(kFinishedKey, 1);
    linger();
    return;
  }

  RunResult result;
  result.run_index = c.index;
  result.world_size = world;
  result.parameter_count = parameter_count;
  result.ddp_bucket_count = reducer ? static_cast<int>(reducer->bucket_count()) : 0;
  result.optimizer = to_string(c.optimizer);
  result.micro_batches = stage ? stage->micro_batches() : 1;
  if (stage) {
    result.block_count = stage->block_count();
    result.stage_starts = stage->starts();
  }
  result.environment = environment_info(c, device);
  all = all.contiguous();
  const double* data = all.data_ptr<double>();
  const std::int64_t width = all.size(1);
  for (std::int64_t k = 0; k < all.size(0); ++k) {
    const double* x = data + k * width;
    RankResult rr;
    rr.rank = static_cast<int>(x[0]);
    rr.node_rank = static_cast<int>(x[1]);
    rr.local_rank = static_cast<int>(x[2]);
    rr.peak_memory_bytes = static_cast<std::int64_t>(x[3]);
    rr.final_loss = x[4];
    rr.initial_loss = x[5];
    std::size_t pos = 6;
    for (int r = 0; r < c.repeats; ++r) {
      rr.step_seconds.emplace_back(x + pos, x + pos + c.measure_steps);
      pos += static_cast<std::size_t>(c.measure_steps);
    }
    rr.optimizer_state_bytes = static_cast<std::int64_t>(x[pos]);
    rr.parameter_count = static_cast<std::int64_t>(x[pos + 1]);
    rr.stage = static_cast<int>(x[pos + 2]);
    rr.bubble_fraction = x[pos + 3];
    result.ranks.push_back(std::move(rr));
  }
  hand_over_result(to_json(result).dump(2) + "\n", store.get(), o.result_file);
  linger();
}

}  // namespace

void run_worker(const RankEnv& env, const RunConfig& config, const WorkerOptions& options) {
  try {
    switch (config.paradigm) {
      case Paradigm::kAllreduce:
        run_allreduce_benchmark(env, config, options);
        break;  // worker/allreduce_bench.cpp
      case Paradigm::kHybridPs:
        run_hybrid_ps(env, config, options);
        break;  // worker/hybrid_ps.cpp
      default:
        run(env, config, options);
        break;
    }
  } catch (const c10::Error& e) {
    throw std::runtime_error(compat::error_message(e));
  }
}

}  // namespace trainbench::worker
