#include "worker/hybrid_ps.hpp"

#include <malloc.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <deque>
#include <exception>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "core/run_result.hpp"
#include "worker/environment_info.hpp"
#include "worker/models_lm.hpp"
#include "worker/process_group.hpp"
#include "worker/system_probe.hpp"
#include "worker/torch_compat.hpp"
#include "worker/train_common.hpp"
#include "worker/worker_error.hpp"
#include "worker/zero_optimizer.hpp"

namespace trainbench::worker {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// ---------------------------------------------------------------- protocol

/// The messages of one step between a trainer and a server, tagged by kind and step % 4. A
/// trainer can be at most one step ahead of a server's receiver (it needs the server's sums of
/// step s+1, served only after all of step s), so the step's parity already keeps a step-s+1
/// request from matching a receive of step s; % 4 leaves margin.
enum class Msg : int { kCount = 0, kIds = 1, kSums = 2, kGrad = 3 };
constexpr int kTagBase = 7000;

int tag(Msg m, std::int64_t step) { return kTagBase + 4 * static_cast<int>(step % 4) + static_cast<int>(m); }

/// Server s owns rows [s*N/P, (s+1)*N/P) of every table.
struct Sharding {
  std::int64_t rows = 1;     ///< N = numEmbeddings
  std::int64_t servers = 1;  ///< P
  std::int64_t begin(std::int64_t s) const { return s * rows / servers; }
  std::int64_t end(std::int64_t s) const { return (s + 1) * rows / servers; }
  std::int64_t count(std::int64_t s) const { return end(s) - begin(s); }
  /// The owner of each id: the largest s with floor(s*N/P) <= id, i.e. floor(((id+1)*P - 1) / N).
  torch::Tensor owner(const torch::Tensor& ids) const { return torch::div((ids + 1) * servers - 1, rows, "floor"); }
};

/// Waits for `work`, naming `what` in its error (gloo's own say only "Connection closed by peer").
void wait_for(PendingCollective& work, const std::string& what) {
  try {
    work.wait();
  } catch (const std::exception& e) {
    throw std::runtime_error(what + ": " + e.what());
  }
}

std::string server_name(int server, int trainers) {
  return "parameter server " + std::to_string(server) + " (rank " + std::to_string(trainers + server) + ")";
}

/// A trainer's lookup request as a server's receiver thread got it.
struct Request {
  std::int64_t step = 0;
  int source = -1;
  torch::Tensor ids;  ///< [n, 2] int64: (bag = example * numTables + table, table * rows_s + local row)
  Clock::time_point arrival;
};

/// Receiver thread -> serving thread. pop() rethrows the receiver's error, and gives up after
/// the collective timeout.
class RequestQueue {
 public:
  void push(Request r) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      items_.push_back(std::move(r));
    }
    cv_.notify_one();
  }
  void fail(std::exception_ptr e) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      error_ = std::move(e);
    }
    cv_.notify_one();
  }
  Request pop(std::chrono::milliseconds timeout, std::int64_t step) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!cv_.wait_for(lock, timeout, [&] { return !items_.empty() || error_; })) {
      throw std::runtime_error("timed out after " + std::to_string(timeout.count() / 1000) +
                               " s waiting for the trainers' lookups of step " + std::to_string(step + 1));
    }
    if (items_.empty()) std::rethrow_exception(error_);
    Request r = std::move(items_.front());
    items_.pop_front();
    return r;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Request> items_;
  std::exception_ptr error_;
};

/// A server's receiver: posts a receive from any trainer for each request of each step (the
/// count, then the ids from that trainer), time-stamps its arrival and queues it. stop() aborts
/// the receive in flight and joins.
class Receiver {
 public:
  Receiver(Communicator& comm, RequestQueue& queue, int trainers, std::int64_t steps, std::int64_t max_ids)
      : comm_(comm), queue_(queue), trainers_(trainers), steps_(steps), max_ids_(max_ids) {
    thread_ = std::thread([this] { loop(); });
  }
  ~Receiver() { stop(); }
  Receiver(const Receiver&) = delete;
  Receiver& operator=(const Receiver&) = delete;

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
      if (current_) current_->abort();
    }
    if (thread_.joinable()) thread_.join();
  }
  void join() {
    if (thread_.joinable()) thread_.join();
  }

 private:
  void loop() {
    try {
      for (std::int64_t s = 0; s < steps_; ++s) {
        std::vector<bool> seen(static_cast<std::size_t>(trainers_), false);
        for (int k = 0; k < trainers_; ++k) {
          torch::Tensor count = torch::empty({1}, torch::kLong);
          auto pending = std::make_shared<PendingRecv>(comm_.recv_any(count, tag(Msg::kCount, s)));
          {
            std::lock_guard<std::mutex> lock(mutex_);
            if (stopping_) {
              pending->abort();
              return;
            }
            current_ = pending;
          }
          int source = -1;
          try {
            source = pending->wait();
          } catch (const std::exception& e) {
            throw std::runtime_error("waiting for the trainers' lookups of step " + std::to_string(s + 1) + ": " +
                                     e.what());
          }
          {
            std::lock_guard<std::mutex> lock(mutex_);
            current_.reset();
          }
          if (source < 0) return;  // stopped
          if (source >= trainers_ || seen[static_cast<std::size_t>(source)]) {
            throw std::runtime_error("unexpected lookup request of step " + std::to_string(s + 1) + " from rank " +
                                     std::to_string(source));
          }
          seen[static_cast<std::size_t>(source)] = true;
          const std::int64_t n = count.item<std::int64_t>();
          if (n < 0 || n > max_ids_) {
            throw std::runtime_error("rank " + std::to_string(source) + " announced " + std::to_string(n) +
                                     " ids (at most " + std::to_string(max_ids_) + ")");
          }
          torch::Tensor ids = torch::empty({n, 2}, torch::kLong);
          if (n > 0) {
            PendingCollective recv = comm_.recv(ids, source, tag(Msg::kIds, s));
            wait_for(recv, "receiving the ids of trainer " + std::to_string(source) + " (step " +
                               std::to_string(s + 1) + ")");
          }
          queue_.push(Request{s, source, ids, Clock::now()});
        }
      }
    } catch (...) {
      queue_.fail(std::current_exception());
    }
  }

  Communicator& comm_;
  RequestQueue& queue_;
  int trainers_;
  std::int64_t steps_;
  std::int64_t max_ids_;
  std::mutex mutex_;
  bool stopping_ = false;
  std::shared_ptr<PendingRecv> current_;
  std::thread thread_;
};

// ---------------------------------------------------------------- set-up

Role role_of(int rank, const RunConfig& c) { return rank < c.world_size() ? Role::kTrainer : Role::kParameterServer; }

void validate(const RankEnv& env, const RunConfig& c, const WorkerOptions& o) {
  auto fail = [](const std::string& m) { throw ConfigError("run config: " + m); };
  if (c.model != "hybrid-embedding") fail("paradigm hybrid-ps needs model hybrid-embedding, got '" + c.model + "'");
  if (c.device != Device::kCpu || c.backend != Backend::kGloo) {
    fail("paradigm hybrid-ps runs on device cpu with backend gloo (its servers receive from any trainer), got " +
         to_string(c.device) + " / " + to_string(c.backend));
  }
  if (c.precision != Precision::kFp32) {
    fail("paradigm hybrid-ps trains in fp32 only, got '" + to_string(c.precision) + "'");
  }
  if (c.optimizer != Optimizer::kSgd)
    fail("paradigm hybrid-ps needs optimizer sgd, got '" + to_string(c.optimizer) + "'");
  if (c.parameter_servers < 1) fail("paradigm hybrid-ps needs parameterServers >= 1");
  if (c.parameter_servers > c.hybrid_embedding.num_embeddings) {
    fail("parameterServers (" + std::to_string(c.parameter_servers) + ") must be <= numEmbeddings (" +
         std::to_string(c.hybrid_embedding.num_embeddings) + ")");
  }
  if (c.batch_size_per_device < 1 || c.measure_steps < 1 || c.repeats < 1 || c.warmup_steps < 0) {
    fail("batchSizePerDevice, measureSteps, repeats must be >= 1 and warmupSteps >= 0");
  }
  if (c.threads_per_process < 1) fail("threadsPerProcess must be >= 1 (resolved)");
  if (!(c.learning_rate >= 0) || !std::isfinite(c.learning_rate)) fail("learningRate must be >= 0");
  if (c.collective_timeout_seconds < 1) fail("collectiveTimeoutSeconds must be >= 1");
  if (o.reference_world_size != 0) {
    if (env.world_size != 1) throw ConfigError("TRAINBENCH_REFERENCE_WORLD_SIZE needs world size 1 (one process)");
    return;
  }
  if (env.world_size != c.process_count()) {
    fail("the environment says world size " + std::to_string(env.world_size) + " but paradigm hybrid-ps has " +
         std::to_string(c.world_size()) + " trainer(s) (" + std::to_string(c.nodes) + " node(s) x " +
         std::to_string(c.devices_per_node) + " device(s)) + " + std::to_string(c.parameter_servers) +
         " parameter server(s)");
  }
  if (const char* role = std::getenv("TRAINBENCH_ROLE"); role != nullptr && *role != '\0') {  // NOLINT
    if (parse_role(role) != role_of(env.rank, c)) {
      throw ConfigError("TRAINBENCH_ROLE is " + std::string(role) + ", but rank " + std::to_string(env.rank) +
                        " of a hybrid-ps run with " + std::to_string(c.world_size()) + " trainer(s) is a " +
                        to_string(role_of(env.rank, c)));
    }
  }
}

/// TRAINBENCH_HYBRID_PS_FAULT_RANK=R (test hook): rank R kills itself with SIGKILL at the start
/// of its first measured step. -1: none.
int fault_rank() {
  const char* f = std::getenv("TRAINBENCH_HYBRID_PS_FAULT_RANK");  // NOLINT(concurrency-mt-unsafe)
  if (f == nullptr || *f == '\0') return -1;
  const auto r = parse_int(f);
  if (!r || *r < 0) throw ConfigError(std::string("TRAINBENCH_HYBRID_PS_FAULT_RANK must be a rank, got '") + f + "'");
  return *r;
}

/// The peak memory of a hybrid-ps rank counts from the start of training: every rank first built
/// the whole model (so a server's rows are exactly the single-process model's), then dropped
/// what its role does not hold. Freed pages go back to the kernel and the high-water mark of
/// the resident set (what getrusage's ru_maxrss reads) restarts from here.
void restart_peak_memory() {
  malloc_trim(0);
  std::ofstream clear_refs("/proc/self/clear_refs");
  if (clear_refs) clear_refs << "5";  // CLEAR_REFS_MM_HIWATER_RSS; ignored where not permitted
}

std::shared_ptr<HybridEmbeddingModel> build_hybrid_model(const RunConfig& c) {
  torch::manual_seed(c.seed);  // the same initial model on every rank
  auto model = std::dynamic_pointer_cast<HybridEmbeddingModel>(build_model(c.model, c));
  if (!model) throw ConfigError("run config: model " + c.model + " is not the HybridModel");
  model->train();
  return model;
}

std::int64_t parameter_count(const std::vector<torch::Tensor>& params) {
  std::int64_t n = 0;
  for (const auto& p : params) n += p.numel();
  return n;
}

void check_loss(double loss, std::int64_t step) {
  if (!std::isfinite(loss)) {
    std::ostringstream msg;
    msg << "loss is not finite (" << loss << ") at step " << step;
    throw std::runtime_error(msg.str());
  }
}

// ---------------------------------------------------------------- measurements and gather

/// One rank's row of the end-of-run all-gather (the same width on every rank).
struct Row {
  enum : std::size_t {
    kRole,
    kRank,
    kNode,
    kLocal,
    kPeak,
    kInitialLoss,
    kFinalLoss,
    kOptimizerState,
    kParameters,
    kRows,
    kLookups,
    kHeader
  };
  static std::size_t width(const RunConfig& c) {
    const std::size_t measured = static_cast<std::size_t>(c.repeats) * static_cast<std::size_t>(c.measure_steps);
    return kHeader + measured + 2 * measured * static_cast<std::size_t>(c.world_size());
  }
};

struct Measurements {
  std::vector<std::vector<double>> step_seconds;     ///< trainers: step; servers: update
  std::vector<std::vector<double>> service_seconds;  ///< servers: [repeat][request]
  std::vector<std::vector<double>> queue_seconds;
  double initial_loss = 0;
  double final_loss = 0;
  std::int64_t optimizer_state_bytes = 0;
  std::int64_t parameters = 0;
  std::int64_t rows = 0;
  std::int64_t lookups = 0;
  std::int64_t peak_memory = 0;
};

/// Every rank sends its row to every rank; trainer 0 builds the RunResult and hands it over.
void gather_and_report(Communicator& comm, const RankEnv& env, const RunConfig& c, const WorkerOptions& o,
                       const Measurements& m, bool server, std::int64_t model_parameters, int bucket_count,
                       RunStore* store) {
  const std::size_t width = Row::width(c);
  const std::size_t measured = static_cast<std::size_t>(c.repeats) * static_cast<std::size_t>(c.measure_steps);
  const std::size_t per_request = measured * static_cast<std::size_t>(c.world_size());
  std::vector<double> row(width, 0.0);
  row[Row::kRole] = server ? 1 : 0;
  row[Row::kRank] = env.rank;
  row[Row::kNode] = env.node_rank;
  row[Row::kLocal] = env.local_rank;
  row[Row::kPeak] = static_cast<double>(m.peak_memory);
  row[Row::kInitialLoss] = m.initial_loss;
  row[Row::kFinalLoss] = m.final_loss;
  row[Row::kOptimizerState] = static_cast<double>(m.optimizer_state_bytes);
  row[Row::kParameters] = static_cast<double>(m.parameters);
  row[Row::kRows] = static_cast<double>(m.rows);
  row[Row::kLookups] = static_cast<double>(m.lookups);
  std::size_t pos = Row::kHeader;
  for (const auto& rep : m.step_seconds) {
    for (double v : rep) row[pos++] = v;
  }
  pos = Row::kHeader + measured;
  for (const auto& rep : m.service_seconds) {
    for (double v : rep) row[pos++] = v;
  }
  pos = Row::kHeader + measured + per_request;
  for (const auto& rep : m.queue_seconds) {
    for (double v : rep) row[pos++] = v;
  }
  const torch::Tensor all =
      comm.allgather(torch::tensor(row, torch::TensorOptions().dtype(torch::kDouble))).contiguous();
  if (env.rank != 0) {
    if (store) store->add(kFinishedKey, 1);
    return;
  }

  RunResult result;
  result.run_index = c.index;
  result.world_size = c.world_size();
  result.parameter_count = model_parameters;
  result.ddp_bucket_count = bucket_count;
  result.optimizer = to_string(c.optimizer);
  result.micro_batches = 1;
  result.environment = environment_info(c, torch::Device(torch::kCPU));
  const double* data = all.data_ptr<double>();
  const std::size_t per_repeat = static_cast<std::size_t>(c.measure_steps);
  const std::size_t requests_per_repeat = per_repeat * static_cast<std::size_t>(c.world_size());
  for (std::int64_t k = 0; k < all.size(0); ++k) {
    const double* x = data + static_cast<std::size_t>(k) * width;
    auto lists = [&](std::size_t offset, std::size_t each) {
      std::vector<std::vector<double>> out;
      for (int r = 0; r < c.repeats; ++r) {
        const double* b = x + offset + static_cast<std::size_t>(r) * each;
        out.emplace_back(b, b + each);
      }
      return out;
    };
    if (x[Row::kRole] == 0) {
      RankResult rr;
      rr.rank = static_cast<int>(x[Row::kRank]);
      rr.node_rank = static_cast<int>(x[Row::kNode]);
      rr.local_rank = static_cast<int>(x[Row::kLocal]);
      rr.peak_memory_bytes = static_cast<std::int64_t>(x[Row::kPeak]);
      rr.initial_loss = x[Row::kInitialLoss];
      rr.final_loss = x[Row::kFinalLoss];
      rr.optimizer_state_bytes = static_cast<std::int64_t>(x[Row::kOptimizerState]);
      rr.parameter_count = static_cast<std::int64_t>(x[Row::kParameters]);
      rr.step_seconds = lists(Row::kHeader, per_repeat);
      result.ranks.push_back(std::move(rr));
    } else {
      ServerResult sr;
      sr.rank = static_cast<int>(x[Row::kRank]);
      sr.server = sr.rank - c.world_size();
      sr.rows = static_cast<std::int64_t>(x[Row::kRows]);
      sr.lookups = static_cast<std::int64_t>(x[Row::kLookups]);
      sr.update_seconds = lists(Row::kHeader, per_repeat);
      sr.lookup_service_seconds = lists(Row::kHeader + measured, requests_per_repeat);
      sr.lookup_queue_seconds = lists(Row::kHeader + measured + per_request, requests_per_repeat);
      sr.peak_memory_bytes = static_cast<std::int64_t>(x[Row::kPeak]);
      result.servers.push_back(std::move(sr));
    }
  }
  hand_over_result(to_json(result).dump(2) + "\n", store, o.result_file);
}

// ---------------------------------------------------------------- trainer

Measurements run_trainer(const RankEnv& env, const RunConfig& c, const WorkerOptions& o, Communicator& comm,
                         HybridEmbeddingModel& model, int fault, int& bucket_count, WorkerMetrics* metrics) {
  const int T = c.world_size();
  const int P = c.parameter_servers;
  const HybridEmbeddingSpec& h = c.hybrid_embedding;
  const std::int64_t B = c.batch_size_per_device;
  const std::int64_t tables = h.num_tables;
  const std::int64_t D = h.embedding_dim;
  const Sharding sharding{h.num_embeddings, P};

  // The dense part is replicated with DDP over the trainers only (servers are not members).
  std::vector<int> members;
  for (int t = 0; t < T; ++t) members.push_back(t);
  std::unique_ptr<Communicator> trainers = comm.subgroup("trainbench/hybrid-ps/trainers/", members);
  const std::vector<torch::Tensor> params = model.dense()->parameters();
  const std::unique_ptr<DdpReducer> reducer = make_ddp_reducer(params, model.dense()->buffers(), *trainers, c);
  bucket_count = static_cast<int>(reducer->bucket_count());
  const std::unique_ptr<StepOptimizer> optimizer = make_optimizer(c.optimizer, c.learning_rate, params);
  const SyntheticBatch batch = rank_batch(model, c, env.rank);
  {
    torch::NoGradGuard no_grad;  // the tables live on the servers
    for (const auto& table : model.tables()) table->weight.set_data(torch::empty({0, D}));
  }
  const torch::Tensor ids = batch.inputs.contiguous().reshape({-1});  // [B * tables * bag]
  // element -> its bag (example * tables + table) and its table
  const torch::Tensor bag_of = torch::div(torch::arange(ids.numel(), torch::kLong), h.bag_size, "floor");
  const torch::Tensor table_of = torch::remainder(bag_of, tables);
  const std::int64_t allreduce_bytes = T > 1 ? reducer->bytes_per_step() : 0;
  restart_peak_memory();

  double last_communication = 0;
  double last_loss = 0;
  auto step = [&](std::int64_t s) -> double {
    const auto t0 = Clock::now();
    // Lookups: each server gets the ids it owns, as (bag, table * its rows + local row).
    const torch::Tensor owner = sharding.owner(ids);
    std::vector<PendingCollective> sends;
    std::vector<PendingCollective> recvs;
    std::vector<torch::Tensor> sums;
    for (int srv = 0; srv < P; ++srv) {
      const torch::Tensor sel = (owner == srv).nonzero().reshape({-1});
      const torch::Tensor rows =
          ids.index_select(0, sel) - sharding.begin(srv) + table_of.index_select(0, sel) * sharding.count(srv);
      const torch::Tensor payload = torch::stack({bag_of.index_select(0, sel), rows}, 1).contiguous();
      const std::int64_t n = payload.size(0);
      sends.push_back(comm.send(torch::full({1}, n, torch::kLong), T + srv, tag(Msg::kCount, s)));
      if (n > 0) sends.push_back(comm.send(payload, T + srv, tag(Msg::kIds, s)));
      sums.push_back(torch::empty({B * tables, D}));
      recvs.push_back(comm.recv(sums.back(), T + srv, tag(Msg::kSums, s)));
    }
    for (int srv = 0; srv < P; ++srv) {
      wait_for(recvs[static_cast<std::size_t>(srv)],
               "lookup of step " + std::to_string(s + 1) + " from " + server_name(srv, T));
    }
    for (auto& w : sends) wait_for(w, "sending the ids of step " + std::to_string(s + 1) + " to the parameter servers");
    torch::Tensor features = sums[0];
    for (int srv = 1; srv < P; ++srv) features = features + sums[static_cast<std::size_t>(srv)];
    features = features.reshape({B, tables * D}).requires_grad_(true);

    reducer->zero_grad();
    reducer->prepare_for_backward();
    const torch::Tensor loss = torch::nn::functional::cross_entropy(model.dense_forward(features), batch.targets);
    loss.backward();
    const auto w0 = Clock::now();
    try {
      reducer->finish_backward();
    } catch (const std::exception& e) {
      throw std::runtime_error("all-reduce of the dense gradients among the trainers (step " + std::to_string(s + 1) +
                               "): " + e.what());
    }
    last_communication = seconds_between(w0, Clock::now());
    // The features' gradient to every server, which turns it into its rows' gradients.
    const torch::Tensor grad = features.grad().reshape({B * tables, D}).contiguous();
    std::vector<PendingCollective> grad_sends;
    for (int srv = 0; srv < P; ++srv) grad_sends.push_back(comm.send(grad, T + srv, tag(Msg::kGrad, s)));
    optimizer->step();
    for (int srv = 0; srv < P; ++srv) {
      wait_for(grad_sends[static_cast<std::size_t>(srv)],
               "sending the gradient of step " + std::to_string(s + 1) + " to " + server_name(srv, T));
    }
    const auto t1 = Clock::now();
    last_loss = loss.item<double>();
    check_loss(last_loss, s + 1);
    return seconds_between(t0, t1);
  };

  Measurements m;
  const bool report_progress = env.rank == 0 && !o.progress_file.empty();
  auto observe = [&](double sec, bool measured) {
    if (!metrics) return;
    metrics->observe_step(sec, last_communication, c.batch_size_per_device, allreduce_bytes, measured);
    metrics->refresh_process();
  };
  std::int64_t s = 0;
  for (int w = 1; w <= c.warmup_steps; ++w, ++s) {
    const double sec = step(s);
    observe(sec, false);
    if (report_progress) write_progress(o.progress_file, "warmup", 0, c.repeats, w, c.warmup_steps, sec);
  }
  m.step_seconds.resize(static_cast<std::size_t>(c.repeats));
  for (int r = 1; r <= c.repeats; ++r) {
    auto& times = m.step_seconds[static_cast<std::size_t>(r - 1)];
    for (int k = 1; k <= c.measure_steps; ++k, ++s) {
      if (s == c.warmup_steps && env.rank == fault) std::raise(SIGKILL);
      times.push_back(step(s));
      if (r == 1 && k == 1) m.initial_loss = last_loss;
      observe(times.back(), true);
      if (report_progress) write_progress(o.progress_file, "measure", r, c.repeats, k, c.measure_steps, times.back());
    }
  }
  m.final_loss = last_loss;
  m.optimizer_state_bytes = optimizer->state_bytes();
  m.parameters = parameter_count(params);
  m.peak_memory = peak_rss_bytes();
  if (!o.dump_params_prefix.empty()) dump_parameters(o.dump_params_prefix, env.rank, params);
  return m;
}

// ---------------------------------------------------------------- server

Measurements run_server(const RankEnv& env, const RunConfig& c, const WorkerOptions& o, Communicator& comm,
                        std::shared_ptr<HybridEmbeddingModel>& model, int fault) {
  const int T = c.world_size();
  const int server = env.rank - T;
  const HybridEmbeddingSpec& h = c.hybrid_embedding;
  const std::int64_t B = c.batch_size_per_device;
  const std::int64_t tables = h.num_tables;
  const std::int64_t D = h.embedding_dim;
  const Sharding sharding{h.num_embeddings, c.parameter_servers};
  const std::int64_t mine = sharding.count(server);

  // This server's rows of every table, table after table: [tables * mine, D].
  torch::Tensor shard;
  {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> parts;
    for (const auto& table : model->tables()) parts.push_back(table->weight.narrow(0, sharding.begin(server), mine));
    shard = torch::cat(parts, 0).contiguous();
  }
  model.reset();  // the rest of the model lives elsewhere
  restart_peak_memory();

  const std::int64_t steps =
      static_cast<std::int64_t>(c.warmup_steps) + static_cast<std::int64_t>(c.repeats) * c.measure_steps;
  const auto timeout = std::chrono::milliseconds(static_cast<std::int64_t>(c.collective_timeout_seconds) * 1000);
  const double scale = -c.learning_rate / T;  // the gradients' average over the trainers, as DDP's
  RequestQueue queue;
  Receiver receiver(comm, queue, T, steps, B * tables * h.bag_size);

  Measurements m;
  m.step_seconds.resize(static_cast<std::size_t>(c.repeats));
  m.service_seconds.resize(static_cast<std::size_t>(c.repeats));
  m.queue_seconds.resize(static_cast<std::size_t>(c.repeats));
  for (std::int64_t s = 0; s < steps; ++s) {
    if (s == c.warmup_steps && env.rank == fault) std::raise(SIGKILL);
    const bool measured = s >= c.warmup_steps;
    const std::size_t repeat = measured ? static_cast<std::size_t>((s - c.warmup_steps) / c.measure_steps) : 0;
    // The step's gradients, posted now, applied after every lookup of the step was served.
    std::vector<torch::Tensor> grads;
    std::vector<PendingCollective> grad_recvs;
    for (int t = 0; t < T; ++t) {
      grads.push_back(torch::empty({B * tables, D}));
      grad_recvs.push_back(comm.recv(grads.back(), t, tag(Msg::kGrad, s)));
    }
    std::vector<torch::Tensor> requested(static_cast<std::size_t>(T));
    for (int k = 0; k < T; ++k) {
      Request r = queue.pop(timeout, s);
      if (r.step != s)
        throw std::logic_error("request of step " + std::to_string(r.step + 1) + " served in step " +
                               std::to_string(s + 1));
      const auto start = Clock::now();
      const torch::Tensor bags = r.ids.select(1, 0);
      const torch::Tensor rows = r.ids.select(1, 1);
      if (rows.numel() > 0 &&
          (rows.min().item<std::int64_t>() < 0 || rows.max().item<std::int64_t>() >= tables * mine ||
           bags.min().item<std::int64_t>() < 0 || bags.max().item<std::int64_t>() >= B * tables)) {
        throw std::runtime_error("rank " + std::to_string(r.source) + " asked for rows this server does not own");
      }
      torch::Tensor sums = torch::zeros({B * tables, D});
      sums.index_add_(0, bags, shard.index_select(0, rows));
      PendingCollective sent = comm.send(sums, r.source, tag(Msg::kSums, s));
      wait_for(sent, "sending the lookup of step " + std::to_string(s + 1) + " to trainer " + std::to_string(r.source));
      const auto end = Clock::now();
      if (measured) {
        m.service_seconds[repeat].push_back(seconds_between(start, end));
        m.queue_seconds[repeat].push_back(seconds_between(r.arrival, start));
        ++m.lookups;
      }
      requested[static_cast<std::size_t>(r.source)] = r.ids;
    }
    for (int t = 0; t < T; ++t) {
      wait_for(grad_recvs[static_cast<std::size_t>(t)],
               "receiving the gradient of step " + std::to_string(s + 1) + " from trainer " + std::to_string(t));
    }
    // Synchronous update, in trainer order: each touched row once, with the sum of its
    // gradients over the trainers' bags (plain SGD on the average over trainers).
    const auto u0 = Clock::now();
    std::vector<torch::Tensor> rows, values;
    for (int t = 0; t < T; ++t) {
      const torch::Tensor& req = requested[static_cast<std::size_t>(t)];
      if (req.size(0) == 0) continue;
      rows.push_back(req.select(1, 1));
      values.push_back(grads[static_cast<std::size_t>(t)].index_select(0, req.select(1, 0)));
    }
    if (!rows.empty()) {
      const torch::Tensor all_rows = torch::cat(rows);
      const auto unique = torch::_unique(all_rows, /*sorted=*/true, /*return_inverse=*/true);
      const torch::Tensor& touched = std::get<0>(unique);
      torch::Tensor row_grads = torch::zeros({touched.size(0), D});
      row_grads.index_add_(0, std::get<1>(unique), torch::cat(values));
      shard.index_add_(0, touched, row_grads, scale);
    }
    const auto u1 = Clock::now();
    if (measured) m.step_seconds[repeat].push_back(seconds_between(u0, u1));
  }
  receiver.join();
  m.rows = shard.size(0);
  m.parameters = shard.numel();
  m.peak_memory = peak_rss_bytes();
  if (!o.dump_params_prefix.empty()) dump_parameters(o.dump_params_prefix, env.rank, {shard});
  return m;
}

// ---------------------------------------------------------------- reference (test hook)

void run_reference(const RunConfig& c, const WorkerOptions& o) {
  const int world = o.reference_world_size;
  std::shared_ptr<HybridEmbeddingModel> model = build_hybrid_model(c);
  std::vector<torch::Tensor> xs, ys;
  for (int r = 0; r < world; ++r) {
    SyntheticBatch b = rank_batch(*model, c, r);
    xs.push_back(b.inputs);
    ys.push_back(b.targets);
  }
  const torch::Tensor inputs = torch::cat(xs);
  const torch::Tensor targets = torch::cat(ys);
  std::vector<torch::Tensor> table_params;
  for (const auto& table : model->tables()) table_params.push_back(table->weight);
  const std::vector<torch::Tensor> dense_params = model->dense()->parameters();
  torch::optim::SGD tables_sgd(table_params, torch::optim::SGDOptions(c.learning_rate));  // no momentum
  const std::unique_ptr<StepOptimizer> dense_optimizer = make_optimizer(c.optimizer, c.learning_rate, dense_params);
  const std::vector<torch::Tensor> params = model->parameters();  // tables, then the dense part

  RankResult rr;
  double loss_value = 0;
  const std::int64_t steps =
      static_cast<std::int64_t>(c.warmup_steps) + static_cast<std::int64_t>(c.repeats) * c.measure_steps;
  rr.step_seconds.resize(static_cast<std::size_t>(c.repeats));
  for (std::int64_t s = 0; s < steps; ++s) {
    const auto t0 = Clock::now();
    for (auto p : params) p.mutable_grad() = torch::Tensor();
    const torch::Tensor loss = model->loss(inputs, targets);
    loss.backward();
    tables_sgd.step();
    dense_optimizer->step();
    const auto t1 = Clock::now();
    loss_value = loss.item<double>();
    check_loss(loss_value, s + 1);
    if (s >= c.warmup_steps) {
      const std::int64_t k = s - c.warmup_steps;
      rr.step_seconds[static_cast<std::size_t>(k / c.measure_steps)].push_back(seconds_between(t0, t1));
      if (k == 0) rr.initial_loss = loss_value;
    }
  }
  rr.final_loss = loss_value;
  rr.parameter_count = parameter_count(params);
  rr.optimizer_state_bytes = dense_optimizer->state_bytes();
  rr.peak_memory_bytes = peak_rss_bytes();
  if (!o.dump_params_prefix.empty()) dump_parameters(o.dump_params_prefix, 0, params);
  RunResult result;
  result.run_index = c.index;
  result.world_size = 1;
  result.parameter_count = rr.parameter_count;
  result.optimizer = to_string(c.optimizer);
  result.environment = environment_info(c, torch::Device(torch::kCPU));
  result.ranks.push_back(std::move(rr));
  hand_over_result(to_json(result).dump(2) + "\n", nullptr, o.result_file);
}

}  // namespace

void run_hybrid_ps(const RankEnv& env, const RunConfig& c, const WorkerOptions& o) {
  validate(env, c, o);
  set_rank_threads(c);
  if (o.reference_world_size != 0) {
    run_reference(c, o);
    return;
  }
  const int fault = fault_rank();
  const bool server = env.rank >= c.world_size();

  std::unique_ptr<RunStore> store;
  if (o.external_store) {
    store = RunStore::connect(env.master_addr, env.master_port, std::chrono::seconds(c.collective_timeout_seconds));
  }
  // One process group over the trainers and the servers: the lookups, the gradients and the
  // final gather of results go through it.
  std::unique_ptr<Communicator> comm = Communicator::create(env, c, store.get(), o.bind_address);
  std::shared_ptr<HybridEmbeddingModel> model = build_hybrid_model(c);
  const std::int64_t model_parameters = parameter_count(model->parameters());

  std::unique_ptr<WorkerMetrics> metrics;
  if (!server) metrics = serve_worker_metrics(env, c, o, Role::kTrainer, c.world_size());
  int bucket_count = 0;
  const Measurements m = server ? run_server(env, c, o, *comm, model, fault)
                                : run_trainer(env, c, o, *comm, *model, fault, bucket_count, metrics.get());
  gather_and_report(*comm, env, c, o, m, server, model_parameters, bucket_count, store.get());
  if (metrics && o.metrics_linger_seconds > 0) {
    // As train_loop.cpp: serve the last values through the cleanup's SIGTERM until the linger ends.
    std::signal(SIGTERM, SIG_IGN);
    std::this_thread::sleep_for(std::chrono::duration<double>(o.metrics_linger_seconds));
  }
}

}  // namespace trainbench::worker
