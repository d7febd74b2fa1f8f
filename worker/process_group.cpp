#include "worker/process_group.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <iostream>
#include <map>
#include <memory>
#include <string_view>
#include <vector>

#include "core/results/utilization.hpp"
#include "worker/output_files.hpp"
#include "worker/torch_compat.hpp"
#include "worker/worker_error.hpp"

namespace trainbench::worker {

void PendingCollective::wait() {
  if (!wait_) return;
  auto fn = std::move(wait_);
  wait_ = nullptr;
  if (RankProgress* p = tracking_.progress) {
    if (tracking_.peer >= 0) {
      p->enter(tracking_.phase, tracking_.peer);
    } else {
      p->enter_collective(tracking_.phase, tracking_.seq, tracking_.bucket, tracking_.buckets);
    }
  }
  fn();
}

int PendingRecv::wait() {
  if (!wait_) return -1;
  auto fn = std::move(wait_);
  wait_ = nullptr;
  return fn();
}

void PendingRecv::abort() {
  if (abort_) abort_();
}

struct Communicator::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<compat::CommBackend> backend;
#ifdef TRAINBENCH_WITH_GLOO
  c10::intrusive_ptr<c10d::ProcessGroupGloo::Options> gloo_options;  ///< gloo: for subgroup()
#endif
  std::string backend_name;
  c10::intrusive_ptr<c10d::ProcessGroup> process_group;  ///< process_group(), once made
  std::chrono::milliseconds timeout{0};
  int rank = 0;
  int size = 1;
  RankProgress* progress = nullptr;  ///< the rank's (set_progress), else own_progress
  RankProgress own_progress;
  /// Bytes sent (sent_bytes()): shared with the subgroups, which may send from other threads.
  std::shared_ptr<std::atomic<std::int64_t>> sent = std::make_shared<std::atomic<std::int64_t>>(0);

  void count_sent(double bytes) { sent->fetch_add(std::llround(bytes)); }
  RankProgress& recorder() { return progress != nullptr ? *progress : own_progress; }
  /// A collective launched now: its sequence number, recorded as `phase` when waited for.
  WaitTracking collective(ProgressPhase phase) {
    RankProgress& p = recorder();
    return WaitTracking{&p, phase, p.next_collective(), -1, -1, 0};
  }
  WaitTracking point_to_point(ProgressPhase phase, int peer) {
    return WaitTracking{&recorder(), phase, 0, peer, -1, 0};
  }
};

namespace {

std::int64_t bytes_of(const at::Tensor& t) { return t.numel() * static_cast<std::int64_t>(t.element_size()); }

bool is_loopback(const std::string& addr) {
  return addr == "localhost" || addr == "::1" || addr.rfind("127.", 0) == 0;
}

void wait_work(const compat::WorkPtr& work, std::chrono::milliseconds timeout) {
  try {
    work->wait(timeout);
  } catch (const c10::Error& e) {
    throw std::runtime_error("collective failed: " + compat::error_message(e));
  }
}

}  // namespace

struct RunStore::Impl {
  c10::intrusive_ptr<c10d::TCPStore> store;
};

RunStore::RunStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RunStore::~RunStore() = default;

std::unique_ptr<RunStore> RunStore::connect(const std::string& addr, int port, std::chrono::milliseconds timeout) {
  auto impl = std::make_unique<Impl>();
  c10d::TCPStoreOptions opts;
  opts.port = static_cast<std::uint16_t>(port);
  opts.isServer = false;
  opts.waitWorkers = false;
  opts.timeout = timeout;
  try {
    impl->store = c10::make_intrusive<c10d::TCPStore>(addr, opts);
  } catch (const c10::Error& e) {
    throw std::runtime_error("cannot reach the run's store at " + addr + ":" + std::to_string(port) + ": " +
                             compat::error_message(e));
  }
  return std::unique_ptr<RunStore>(new RunStore(std::move(impl)));
}

std::unique_ptr<RunStore> RunStore::serve(int port, std::chrono::milliseconds timeout) {
  auto impl = std::make_unique<Impl>();
  c10d::TCPStoreOptions opts;
  opts.port = static_cast<std::uint16_t>(port);
  opts.isServer = true;
  opts.waitWorkers = false;
  opts.timeout = timeout;
  try {
    impl->store = c10::make_intrusive<c10d::TCPStore>("0.0.0.0", opts);
  } catch (const c10::Error& e) {
    throw std::runtime_error("cannot serve the run's store on port " + std::to_string(port) + ": " +
                             compat::error_message(e));
  }
  return std::unique_ptr<RunStore>(new RunStore(std::move(impl)));
}

namespace {
// c10d's TCPStore (its libuv server, the default since PyTorch 2.4) refuses a value over 8 MiB and
// drops the client's connection; a long run's result JSON (every step's time) can be bigger.
// Such a value is stored as parts of kStorePartBytes under "KEY/part/I", written before KEY,
// which then holds only kChunkedPrefix + the part count: whoever sees KEY finds every part.
constexpr std::size_t kStorePartBytes = 4u << 20;
constexpr std::string_view kChunkedPrefix = "trainbench-store-parts:";

std::string part_key(const std::string& key, std::size_t i) { return key + "/part/" + std::to_string(i); }

std::string as_string(const std::vector<std::uint8_t>& v) { return std::string(v.begin(), v.end()); }
}  // namespace

void RunStore::set(const std::string& key, const std::string& value) {
  auto bytes = [](std::string_view s) { return std::vector<std::uint8_t>(s.begin(), s.end()); };
  if (value.size() <= kStorePartBytes && value.rfind(kChunkedPrefix, 0) != 0) {
    impl_->store->set(key, bytes(value));
    return;
  }
  const std::size_t parts = (value.size() + kStorePartBytes - 1) / kStorePartBytes;
  for (std::size_t i = 0; i < parts; ++i) {
    impl_->store->set(part_key(key, i), bytes(std::string_view(value).substr(i * kStorePartBytes, kStorePartBytes)));
  }
  impl_->store->set(key, bytes(std::string(kChunkedPrefix) + std::to_string(parts)));
}

std::string RunStore::joined(const std::string& key, std::string value) {
  if (value.rfind(kChunkedPrefix, 0) != 0) return value;
  const std::size_t parts = std::stoul(value.substr(kChunkedPrefix.size()));
  std::string out;
  for (std::size_t i = 0; i < parts; ++i) out += as_string(impl_->store->get(part_key(key, i)));
  return out;
}

std::string RunStore::get(const std::string& key, std::chrono::milliseconds timeout) {
  try {
    impl_->store->wait({key}, timeout);
    return joined(key, as_string(impl_->store->get(key)));
  } catch (const c10::Error& e) {
    throw std::runtime_error("waiting for store key " + key + ": " + compat::error_message(e));
  }
}

std::optional<std::string> RunStore::try_get(const std::string& key) {
  try {
    if (!impl_->store->check({key})) return std::nullopt;
    return joined(key, as_string(impl_->store->get(key)));
  } catch (const c10::Error& e) {
    throw std::runtime_error("reading store key " + key + ": " + compat::error_message(e));
  }
}

std::int64_t RunStore::add(const std::string& key, std::int64_t delta) { return impl_->store->add(key, delta); }

std::unique_ptr<Communicator> Communicator::create(const RankEnv& env, const RunConfig& config,
                                                   const RunStore* external, const std::string& bind_address) {
  auto impl = std::make_unique<Impl>();
  impl->rank = env.rank;
  impl->size = env.world_size;
  impl->backend_name = to_string(config.backend);
  impl->timeout = std::chrono::seconds(config.collective_timeout_seconds);
  try {
    if (external != nullptr) {
      impl->store = external->impl_->store;
    } else {
      c10d::TCPStoreOptions opts;
      opts.port = static_cast<std::uint16_t>(env.master_port);
      opts.isServer = env.rank == 0;
      opts.numWorkers = static_cast<std::size_t>(env.world_size);
      opts.waitWorkers = true;
      opts.timeout = impl->timeout;
      impl->store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, opts);
    }

    if (config.backend == Backend::kGloo) {
#ifndef TRAINBENCH_WITH_GLOO
      (void)bind_address;
      throw ConfigError("backend gloo: this trainbench-worker was built against a libtorch without the gloo headers "
                        "(pip's wheels ship none); use backend nccl");
#else
      auto options = c10d::ProcessGroupGloo::Options::create(impl->timeout);
      if (!bind_address.empty()) {
        options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(bind_address));
      } else {
        options->devices.push_back(is_loopback(env.master_addr)
                                       ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
                                       : c10d::ProcessGroupGloo::createDefaultDevice());
      }
      impl->gloo_options = options;
      impl->backend =
          c10::make_intrusive<c10d::ProcessGroupGloo>(impl->store, env.rank, env.world_size, options);
#endif
    } else {  // Backend::kNccl
      if (!compat::built_with_cuda()) {
        throw ConfigError("backend nccl: this trainbench-worker was built without NCCL (the cpu image; "
                          "device cuda runs the cuda one)");
      }
      compat::cuda_set_device(env.local_rank);
      impl->backend = compat::make_nccl_backend(impl->store, env.rank, env.world_size, impl->timeout);
    }
  } catch (const c10::Error& e) {
    throw std::runtime_error("rendezvous at " + env.master_addr + ":" +
                             std::to_string(env.master_port) + " failed: " + compat::error_message(e));
  }
  return std::unique_ptr<Communicator>(new Communicator(std::move(impl)));
}

Communicator::Communicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Communicator::~Communicator() = default;

RankProgress& Communicator::progress() const { return impl_->recorder(); }
void Communicator::set_progress(RankProgress* progress) { impl_->progress = progress; }

int Communicator::rank() const { return impl_->rank; }
int Communicator::size() const { return impl_->size; }
std::int64_t Communicator::sent_bytes() const { return impl_->sent->load(); }
const std::string& Communicator::backend_name() const { return impl_->backend_name; }

c10::intrusive_ptr<c10d::ProcessGroup> Communicator::process_group() {
  if (!impl_->process_group) {
    const bool nccl = impl_->backend_name == to_string(Backend::kNccl);
    const auto type = nccl ? c10d::ProcessGroup::BackendType::NCCL : c10d::ProcessGroup::BackendType::GLOO;
    auto group = c10::make_intrusive<c10d::ProcessGroup>(impl_->store, impl_->rank, impl_->size);
    group->setBackend(nccl ? c10::DeviceType::CUDA : c10::DeviceType::CPU, type, impl_->backend);
    group->setDefaultBackend(type);
    impl_->process_group = group;
  }
  return impl_->process_group;
}

void Communicator::count_allreduce(std::int64_t bytes) {
  impl_->count_sent(allreduce_sent_bytes(bytes, impl_->size));
}

PendingCollective Communicator::allreduce_sum(at::Tensor tensor) {
  std::vector<at::Tensor> tensors{std::move(tensor)};
  c10d::AllreduceOptions opts;
  opts.reduceOp = c10d::ReduceOp::SUM;
  compat::WorkPtr work;
  try {
    work = impl_->backend->allreduce(tensors, opts);
  } catch (const c10::Error& e) {
    throw std::runtime_error("all-reduce failed: " + compat::error_message(e));
  }
  impl_->count_sent(allreduce_sent_bytes(bytes_of(tensors[0]), impl_->size));
  const auto timeout = impl_->timeout;
  return PendingCollective([work, timeout] { wait_work(work, timeout); }, impl_->collective(ProgressPhase::kAllReduce));
}

void Communicator::broadcast(const std::vector<at::Tensor>& tensors, int root) {
  // One flat tensor per dtype (gloo broadcasts one tensor per call), in a fixed order.
  std::map<int, std::vector<at::Tensor>> by_dtype;
  for (const auto& t : tensors) by_dtype[static_cast<int>(t.scalar_type())].push_back(t);
  for (auto& [dtype, group] : by_dtype) {
    std::vector<at::Tensor> flat_parts;
    flat_parts.reserve(group.size());
    for (const auto& t : group) flat_parts.push_back(t.detach().reshape({-1}));
    std::vector<at::Tensor> flat{at::cat(flat_parts)};
    c10d::BroadcastOptions opts;
    opts.rootRank = root;
    const WaitTracking waiting = impl_->collective(ProgressPhase::kBroadcast);
    waiting.progress->enter_collective(waiting.phase, waiting.seq);
    try {
      wait_work(impl_->backend->broadcast(flat, opts), impl_->timeout);
    } catch (const c10::Error& e) {
      throw std::runtime_error("broadcast failed: " + compat::error_message(e));
    }
    if (impl_->rank == root) {
      impl_->count_sent(static_cast<double>(bytes_of(flat[0])) * (impl_->size - 1));
      continue;
    }
    int64_t offset = 0;
    at::NoGradGuard no_grad;
    for (const auto& t : group) {
      const int64_t n = t.numel();
      t.detach().copy_(flat[0].narrow(0, offset, n).view(t.sizes()));
      offset += n;
    }
  }
}

at::Tensor Communicator::allgather(const at::Tensor& tensor) {
  std::vector<at::Tensor> input{tensor.contiguous()};
  std::vector<std::vector<at::Tensor>> output(1);
  for (int r = 0; r < impl_->size; ++r) output[0].push_back(at::empty_like(input[0]));
  const WaitTracking t = impl_->collective(ProgressPhase::kAllGather);
  t.progress->enter_collective(t.phase, t.seq);
  try {
    wait_work(impl_->backend->allgather(output, input), impl_->timeout);
  } catch (const c10::Error& e) {
    throw std::runtime_error("all-gather failed: " + compat::error_message(e));
  }
  impl_->count_sent(allgather_sent_bytes(bytes_of(input[0]), impl_->size));
  return at::stack(output[0]);
}

void Communicator::allgather_into(const at::Tensor& input, const std::vector<at::Tensor>& outputs) {
  std::vector<at::Tensor> in{input};
  std::vector<std::vector<at::Tensor>> out{outputs};
  const WaitTracking t = impl_->collective(ProgressPhase::kAllGather);
  t.progress->enter_collective(t.phase, t.seq);
  try {
    wait_work(impl_->backend->allgather(out, in), impl_->timeout);
  } catch (const c10::Error& e) {
    throw std::runtime_error("all-gather failed: " + compat::error_message(e));
  }
  impl_->count_sent(allgather_sent_bytes(bytes_of(input), impl_->size));
}

PendingCollective Communicator::send(at::Tensor tensor, int dst, int tag) {
  auto tensors = std::make_shared<std::vector<at::Tensor>>(1, std::move(tensor));
  compat::WorkPtr work;
  try {
    work = impl_->backend->send(*tensors, dst, tag);
  } catch (const c10::Error& e) {
    throw std::runtime_error("send to rank " + std::to_string(dst) + " failed: " + compat::error_message(e));
  }
  impl_->count_sent(static_cast<double>(bytes_of((*tensors)[0])));
  const auto timeout = impl_->timeout;
  return PendingCollective([work, tensors, timeout] { wait_work(work, timeout); },
                           impl_->point_to_point(ProgressPhase::kSend, dst));
}

PendingCollective Communicator::recv(at::Tensor tensor, int src, int tag) {
  auto tensors = std::make_shared<std::vector<at::Tensor>>(1, std::move(tensor));
  compat::WorkPtr work;
  try {
    work = impl_->backend->recv(*tensors, src, tag);
  } catch (const c10::Error& e) {
    throw std::runtime_error("recv from rank " + std::to_string(src) + " failed: " + compat::error_message(e));
  }
  const auto timeout = impl_->timeout;
  return PendingCollective([work, tensors, timeout] { wait_work(work, timeout); },
                           impl_->point_to_point(ProgressPhase::kRecv, src));
}

PendingRecv Communicator::recv_any(at::Tensor tensor, int tag) {
  auto tensors = std::make_shared<std::vector<at::Tensor>>(1, std::move(tensor));
  compat::WorkPtr work;
  try {
    work = impl_->backend->recvAnysource(*tensors, tag);
  } catch (const c10::Error& e) {
    throw std::runtime_error("receive from any rank failed: " + compat::error_message(e));
  }
  const auto timeout = impl_->timeout;
  return PendingRecv(
      [work, tensors, timeout]() -> int {
        try {
          if (!work->wait(timeout)) return -1;  // aborted
          return work->sourceRank();
        } catch (const c10::Error& e) {
          throw std::runtime_error("receive from any rank failed: " + compat::error_message(e));
        } catch (const std::exception& e) {  // gloo's own exceptions (timeout, closed connection)
          throw std::runtime_error(std::string("receive from any rank failed: ") + e.what());
        }
      },
      [work] { work->abort(); });
}

std::unique_ptr<Communicator> Communicator::subgroup(const std::string& name, const std::vector<int>& members) const {
  int sub_rank = -1;
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (i > 0 && members[i] <= members[i - 1]) throw std::logic_error("subgroup: members must be ascending");
    if (members[i] == impl_->rank) sub_rank = static_cast<int>(i);
  }
  if (sub_rank < 0) throw std::logic_error("subgroup: rank " + std::to_string(impl_->rank) + " is not a member");
#ifdef TRAINBENCH_WITH_GLOO
  if (!impl_->gloo_options) throw ConfigError("process sub-groups need backend gloo, got " + impl_->backend_name);
  auto impl = std::make_unique<Impl>();
  impl->rank = sub_rank;
  impl->size = static_cast<int>(members.size());
  impl->backend_name = impl_->backend_name;
  impl->timeout = impl_->timeout;
  impl->gloo_options = impl_->gloo_options;
  impl->progress = &impl_->recorder();
  impl->sent = impl_->sent;
  try {
    impl->store = c10::make_intrusive<c10d::PrefixStore>(name, impl_->store);
    impl->backend =
        c10::make_intrusive<c10d::ProcessGroupGloo>(impl->store, impl->rank, impl->size, impl->gloo_options);
  } catch (const c10::Error& e) {
    throw std::runtime_error("creating process group " + name + " failed: " + compat::error_message(e));
  }
  return std::unique_ptr<Communicator>(new Communicator(std::move(impl)));
#else
  throw ConfigError("process sub-groups (" + name + ") need backend gloo: this trainbench-worker was built without it");
#endif
}

void hand_over_result(const std::string& result_json, RunStore* store, const std::string& result_file) {
  if (store != nullptr) {
    store->set(kResultKey, result_json);
    store->add(kFinishedKey, 1);
  } else if (result_file.empty()) {
    std::cout << result_json << std::flush;
  } else {
    write_file_atomically(result_file, result_json);
  }
}

}  // namespace trainbench::worker
