#include "worker/torch_ddp_reducer.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/comm.hpp>
#include <torch/csrc/distributed/c10d/default_comm_hooks.hpp>
#include <torch/csrc/distributed/c10d/logger.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>

#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "worker/torch_compat.hpp"
#include "worker/worker_error.hpp"

namespace trainbench::worker {
namespace {

/// DDP's first bucket (torch.distributed._DEFAULT_FIRST_BUCKET_BYTES).
constexpr std::int64_t kFirstBucketBytes = 1024 * 1024;

/// What Python's bf16_compress_hook does (PyTorch ships it in Python only; its C++ built-ins are
/// ALLREDUCE and FP16_COMPRESS): the bucket cast to bfloat16 and divided by the world size,
/// all-reduced, cast back into the bucket.
class Bf16CompressHook final : public c10d::CppCommHookInterface<c10::intrusive_ptr<c10d::ProcessGroup>> {
 public:
  explicit Bf16CompressHook(const c10::intrusive_ptr<c10d::ProcessGroup>& group)
      : CppCommHookInterface<c10::intrusive_ptr<c10d::ProcessGroup>>(group) {}

  c10::intrusive_ptr<c10::ivalue::Future> runHook(c10d::GradBucket& bucket) override {
    at::Tensor compressed = bucket.getBufferRef().to(at::kBFloat16);
    compressed.div_(state_->getSize());
    std::vector<at::Tensor> tensors{compressed};
    auto reduced = state_->allreduce(tensors)->getFuture();
    at::Tensor into = bucket.getBufferRef();
    return reduced->then(
        [into](c10::ivalue::Future& done) {
          into.copy_(done.value().toTensorVector().at(0));
          return c10::IValue(into);
        },
        reduced->elementType());
  }
};

std::int64_t cap_bytes(double bucket_cap_mb) {
  if (!(bucket_cap_mb > 0)) throw ConfigError("ddp.bucketCapMB must be > 0");
  return static_cast<std::int64_t>(bucket_cap_mb * 1024.0 * 1024.0);
}

}  // namespace

TorchDdpReducer::TorchDdpReducer(std::vector<at::Tensor> params, Communicator& comm, double bucket_cap_mb,
                                 GradientCompression compression)
    : params_(std::move(params)), comm_(comm), compression_(compression) {
  const std::int64_t cap = cap_bytes(bucket_cap_mb);
  const c10::intrusive_ptr<c10d::ProcessGroup> group = comm_.process_group();
  const std::vector<bool> sparse(params_.size(), false);
  try {
    c10d::verify_params_across_processes(group, params_, std::nullopt);
    // One bucket until the first backward pass (DDP without find_unused_parameters), reversed
    // as DDP reverses its assignment.
    auto assignment = c10d::compute_bucket_assignment_by_size(
        params_, {static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max())}, sparse);
    std::vector<std::vector<std::size_t>> buckets = std::get<0>(assignment);
    std::reverse(buckets.begin(), buckets.end());
    reducer_ = std::make_shared<c10d::Reducer>(params_, std::move(buckets), group, sparse, cap,
                                               /*find_unused_parameters=*/false,
                                               /*gradient_as_bucket_view=*/false,
                                               std::unordered_map<std::size_t, std::string>{},
                                               std::min(cap, kFirstBucketBytes),
                                               /*skip_all_reduce_unused_params=*/false,
                                               /*use_python_reducer=*/false,
                                               /*bucket_bytes_cap_list=*/std::vector<std::int64_t>{});
    logger_ = std::make_shared<c10d::Logger>(reducer_);
    reducer_->set_logger(logger_);
    if (compression_ == GradientCompression::kFp16) {
      reducer_->register_builtin_comm_hook(c10d::BuiltinCommHookType::FP16_COMPRESS);
    } else if (compression_ == GradientCompression::kBf16) {
      reducer_->register_comm_hook(std::make_unique<Bf16CompressHook>(group));
    }
  } catch (const c10::Error& e) {
    throw std::runtime_error("PyTorch's DDP reducer: " + compat::error_message(e));
  }
}

TorchDdpReducer::~TorchDdpReducer() = default;

void TorchDdpReducer::before_forward() {
  for (at::Tensor& p : params_) {
    if (p.requires_grad()) p.mutable_grad() = at::Tensor();  // zero_grad(set_to_none=True)
  }
  computed_at_.reset();
  reducer_->prepare_for_forward();
  reducer_->rebuild_buckets();  // true once: after the first backward pass; a collective then
}

void TorchDdpReducer::before_backward(const at::Tensor& root) {
  reducer_->prepare_for_backward({});
  // The root's gradient is the backward pass's first: queue, ahead of the reducer's finalizer
  // (queued when its last bucket is ready), a callback marking the end of the computation.
  root.register_hook([this](const at::Tensor&) {
    torch::autograd::Engine::get_default_engine().queue_callback([this] {
      computed_at_ = Clock::now();
      RankProgress& progress = comm_.progress();
      progress.enter_collective(ProgressPhase::kAllReduce, progress.next_collective(), -1,
                                static_cast<int>(bucket_count()));
    });
  });
}

double TorchDdpReducer::after_backward() {
  const auto now = Clock::now();
  comm_.count_allreduce(bytes_per_step());
  if (!computed_at_) return 0.0;
  return std::chrono::duration<double>(now - *computed_at_).count();
}

std::size_t TorchDdpReducer::bucket_count() const { return logger_->get_bucket_sizes().size(); }

std::int64_t TorchDdpReducer::bytes_per_step() const {
  const std::vector<std::int64_t> sizes = logger_->get_bucket_sizes();
  const std::int64_t bytes = std::accumulate(sizes.begin(), sizes.end(), std::int64_t{0});
  return compression_ == GradientCompression::kNone ? bytes : bytes / 2;  // fp32 -> 16 bits
}

}  // namespace trainbench::worker
