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

#include "core/results/run_result.hpp"
#include "worker/environment_info.hpp"
#include "worker/models_lm.hpp"
#include "worker/paradigms.hpp"
#include "worker/process_group.hpp"
#include "worker/rank_context.hpp"
#include "worker/step.hpp"
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
            wait_for(recv.untracked(), "receiving the ids of trainer " + std::to_string(source) + " (step " +
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

}  // namespace

void validate_hybrid_ps(const RankEnv& env, const RunConfig& c, const WorkerOptions& o) {
  auto fail = [](const std::string& m) { throw ConfigError("run config: " + m); };
  if (c.model != "hybrid-embedding") fail("paradigm hybrid-ps needs model hybrid-embedding, got '" + c.model + "'");
  if (c.device != Device::kCpu || c.backend != Backend::kGloo) {
    fail("paradigm hybrid-ps runs on device cpu with backend gloo (its servers receive from any trainer), got " +
         to_string(c.device) + " / " + to_string(c.backend));
  }
  if (c.precision != Precision::kFp32) {
    fail("paradigm hybrid-ps trains in fp32 only, got '" + to_string(c.precision) + "'");
  }
  if (c.optimizer != Optimizer::kSgd) {
    fail("paradigm hybrid-ps needs optimizer sgd, got '" + to_string(c.optimizer) + "'");
  }
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

namespace {

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

/// Every rank's record has room for a server's per-request lists (T lookups per step).
RecordShape hybrid_record_shape(const RunConfig& c) {
  const auto steps = static_cast<std::size_t>(c.measure_steps);
  return RecordShape{static_cast<std::size_t>(c.repeats), steps, steps * static_cast<std::size_t>(c.world_size())};
}

/// The run-level result fields of every hybrid-ps rank (rank 0, a trainer, writes them).
void describe_hybrid_run(RunResult& result, const RunConfig& c, std::int64_t model_parameters, int bucket_count) {
  result.parameter_count = model_parameters;
  result.ddp_bucket_count = bucket_count;
  result.optimizer = to_string(c.optimizer);
  result.micro_batches = 1;
}

// ---------------------------------------------------------------- trainer

class HybridTrainerStep final : public Step {
 public:
  HybridTrainerStep(RankContext& rank, std::shared_ptr<HybridEmbeddingModel> model, std::int64_t model_parameters)
      : Step(rank), comm_(rank.comm()), model_(std::move(model)), model_parameters_(model_parameters) {
    const RunConfig& c = rank.config;
    const HybridEmbeddingSpec& h = c.hybrid_embedding;
    // The dense part is replicated with DDP over the trainers only (servers are not members).
    std::vector<int> members;
    for (int t = 0; t < c.world_size(); ++t) members.push_back(t);
    trainers_ = comm_.subgroup("trainbench/hybrid-ps/trainers/", members);
    params_ = model_->dense()->parameters();
    reducer_ = make_ddp_reducer(params_, model_->dense()->buffers(), *trainers_, c);
    optimizer_ = make_optimizer(c.optimizer, c.learning_rate, params_);
    batch_ = rank_batch(*model_, c, rank.env.rank);
    {
      torch::NoGradGuard no_grad;  // the tables live on the servers
      for (const auto& table : model_->tables()) table->weight.set_data(torch::empty({0, h.embedding_dim}));
    }
    ids_ = batch_.inputs.contiguous().reshape({-1});  // [B * tables * bag]
    // element -> its bag (example * tables + table) and its table
    bag_of_ = torch::div(torch::arange(ids_.numel(), torch::kLong), h.bag_size, "floor");
    table_of_ = torch::remainder(bag_of_, h.num_tables);
    restart_peak_memory();
  }

  StepTiming run_step(const StepContext& step) override {
    const std::int64_t s = step.index;
    const auto t0 = Clock::now();
    double communication = 0;  // exposed: the servers' replies, the all-reduce, the sends' completion
    const torch::Tensor features =
        lookup(s, communication).reshape({batch_size(), tables() * dim()}).requires_grad_(true);
    RankProgress& progress = rank_.progress();
    progress.enter(ProgressPhase::kForward);
    reducer_->before_forward();
    const torch::Tensor loss = torch::nn::functional::cross_entropy(model_->dense_forward(features), batch_.targets);
    progress.enter(ProgressPhase::kBackward);
    reducer_->before_backward(loss);
    try {
      loss.backward();  // PyTorch's reducer waits for its all-reduces in here
      communication += reducer_->after_backward();
    } catch (const std::exception& e) {
      throw std::runtime_error("all-reduce of the dense gradients among the trainers (step " + std::to_string(s + 1) +
                               "): " + e.what());
    }
    // The features' gradient to every server, which turns it into its rows' gradients.
    const torch::Tensor grad = features.grad().reshape({batch_size() * tables(), dim()}).contiguous();
    const int T = trainer_count();
    const int P = rank_.config.parameter_servers;
    std::vector<PendingCollective> grad_sends;
    for (int srv = 0; srv < P; ++srv) grad_sends.push_back(comm_.send(grad, T + srv, tag(Msg::kGrad, s)));
    progress.enter(ProgressPhase::kOptimizer);
    optimizer_->step();
    const auto g0 = Clock::now();
    for (int srv = 0; srv < P; ++srv) {
      wait_for(grad_sends[static_cast<std::size_t>(srv)],
               "sending the gradient of step " + std::to_string(s + 1) + " to " + server_name(srv, T));
    }
    const auto t1 = Clock::now();
    communication += seconds_between(g0, t1);
    return StepTiming{seconds_between(t0, t1), communication, loss.item<double>()};
  }

  void finish(RankRecord& record) override {
    record.optimizer_state_bytes = optimizer_->state_bytes();
    record.parameter_count = element_count(params_);
  }
  void describe(RunResult& result) const override {
    describe_hybrid_run(result, rank_.config, model_parameters_, static_cast<int>(reducer_->bucket_count()));
  }
  RecordShape record_shape() const override { return hybrid_record_shape(rank_.config); }
  std::optional<Role> metrics_role() const override { return Role::kTrainer; }
  std::int64_t allreduce_bytes_per_step() const override {
    return trainer_count() > 1 ? reducer_->bytes_per_step() : 0;
  }
  std::vector<at::Tensor> dumped_parameters() const override { return params_; }

 private:
  int trainer_count() const { return rank_.config.world_size(); }
  std::int64_t batch_size() const { return rank_.config.batch_size_per_device; }
  std::int64_t tables() const { return rank_.config.hybrid_embedding.num_tables; }
  std::int64_t dim() const { return rank_.config.hybrid_embedding.embedding_dim; }

  /// Step s's lookups: each server gets the ids it owns, as (bag, table * its rows + local row),
  /// and answers with its partial bag sums; returns their sum [B * tables, D]. Adds the seconds
  /// spent waiting for the servers to `waited`.
  torch::Tensor lookup(std::int64_t s, double& waited) {
    const int T = trainer_count();
    const int P = rank_.config.parameter_servers;
    const RowSharding sharding{rank_.config.hybrid_embedding.num_embeddings, P};
    const torch::Tensor owner = sharding.owner(ids_);
    std::vector<PendingCollective> sends;
    std::vector<PendingCollective> recvs;
    std::vector<torch::Tensor> sums;
    for (int srv = 0; srv < P; ++srv) {
      const torch::Tensor sel = (owner == srv).nonzero().reshape({-1});
      const torch::Tensor rows =
          ids_.index_select(0, sel) - sharding.begin(srv) + table_of_.index_select(0, sel) * sharding.count(srv);
      const torch::Tensor payload = torch::stack({bag_of_.index_select(0, sel), rows}, 1).contiguous();
      const std::int64_t n = payload.size(0);
      sends.push_back(comm_.send(torch::full({1}, n, torch::kLong), T + srv, tag(Msg::kCount, s)));
      if (n > 0) sends.push_back(comm_.send(payload, T + srv, tag(Msg::kIds, s)));
      sums.push_back(torch::empty({batch_size() * tables(), dim()}));
      recvs.push_back(comm_.recv(sums.back(), T + srv, tag(Msg::kSums, s)));
    }
    const auto w0 = Clock::now();
    for (int srv = 0; srv < P; ++srv) {
      wait_for(recvs[static_cast<std::size_t>(srv)].as(ProgressPhase::kPsRequest, T + srv),
               "lookup of step " + std::to_string(s + 1) + " from " + server_name(srv, T));
    }
    for (auto& w : sends) wait_for(w, "sending the ids of step " + std::to_string(s + 1) + " to the parameter servers");
    waited += seconds_between(w0, Clock::now());
    torch::Tensor features = sums[0];
    for (int srv = 1; srv < P; ++srv) features = features + sums[static_cast<std::size_t>(srv)];
    return features;
  }

  Communicator& comm_;
  std::shared_ptr<HybridEmbeddingModel> model_;
  std::int64_t model_parameters_ = 0;
  std::unique_ptr<Communicator> trainers_;
  std::vector<torch::Tensor> params_;  ///< the dense part's
  std::unique_ptr<GradientReducer> reducer_;
  std::unique_ptr<StepOptimizer> optimizer_;
  SyntheticBatch batch_;
  torch::Tensor ids_, bag_of_, table_of_;
};

// ---------------------------------------------------------------- server

class HybridServerStep final : public Step {
 public:
  HybridServerStep(RankContext& rank, std::shared_ptr<HybridEmbeddingModel> model, std::int64_t model_parameters)
      : Step(rank),
        comm_(rank.comm()),
        model_parameters_(model_parameters),
        server_(rank.env.rank - rank.config.world_size()),
        sharding_{rank.config.hybrid_embedding.num_embeddings, rank.config.parameter_servers} {
    const RunConfig& c = rank.config;
    const std::int64_t mine = sharding_.count(server_);
    // This server's rows of every table, table after table: [tables * mine, D].
    {
      torch::NoGradGuard no_grad;
      std::vector<torch::Tensor> parts;
      for (const auto& table : model->tables())
        parts.push_back(table->weight.narrow(0, sharding_.begin(server_), mine));
      shard_ = torch::cat(parts, 0).contiguous();
    }
    model.reset();  // the rest of the model lives elsewhere
    restart_peak_memory();
    const std::int64_t steps =
        static_cast<std::int64_t>(c.warmup_steps) + static_cast<std::int64_t>(c.repeats) * c.measure_steps;
    const std::int64_t max_ids = c.batch_size_per_device * c.hybrid_embedding.num_tables * c.hybrid_embedding.bag_size;
    receiver_ = std::make_unique<Receiver>(comm_, queue_, c.world_size(), steps, max_ids);
    service_seconds_.resize(static_cast<std::size_t>(c.repeats));
    queue_seconds_.resize(static_cast<std::size_t>(c.repeats));
  }

  StepTiming run_step(const StepContext& step) override {
    const std::int64_t s = step.index;
    const int T = rank_.config.world_size();
    // The step's gradients, posted now, applied after every lookup of the step was served.
    std::vector<torch::Tensor> grads;
    std::vector<PendingCollective> grad_recvs;
    for (int t = 0; t < T; ++t) {
      grads.push_back(torch::empty({rows_per_request(), dim()}));
      grad_recvs.push_back(comm_.recv(grads.back(), t, tag(Msg::kGrad, s)));
    }
    std::vector<torch::Tensor> requested(static_cast<std::size_t>(T));
    for (int k = 0; k < T; ++k) serve(step, requested);
    for (int t = 0; t < T; ++t) {
      wait_for(grad_recvs[static_cast<std::size_t>(t)],
               "receiving the gradient of step " + std::to_string(s + 1) + " from trainer " + std::to_string(t));
    }
    const auto u0 = Clock::now();
    rank_.progress().enter(ProgressPhase::kPsServing);
    update(requested, grads);
    return StepTiming{seconds_between(u0, Clock::now()), 0, std::nullopt};
  }

  void finish(RankRecord& record) override {
    receiver_->join();
    record.role = RankRecord::Role::ParameterServer;
    record.rows = shard_.size(0);
    record.parameter_count = shard_.numel();
    record.lookups = lookups_;
    record.service_seconds = service_seconds_;
    record.queue_seconds = queue_seconds_;
  }
  void describe(RunResult& result) const override { describe_hybrid_run(result, rank_.config, model_parameters_, 0); }
  RecordShape record_shape() const override { return hybrid_record_shape(rank_.config); }
  std::vector<at::Tensor> dumped_parameters() const override { return {shard_}; }
  ProgressPhase first_phase() const override { return ProgressPhase::kPsWaiting; }

 private:
  std::int64_t rows_per_request() const {
    return rank_.config.batch_size_per_device * rank_.config.hybrid_embedding.num_tables;
  }
  std::int64_t dim() const { return rank_.config.hybrid_embedding.embedding_dim; }

  /// Serves the next lookup request of the step: its partial bag sums back to its trainer.
  void serve(const StepContext& step, std::vector<torch::Tensor>& requested) {
    const std::int64_t s = step.index;
    const auto timeout =
        std::chrono::milliseconds(static_cast<std::int64_t>(rank_.config.collective_timeout_seconds) * 1000);
    rank_.progress().enter(ProgressPhase::kPsWaiting);
    Request r = queue_.pop(timeout, s);
    rank_.progress().enter(ProgressPhase::kPsServing);
    if (r.step != s) {
      throw std::logic_error("request of step " + std::to_string(r.step + 1) + " served in step " +
                             std::to_string(s + 1));
    }
    const auto start = Clock::now();
    const torch::Tensor bags = r.ids.select(1, 0);
    const torch::Tensor rows = r.ids.select(1, 1);
    if (rows.numel() > 0 &&
        (rows.min().item<std::int64_t>() < 0 || rows.max().item<std::int64_t>() >= shard_.size(0) ||
         bags.min().item<std::int64_t>() < 0 || bags.max().item<std::int64_t>() >= rows_per_request())) {
      throw std::runtime_error("rank " + std::to_string(r.source) + " asked for rows this server does not own");
    }
    torch::Tensor sums = torch::zeros({rows_per_request(), dim()});
    sums.index_add_(0, bags, shard_.index_select(0, rows));
    PendingCollective sent = comm_.send(sums, r.source, tag(Msg::kSums, s));
    wait_for(sent, "sending the lookup of step " + std::to_string(s + 1) + " to trainer " + std::to_string(r.source));
    const auto end = Clock::now();
    if (step.measured) {
      const auto repeat = static_cast<std::size_t>(step.repeat);
      service_seconds_[repeat].push_back(seconds_between(start, end));
      queue_seconds_[repeat].push_back(seconds_between(r.arrival, start));
      ++lookups_;
    }
    requested[static_cast<std::size_t>(r.source)] = r.ids;
  }

  /// Synchronous update, in trainer order: each touched row once, with the sum of its
  /// gradients over the trainers' bags (plain SGD on the average over trainers, as DDP's).
  void update(const std::vector<torch::Tensor>& requested, const std::vector<torch::Tensor>& grads) {
    const int T = rank_.config.world_size();
    const double scale = -rank_.config.learning_rate / T;
    std::vector<torch::Tensor> rows, values;
    for (int t = 0; t < T; ++t) {
      const torch::Tensor& req = requested[static_cast<std::size_t>(t)];
      if (req.size(0) == 0) continue;
      rows.push_back(req.select(1, 1));
      values.push_back(grads[static_cast<std::size_t>(t)].index_select(0, req.select(1, 0)));
    }
    if (rows.empty()) return;
    const torch::Tensor all_rows = torch::cat(rows);
    const auto unique = torch::_unique(all_rows, /*sorted=*/true, /*return_inverse=*/true);
    const torch::Tensor& touched = std::get<0>(unique);
    torch::Tensor row_grads = torch::zeros({touched.size(0), dim()});
    row_grads.index_add_(0, std::get<1>(unique), torch::cat(values));
    shard_.index_add_(0, touched, row_grads, scale);
  }

  Communicator& comm_;
  std::int64_t model_parameters_ = 0;
  int server_ = 0;
  RowSharding sharding_;
  torch::Tensor shard_;
  RequestQueue queue_;
  std::unique_ptr<Receiver> receiver_;  ///< after queue_: stopped before it goes
  std::vector<std::vector<double>> service_seconds_;
  std::vector<std::vector<double>> queue_seconds_;
  std::int64_t lookups_ = 0;
};

// ---------------------------------------------------------------- reference (test hook)

/// TRAINBENCH_REFERENCE_WORLD_SIZE=W, one process: the whole model trains on the batches of
/// trainers 0..W-1 concatenated, tables with plain SGD and the dense part with the run's optimizer.
class HybridReferenceStep final : public Step {
 public:
  explicit HybridReferenceStep(RankContext& rank) : Step(rank), model_(build_hybrid_model(rank.config)) {
    const RunConfig& c = rank.config;
    std::vector<torch::Tensor> xs, ys;
    for (int r = 0; r < rank.options.reference_world_size; ++r) {
      SyntheticBatch b = rank_batch(*model_, c, r);
      xs.push_back(b.inputs);
      ys.push_back(b.targets);
    }
    inputs_ = torch::cat(xs);
    targets_ = torch::cat(ys);
    std::vector<torch::Tensor> table_params;
    for (const auto& table : model_->tables()) table_params.push_back(table->weight);
    tables_sgd_ = std::make_unique<torch::optim::SGD>(table_params, torch::optim::SGDOptions(c.learning_rate));
    dense_optimizer_ = make_optimizer(c.optimizer, c.learning_rate, model_->dense()->parameters());
    params_ = model_->parameters();  // tables, then the dense part
  }

  StepTiming run_step(const StepContext&) override {
    const auto t0 = Clock::now();
    for (auto p : params_) p.mutable_grad() = torch::Tensor();
    const torch::Tensor loss = model_->loss(inputs_, targets_);
    loss.backward();
    tables_sgd_->step();
    dense_optimizer_->step();
    const auto t1 = Clock::now();
    return StepTiming{seconds_between(t0, t1), 0, loss.item<double>()};
  }

  void finish(RankRecord& record) override {
    record.parameter_count = element_count(params_);
    record.optimizer_state_bytes = dense_optimizer_->state_bytes();
  }
  void describe(RunResult& result) const override {
    result.world_size = 1;
    result.parameter_count = element_count(params_);
    result.optimizer = to_string(rank_.config.optimizer);
  }
  std::vector<at::Tensor> dumped_parameters() const override { return params_; }

 private:
  std::shared_ptr<HybridEmbeddingModel> model_;
  torch::Tensor inputs_, targets_;
  std::unique_ptr<torch::optim::SGD> tables_sgd_;  ///< no momentum
  std::unique_ptr<StepOptimizer> dense_optimizer_;
  std::vector<torch::Tensor> params_;
};

}  // namespace

std::unique_ptr<Step> make_hybrid_ps_step(RankContext& rank) {
  const RunConfig& c = rank.config;
  if (rank.options.reference_world_size != 0) return std::make_unique<HybridReferenceStep>(rank);
  // One process group over the trainers and the servers: the lookups, the gradients and the
  // final gather of records go through it.
  rank.comm();
  std::shared_ptr<HybridEmbeddingModel> model = build_hybrid_model(c);
  const std::int64_t model_parameters = element_count(model->parameters());
  if (rank.env.rank >= c.world_size()) {
    return std::make_unique<HybridServerStep>(rank, std::move(model), model_parameters);
  }
  return std::make_unique<HybridTrainerStep>(rank, std::move(model), model_parameters);
}

}  // namespace trainbench::worker
