#include "worker/zero_optimizer.hpp"

#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

#include "worker/worker_error.hpp"

namespace trainbench::worker {

ZeroShard zero_shard(std::int64_t total, int ranks, int rank) {
  ZeroShard z;
  z.shard_size = (total + ranks - 1) / ranks;
  z.begin = std::min(total, z.shard_size * rank);
  z.end = std::min(total, z.begin + z.shard_size);
  return z;
}

namespace {

constexpr double kBeta1 = 0.9;
constexpr double kBeta2 = 0.999;
constexpr double kEps = 1e-8;
constexpr double kMomentum = 0.9;
constexpr int kAllGatherTag = 1 << 20;  ///< tags of the all-gather's messages (k added per step)

std::int64_t nbytes(const at::Tensor& t) { return t.defined() ? t.numel() * static_cast<std::int64_t>(t.element_size()) : 0; }

class TorchOptimizer : public StepOptimizer {
 public:
  TorchOptimizer(Optimizer name, double lr, std::vector<at::Tensor> params) {
    switch (name) {
      case Optimizer::kSgd:
        optimizer_ =
            std::make_unique<torch::optim::SGD>(std::move(params), torch::optim::SGDOptions(lr).momentum(kMomentum));
        break;
      case Optimizer::kAdam:
        optimizer_ = std::make_unique<torch::optim::Adam>(
            std::move(params), torch::optim::AdamOptions(lr).betas({kBeta1, kBeta2}).eps(kEps));
        break;
    }
  }
  void step() override { optimizer_->step(); }
  std::int64_t state_bytes() const override {
    std::int64_t total = 0;
    for (const auto& kv : optimizer_->state()) {
      const torch::optim::OptimizerParamState* s = kv.second.get();
      if (const auto* sgd = dynamic_cast<const torch::optim::SGDParamState*>(s)) {
        total += nbytes(sgd->momentum_buffer());
      } else if (const auto* adam = dynamic_cast<const torch::optim::AdamParamState*>(s)) {
        total += nbytes(adam->exp_avg()) + nbytes(adam->exp_avg_sq()) + nbytes(adam->max_exp_avg_sq());
      }
    }
    return total;
  }

 private:
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

class ZeroAdam : public StepOptimizer {
 public:
  ZeroAdam(double lr, std::vector<at::Tensor> params, Communicator& comm)
      : lr_(lr), params_(std::move(params)), comm_(comm) {
    std::int64_t total = 0;
    for (const auto& p : params_) {
      if (p.scalar_type() != at::kFloat || !p.is_contiguous()) {
        throw ConfigError("run config: paradigm zero needs contiguous fp32 parameters");
      }
      offsets_.push_back(total);
      total += p.numel();
    }
    const std::int64_t n = comm_.size();
    const ZeroShard shard = zero_shard(total, comm_.size(), comm_.rank());
    shard_size_ = shard.shard_size;
    const std::int64_t lo = shard.begin;
    const std::int64_t hi = shard.end;
    for (std::size_t i = 0; i < params_.size(); ++i) {
      const std::int64_t begin = std::max(lo, offsets_[i]);
      const std::int64_t end = std::min(hi, offsets_[i] + params_[i].numel());
      if (begin < end) pieces_.push_back({i, begin - offsets_[i], end - begin, begin - lo});
    }
    const auto opts = params_.empty() ? at::TensorOptions().dtype(at::kFloat) : params_.front().options();
    exp_avg_ = at::zeros({hi - lo}, opts);
    exp_avg_sq_ = at::zeros({hi - lo}, opts);
    // The parameters become views into one flat buffer (padded to size x shard): the shards lie
    // side by side, so the all-gather writes every rank's updated shard straight into the
    // parameters, without a gather buffer or a copy back.
    at::NoGradGuard no_grad;
    flat_ = at::zeros({shard_size_ * n}, opts);
    for (std::size_t i = 0; i < params_.size(); ++i) {
      at::Tensor slot = flat_.narrow(0, offsets_[i], params_[i].numel());
      slot.copy_(params_[i].detach().reshape({-1}));
      params_[i].set_data(slot.view(params_[i].sizes()));
    }
    for (std::int64_t r = 0; r < n; ++r) slots_.push_back(flat_.narrow(0, r * shard_size_, shard_size_));
  }

  void step() override {
    at::NoGradGuard no_grad;
    ++step_;
    const double bias_correction1 = 1 - std::pow(kBeta1, static_cast<double>(step_));
    const double bias_correction2 = 1 - std::pow(kBeta2, static_cast<double>(step_));
    const double step_size = lr_ / bias_correction1;
    for (const Piece& piece : pieces_) {
      const at::Tensor& param = params_[piece.param];
      at::Tensor p = param.detach().view({-1}).narrow(0, piece.begin, piece.length);
      at::Tensor g = param.grad().defined() ? param.grad().reshape({-1}).narrow(0, piece.begin, piece.length)
                                            : at::zeros_like(p);
      at::Tensor m = exp_avg_.narrow(0, piece.shard_offset, piece.length);
      at::Tensor v = exp_avg_sq_.narrow(0, piece.shard_offset, piece.length);
      // torch::optim::Adam::step (libtorch 1.13), on this piece only.
      m.mul_(kBeta1).add_(g, 1 - kBeta1);
      v.mul_(kBeta2).addcmul_(g, g, 1 - kBeta2);
      at::Tensor denom = v.sqrt();  // in place from here: the same kernels, one temporary
      denom.div_(std::sqrt(bias_correction2)).add_(kEps);
      p.addcdiv_(m, denom, -step_size);
    }
    if (comm_.size() == 1) return;
    // Ring all-gather with point-to-point messages, straight into the parameters: in step k,
    // rank r passes shard (r - k) mod n on to rank r + 1 and receives shard (r - k - 1) mod n from
    // rank r - 1 into its place. (n - 1)/n of the parameter bytes per rank, as gloo's ring
    // all-gather, but without its flat copy of all shards.
    const int n = comm_.size();
    const int r = comm_.rank();
    RankProgress& progress = comm_.progress();
    const std::uint64_t seq = progress.next_collective();
    const auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k + 1 < n; ++k) {
      const auto out = static_cast<std::size_t>(((r - k) % n + n) % n);
      const auto in = static_cast<std::size_t>(((r - k - 1) % n + n) % n);
      PendingCollective sent = comm_.send(slots_[out], (r + 1) % n, kAllGatherTag + k);
      PendingCollective received = comm_.recv(slots_[in], (r - 1 + n) % n, kAllGatherTag + k);
      progress.enter_collective(ProgressPhase::kAllGather, seq);  // the ring's steps are one all-gather
      received.untracked().wait();
      sent.untracked().wait();
    }
    communication_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  double take_communication_seconds() override { return std::exchange(communication_, 0.0); }

  std::int64_t state_bytes() const override { return nbytes(exp_avg_) + nbytes(exp_avg_sq_); }

 private:
  struct Piece {
    std::size_t param;
    std::int64_t begin;         ///< inside the flattened parameter
    std::int64_t length;
    std::int64_t shard_offset;  ///< inside this rank's shard
  };
  double lr_;
  std::vector<at::Tensor> params_;
  Communicator& comm_;
  std::vector<std::int64_t> offsets_;
  std::int64_t shard_size_ = 0;
  std::vector<Piece> pieces_;
  at::Tensor exp_avg_, exp_avg_sq_;
  at::Tensor flat_;                ///< all parameters, flat, padded to size x shard elements
  std::vector<at::Tensor> slots_;  ///< views of flat_: the shard of each rank
  std::int64_t step_ = 0;
  double communication_ = 0;  ///< seconds in the all-gather since take_communication_seconds()
};

}  // namespace

std::unique_ptr<StepOptimizer> make_optimizer(Optimizer name, double learning_rate, std::vector<at::Tensor> params) {
  return std::make_unique<TorchOptimizer>(name, learning_rate, std::move(params));
}

std::unique_ptr<StepOptimizer> make_zero_adam(double learning_rate, std::vector<at::Tensor> params,
                                              Communicator& comm) {
  return std::make_unique<ZeroAdam>(learning_rate, std::move(params), comm);
}

}  // namespace trainbench::worker
