#include "worker/pipeline.hpp"

#include <map>
#include <set>

#include <torch/torch.h>

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <limits>
#include <string>

#include "core/spec/model_sizes.hpp"
#include "worker/torch_compat.hpp"
#include "worker/worker_error.hpp"

namespace trainbench::worker {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// A batch of `batch` examples cut into `count` micro-batches, the first `batch % count` one larger.
struct MicroBatches {
  std::vector<std::int64_t> offsets, sizes;
};
MicroBatches split_batch(std::int64_t batch, int count) {
  MicroBatches out;
  for (int m = 0, off = 0; m < count; ++m) {
    const std::int64_t n = batch / count + (m < batch % count ? 1 : 0);
    out.offsets.push_back(off);
    out.sizes.push_back(n);
    off += static_cast<int>(n);
  }
  return out;
}

std::vector<std::int64_t> with_batch(std::int64_t n, const std::vector<std::int64_t>& per_example) {
  std::vector<std::int64_t> shape{n};
  shape.insert(shape.end(), per_example.begin(), per_example.end());
  return shape;
}

std::vector<at::Tensor> block_tensors(const ModelBlock& b, bool parameters) {
  std::vector<at::Tensor> out;
  for (const auto& m : b.modules) {
    const auto ts = parameters ? m->parameters(/*recurse=*/true) : m->buffers(/*recurse=*/true);
    out.insert(out.end(), ts.begin(), ts.end());
  }
  return out;
}

/// Frees what the blocks of the other stages held, then starts the peak-RSS count afresh
/// (Linux: "5" in /proc/self/clear_refs resets the high-water mark getrusage reports), so that
/// a stage's peak memory is its own, not the transient whole model every rank builds once.
void release_memory_and_reset_peak() {
  malloc_trim(0);
  std::ofstream clear("/proc/self/clear_refs");
  if (clear) clear << "5";
}

}  // namespace

void check_stage_count(int stages, int blocks) {
  if (stages < 1) throw ConfigError("pipeline: need at least one stage");
  if (stages > blocks) {
    throw ConfigError("pipeline: " + std::to_string(stages) + " stages (ranks) but the model has only " +
                      std::to_string(blocks) + " blocks");
  }
}

std::vector<int> stage_starts(const std::vector<std::int64_t>& block_parameters, int stages,
                              const std::vector<int>& boundaries) {
  const int blocks = static_cast<int>(block_parameters.size());
  check_stage_count(stages, blocks);
  std::vector<int> starts{0};
  if (!boundaries.empty()) {
    if (static_cast<int>(boundaries.size()) != stages - 1) {
      throw ConfigError("pipeline.boundaries: " + std::to_string(boundaries.size()) + " entries for " +
                        std::to_string(stages) + " stages (need stages - 1)");
    }
    for (int b : boundaries) {
      if (b <= starts.back() || b >= blocks) {
        throw ConfigError("pipeline.boundaries: " + std::to_string(b) + " must be increasing and in 1.." +
                          std::to_string(blocks - 1) + " (the model has " + std::to_string(blocks) + " blocks)");
      }
      starts.push_back(b);
    }
    return starts;
  }
  // Minimise the largest stage's parameter count over contiguous splits (dynamic programming).
  std::vector<std::int64_t> prefix(static_cast<std::size_t>(blocks) + 1, 0);
  for (int i = 0; i < blocks; ++i) prefix[i + 1] = prefix[i] + block_parameters[static_cast<std::size_t>(i)];
  constexpr std::int64_t kInf = std::numeric_limits<std::int64_t>::max();
  const auto B = static_cast<std::size_t>(blocks) + 1;
  std::vector<std::vector<std::int64_t>> best(static_cast<std::size_t>(stages) + 1, std::vector<std::int64_t>(B, kInf));
  std::vector<std::vector<int>> cut(static_cast<std::size_t>(stages) + 1, std::vector<int>(B, 0));
  for (int i = 1; i <= blocks; ++i) best[1][static_cast<std::size_t>(i)] = prefix[static_cast<std::size_t>(i)];
  for (int s = 2; s <= stages; ++s) {
    for (int i = s; i <= blocks; ++i) {
      for (int j = s - 1; j < i; ++j) {
        const std::int64_t prev = best[static_cast<std::size_t>(s - 1)][static_cast<std::size_t>(j)];
        if (prev == kInf) continue;
        const std::int64_t v = std::max(prev, prefix[static_cast<std::size_t>(i)] - prefix[static_cast<std::size_t>(j)]);
        if (v < best[static_cast<std::size_t>(s)][static_cast<std::size_t>(i)]) {
          best[static_cast<std::size_t>(s)][static_cast<std::size_t>(i)] = v;
          cut[static_cast<std::size_t>(s)][static_cast<std::size_t>(i)] = j;
        }
      }
    }
  }
  std::vector<int> rev;
  int i = blocks;
  for (int s = stages; s >= 2; --s) {
    i = cut[static_cast<std::size_t>(s)][static_cast<std::size_t>(i)];
    rev.push_back(i);
  }
  starts.insert(starts.end(), rev.rbegin(), rev.rend());
  return starts;
}

PipelineStage::PipelineStage(BenchModel& model, const RunConfig& config, Communicator& comm)
    : comm_(comm), model_(model), stage_(comm.rank()), stages_(comm.size()), micro_batches_(config.pipeline.micro_batches) {
  std::vector<ModelBlock> all = model.blocks();
  if (all.empty())
    throw ConfigError("paradigm " + to_string(config.paradigm) + ": model " + config.model +
                      " cannot be split into stages");
  // Validation checks boundaries against core's count of the same blocks: the two must agree.
  const int counted = model_block_count(config.model, config.mlp, config.transformer, config.hybrid_embedding);
  if (counted != static_cast<int>(all.size())) {
    throw ConfigError("model " + config.model + " has " + std::to_string(all.size()) + " blocks, core counts " +
                      std::to_string(counted) + " (core/spec/model_sizes.cpp model_block_count)");
  }
  blocks_total_ = all.size();
  std::vector<std::int64_t> counts;
  for (const auto& b : all) {
    std::int64_t n = 0;
    for (const auto& p : block_tensors(b, true)) n += p.numel();
    counts.push_back(n);
  }
  starts_ = stage_starts(counts, stages_, config.pipeline.boundaries);
  const auto first = static_cast<std::size_t>(starts_[static_cast<std::size_t>(stage_)]);
  const auto last = stage_ + 1 < stages_ ? static_cast<std::size_t>(starts_[static_cast<std::size_t>(stage_) + 1])
                                         : all.size();

  // The per-example shape between blocks: one example through the whole model, in eval mode (no
  // BatchNorm statistics change) and without autograd; every rank computes the same.
  {
    torch::NoGradGuard no_grad;
    model.eval();
    at::Tensor x = at::zeros(with_batch(1, model.example_shape()), at::TensorOptions().dtype(model.input_dtype()));
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (i == first) input_shape_.assign(x.sizes().begin() + 1, x.sizes().end());
      x = all[i].forward(x);
      if (i + 1 == last) output_shape_.assign(x.sizes().begin() + 1, x.sizes().end());
    }
    model.train();
  }
  // Tensors of more than one block (a tied weight: GPT-2's token embedding is also its LM head)
  // may lie on several stages: each keeps a copy, the copies' gradients are summed after every
  // backward (sync_shared_gradients), and the first stage holding one owns it (counts it).
  auto stage_of = [&](std::size_t block) {
    int s = 0;
    while (s + 1 < stages_ && static_cast<std::size_t>(starts_[static_cast<std::size_t>(s) + 1]) <= block) ++s;
    return s;
  };
  std::map<const void*, std::set<int>> holders;
  for (std::size_t i = 0; i < all.size(); ++i) {
    for (const auto& t : block_tensors(all[i], true)) holders[t.unsafeGetTensorImpl()].insert(stage_of(i));
  }
  std::set<const void*> mine;
  for (std::size_t i = first; i < last; ++i) {
    for (bool params : {true, false}) {
      for (const auto& t : block_tensors(all[i], params)) mine.insert(t.unsafeGetTensorImpl());
    }
  }
  // Keep this stage's blocks; free the others' tensors (not those this stage also holds).
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (i >= first && i < last) {
      blocks_.push_back(all[i]);
      continue;
    }
    for (bool params : {true, false}) {
      for (auto& t : block_tensors(all[i], params)) {
        if (mine.count(t.unsafeGetTensorImpl()) == 0) t.set_data(at::empty({0}, t.options()));
      }
    }
  }
  for (const auto& t : parameters()) {
    const std::set<int>& h = holders[t.unsafeGetTensorImpl()];
    if (h.size() < 2) continue;
    SharedTensor s;
    s.tensor = t;
    for (int o : h) {
      if (o != stage_) s.peers.push_back(o);
    }
    s.owned = *h.begin() == stage_;
    shared_.push_back(s);
  }
  release_memory_and_reset_peak();
}

std::vector<at::Tensor> PipelineStage::owned_parameters() const {
  std::vector<at::Tensor> out;
  for (const auto& t : parameters()) {
    bool owned = true;
    for (const auto& s : shared_) {
      if (s.tensor.is_same(t)) owned = s.owned;
    }
    if (owned) out.push_back(t);
  }
  return out;
}

void PipelineStage::sync_shared_gradients() {
  // Every holder sends its gradient to every other holder and adds theirs: all copies get the
  // same sum (in stage order, so the copies stay bit-identical) and take the same optimizer step.
  constexpr int kSharedTagBase = 1 << 20;
  for (std::size_t k = 0; k < shared_.size(); ++k) {
    SharedTensor& s = shared_[k];
    at::Tensor mine = s.tensor.grad().defined() ? s.tensor.grad().contiguous() : at::zeros_like(s.tensor);
    std::vector<PendingCollective> sends;
    std::map<int, at::Tensor> theirs;
    std::vector<PendingCollective> recvs;
    for (int peer : s.peers) {
      sends.push_back(comm_.send(mine, peer, kSharedTagBase + static_cast<int>(k)));
      theirs[peer] = at::empty_like(mine);
      recvs.push_back(comm_.recv(theirs[peer], peer, kSharedTagBase + static_cast<int>(k)));
    }
    for (auto& r : recvs) r.wait();
    for (auto& w : sends) w.wait();
    theirs[stage_] = mine;
    at::Tensor sum = at::zeros_like(mine);
    for (auto& [stage, g] : theirs) sum.add_(g);  // std::map: stage order
    s.tensor.mutable_grad() = sum;
  }
}

std::vector<at::Tensor> PipelineStage::parameters() const {
  std::vector<at::Tensor> out;
  std::set<const void*> seen;
  for (const auto& b : blocks_) {
    for (auto& t : block_tensors(b, true)) {
      if (seen.insert(t.unsafeGetTensorImpl()).second) out.push_back(t);
    }
  }
  return out;
}

std::vector<at::Tensor> PipelineStage::buffers() const {
  std::vector<at::Tensor> out;
  for (const auto& b : blocks_) {
    for (auto& t : block_tensors(b, false)) out.push_back(t);
  }
  return out;
}

double PipelineStage::forward_backward(const at::Tensor& inputs, const at::Tensor& targets,
                                       std::optional<at::ScalarType> autocast) {
  const bool first = stage_ == 0;
  const bool last = stage_ + 1 == stages_;
  const std::int64_t batch = first ? inputs.size(0) : targets.size(0);
  const int m_count = micro_batches_;
  const MicroBatches split = split_batch(batch, m_count);
  const std::vector<std::int64_t>& offsets = split.offsets;
  const std::vector<std::int64_t>& sizes = split.sizes;
  const auto float_opts = at::TensorOptions().dtype(at::kFloat).device(inputs.device());
  double wait = 0;
  auto timed_wait = [&wait](PendingCollective& p) {
    const auto t0 = Clock::now();
    p.wait();
    wait += seconds_since(t0);
  };
  std::vector<at::Tensor> ins(static_cast<std::size_t>(m_count));
  std::vector<at::Tensor> outs(static_cast<std::size_t>(m_count));
  std::vector<PendingCollective> sends;
  double loss_sum = 0;

  // Forward of every micro-batch; the sends run while the next one computes.
  for (int m = 0; m < m_count; ++m) {
    const auto mi = static_cast<std::size_t>(m);
    at::Tensor x;
    if (first) {
      x = inputs.narrow(0, offsets[mi], sizes[mi]);
    } else {
      x = at::empty(with_batch(sizes[mi], input_shape_), float_opts);
      PendingCollective r = comm_.recv(x, stage_ - 1, m);
      timed_wait(r);
      x.requires_grad_(true);
    }
    ins[mi] = x;
    comm_.progress().enter(ProgressPhase::kForward);
    at::Tensor y;
    {
      std::optional<compat::AutocastScope> scope;
      if (autocast) scope.emplace(x.device().type(), *autocast);
      y = x;
      for (const auto& b : blocks_) y = b.forward(y);
      if (last) {
        y = model_.output_loss(y, targets.narrow(0, offsets[mi], sizes[mi])) *
            (static_cast<double>(sizes[mi]) / static_cast<double>(batch));
      }
    }
    if (last) {
      loss_sum += y.item<double>();
    } else {
      if (y.scalar_type() != at::kFloat) y = y.to(at::kFloat);
      sends.push_back(comm_.send(y.detach().contiguous(), stage_ + 1, m));
    }
    outs[mi] = y;
  }
  // Backward, last micro-batch first (GPipe); input gradients go back to the previous stage.
  for (int m = m_count - 1; m >= 0; --m) {
    const auto mi = static_cast<std::size_t>(m);
    if (last) {
      comm_.progress().enter(ProgressPhase::kBackward);
      outs[mi].backward();
    } else {
      at::Tensor g = at::empty_like(outs[mi]);
      PendingCollective r = comm_.recv(g, stage_ + 1, m_count + m);
      timed_wait(r);
      comm_.progress().enter(ProgressPhase::kBackward);
      outs[mi].backward(g);
    }
    outs[mi] = at::Tensor();
    if (!first) sends.push_back(comm_.send(ins[mi].grad().contiguous(), stage_ - 1, m_count + m));
    ins[mi] = at::Tensor();
  }
  for (auto& s : sends) timed_wait(s);
  const auto sync_start = Clock::now();
  sync_shared_gradients();
  last_shared_sync_ = seconds_since(sync_start);
  last_wait_ = wait;
  return last ? loss_sum : 0.0;
}

void PipelineStage::share_from_last_stage(std::vector<double>& values) {
  at::Tensor t = at::tensor(values, at::TensorOptions().dtype(at::kDouble));
  comm_.broadcast({t}, stages_ - 1);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = t[static_cast<std::int64_t>(i)].item<double>();
}

}  // namespace trainbench::worker
