#include "worker/ddp_reducer.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "worker/worker_error.hpp"

namespace trainbench::worker {

DdpReducer::DdpReducer(std::vector<at::Tensor> params, Communicator& comm, double bucket_cap_mb,
                       GradientCompression compression)
    : params_(std::move(params)), comm_(comm), wire_dtype_(at::kFloat), compression_(compression) {
  switch (compression) {
    case GradientCompression::kNone:
      break;
    case GradientCompression::kFp16:
      wire_dtype_ = at::kHalf;
      break;
    case GradientCompression::kBf16:
      wire_dtype_ = at::kBFloat16;
      break;
  }
  if (!(bucket_cap_mb > 0)) throw ConfigError("ddp.bucketCapMB must be > 0");
  const double cap_bytes = bucket_cap_mb * 1024.0 * 1024.0;
  // PyTorch DDP's assignment (compute_bucket_assignment_by_size): parameters in reverse
  // registration order (gradients arrive roughly in that order) fill the current bucket, which
  // closes once it holds at least its limit. The first bucket's limit is 1 MiB (DDP's
  // _DEFAULT_FIRST_BUCKET_BYTES; the cap if that is smaller) so that the first all-reduce starts
  // as soon as the last layer's gradients are ready; every later bucket's is the cap. A bucket
  // thus ends at a layer's last parameter rather than splitting weight from bias.
  const double first_bucket_bytes = std::min(cap_bytes, 1024.0 * 1024.0);
  slots_.resize(params_.size());
  double bucket_bytes = 0;
  bool open = false;
  for (std::size_t k = params_.size(); k-- > 0;) {
    const at::Tensor& p = params_[k];
    if (!p.requires_grad()) continue;
    const double bytes = static_cast<double>(p.numel()) * static_cast<double>(p.element_size());
    if (!open || p.scalar_type() != params_[buckets_.back().params.front()].scalar_type()) {
      buckets_.emplace_back();
      bucket_bytes = 0;
      open = true;
    }
    Bucket& b = buckets_.back();
    Slot& s = slots_[k];
    s.bucket = buckets_.size() - 1;
    s.offset = 0;
    for (std::size_t j : b.params) s.offset += slots_[j].numel;
    s.numel = p.numel();
    b.params.push_back(k);
    bucket_bytes += bytes;
    if (bucket_bytes >= (buckets_.size() == 1 ? first_bucket_bytes : cap_bytes)) open = false;
  }
  for (Bucket& b : buckets_) {
    std::int64_t total = 0;
    for (std::size_t j : b.params) total += slots_[j].numel;
    b.flat = at::zeros({total}, params_[b.params.front()].options().requires_grad(false));
  }
  check_compression_supported();

  at::NoGradGuard no_grad;
  accumulators_.resize(params_.size());
  hook_handles_.assign(params_.size(), 0);
  for (std::size_t k = 0; k < params_.size(); ++k) {
    if (!params_[k].requires_grad()) continue;
    params_[k].mutable_grad() = grad_view(k);
    accumulators_[k] = torch::autograd::impl::grad_accumulator(params_[k]);
    hook_handles_[k] = accumulators_[k]->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
        [this, k](const torch::autograd::variable_list& outputs, const torch::autograd::variable_list&) {
          on_gradient_ready(k);
          return outputs;
        }));
  }
}

at::Tensor DdpReducer::grad_view(std::size_t k) const {
  const Slot& s = slots_[k];
  return buckets_[s.bucket].flat.narrow(0, s.offset, s.numel).view(params_[k].sizes());
}

DdpReducer::~DdpReducer() {
  for (std::size_t k = 0; k < accumulators_.size(); ++k) {
    if (accumulators_[k]) accumulators_[k]->del_post_hook(hook_handles_[k]);
  }
}

void DdpReducer::check_compression_supported() {
  if (wire_dtype_ == at::kFloat || buckets_.empty()) return;
  // Same collective on every rank: find out whether the backend takes this dtype at all
  // (gloo in libtorch 1.13 rejects bfloat16 with "Invalid scalar type").
  at::Tensor probe = at::zeros({1}, buckets_.front().flat.options().dtype(wire_dtype_));
  try {
    comm_.allreduce_sum(probe).wait();
  } catch (const std::exception& e) {
    throw ConfigError("ddp.gradientCompression " + to_string(compression_) + " is not supported by the " +
                      comm_.backend_name() + " backend of this libtorch (" + e.what() + ")");
  }
}

std::int64_t DdpReducer::bytes_per_step() const {
  std::int64_t n = 0;
  const auto wire_size = static_cast<std::int64_t>(c10::elementSize(wire_dtype_));
  for (const Bucket& b : buckets_) n += b.flat.numel() * wire_size;
  return n;
}

void DdpReducer::zero_grad() {
  // set_to_none, as PyTorch's optimizers do by default: autograd then hands over each fresh
  // gradient (no memset of the buckets, no read-add-write into them) and on_gradient_ready
  // copies it into its bucket slot once -- half the memory traffic of zero + accumulate.
  for (std::size_t k = 0; k < params_.size(); ++k) {
    if (accumulators_[k]) params_[k].mutable_grad() = at::Tensor();
  }
}

void DdpReducer::before_forward() {
  zero_grad();
  prepare_for_backward();
}

void DdpReducer::before_backward(const at::Tensor& /*root*/) {}

double DdpReducer::after_backward() {
  const auto t0 = std::chrono::steady_clock::now();
  finish_backward();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void DdpReducer::prepare_for_backward() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (Slot& s : slots_) s.ready = false;
  for (Bucket& b : buckets_) {
    b.pending = b.params.size();
    b.launched = false;
    b.work = PendingCollective();
  }
  next_to_launch_ = 0;
  armed_ = true;
}

void DdpReducer::on_gradient_ready(std::size_t param_index) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!armed_) return;
  Slot& s = slots_[param_index];
  if (s.ready) {
    throw std::runtime_error("DDP reducer: gradient of parameter " + std::to_string(param_index) +
                             " produced twice in one backward pass");
  }
  // After zero_grad() .grad is autograd's fresh gradient: bring it into the bucket and make
  // .grad the bucket's view (DDP's gradient_as_bucket_view). Had .grad been left pointing at
  // the bucket (no zero_grad), autograd accumulated in place and there is nothing to copy.
  const at::Tensor& g = params_[param_index].grad();
  if (g.defined() && g.data_ptr() != grad_view(param_index).data_ptr()) {
    at::NoGradGuard no_grad;
    grad_view(param_index).copy_(g);
    params_[param_index].mutable_grad() = grad_view(param_index);
  }
  s.ready = true;
  Bucket& b = buckets_[s.bucket];
  if (--b.pending == 0) launch_ready_buckets_locked();
}

void DdpReducer::launch_ready_buckets_locked() {
  while (next_to_launch_ < buckets_.size() && buckets_[next_to_launch_].pending == 0) {
    launch_locked(buckets_[next_to_launch_]);
    ++next_to_launch_;
  }
}

void DdpReducer::launch_locked(Bucket& b) {
  b.wire = wire_dtype_ == b.flat.scalar_type() ? b.flat : b.flat.to(wire_dtype_);
  b.work = comm_.allreduce_sum(b.wire);
  b.launched = true;
}

void DdpReducer::finish_backward() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!armed_) throw std::logic_error("DDP reducer: finish_backward without prepare_for_backward");
  armed_ = false;
  // Parameters that got no gradient this step contribute zeros; launch the rest in order.
  at::NoGradGuard no_grad;
  for (; next_to_launch_ < buckets_.size(); ++next_to_launch_) {
    Bucket& b = buckets_[next_to_launch_];
    for (std::size_t j : b.params) {
      if (slots_[j].ready) continue;
      grad_view(j).zero_();
      params_[j].mutable_grad() = grad_view(j);
    }
    b.pending = 0;
    launch_locked(b);
  }
  lock.unlock();

  const double world = static_cast<double>(comm_.size());
  const int buckets = static_cast<int>(buckets_.size());
  for (int k = 0; k < buckets; ++k) {
    Bucket& b = buckets_[static_cast<std::size_t>(k)];
    b.work.in_bucket(k, buckets).wait();  // the rank's record: "all-reduce #N (bucket k+1 of n)"
    if (b.wire.data_ptr() != b.flat.data_ptr()) b.flat.copy_(b.wire);
    if (world > 1) b.flat.div_(world);  // the parameters' .grad are views of b.flat
  }
}

}  // namespace trainbench::worker
