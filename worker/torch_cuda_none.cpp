// The cpu flavour of worker/torch_cuda.hpp: no CUDA, no NCCL. The calls that need a device throw
// (callers reach them only for device cuda or backend nccl, which the run refuses first with a
// ConfigError: worker/train_loop.cpp, worker/process_group.cpp); the versions are empty.
#include "worker/torch_cuda.hpp"

#include <c10/util/Exception.h>

namespace trainbench::worker::compat {
namespace {

[[noreturn]] void no_cuda() { TORCH_CHECK(false, "this trainbench-worker was built without CUDA (the cpu flavour)"); }

}  // namespace

bool built_with_cuda() { return false; }
void cuda_set_device(int) { no_cuda(); }
void cuda_reset_peak_memory(int) { no_cuda(); }
std::int64_t cuda_peak_memory_bytes(int) { no_cuda(); }
std::int64_t cuda_memory_allocated_bytes(int) { no_cuda(); }
std::string cuda_device_name(int) { no_cuda(); }
std::string cuda_version() { return ""; }
std::string cudnn_version() { return ""; }
std::string nccl_version() { return ""; }

c10::intrusive_ptr<c10d::Backend> make_nccl_backend(const c10::intrusive_ptr<c10d::Store>&, int, int,
                                                    std::chrono::milliseconds) {
  no_cuda();
}

}  // namespace trainbench::worker::compat
