#pragma once
// The peak a run's achieved FLOP/s is measured against (docs/report.md, "Model FLOPs
// utilization"): spec.benchmark.peakTFLOPS when set; on CUDA the dense peak of the device's
// datasheet for the run's precision (the table in peak_flops.cpp, matched on the device name the
// worker records); on CPU a GEMM of the model's dominant shape timed by every worker process at
// the start of the run (worker/peak_gemm), as the all-reduce benchmark measures memcpy.

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/plan/model_flops.hpp"
#include "core/spec/vocabulary.hpp"

namespace trainbench {

/// A datasheet's columns (dense: without structured sparsity).
enum class PeakColumn { kFp32, kTf32, kBf16, kFp16 };
std::string to_string(PeakColumn c);

/// One GPU's dense peaks in TFLOP/s (0: the device has no such unit).
struct GpuPeak {
  const char* name;    ///< "NVIDIA H100 SXM"
  const char* source;  ///< the datasheet
  double fp32;
  double tf32;
  double bf16;
  double fp16;
  double column(PeakColumn c) const;
};

/// The table's entry for a CUDA device name ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB",
/// "NVIDIA L4"); nullptr for a device the table does not know.
const GpuPeak* find_gpu_peak(const std::string& device_name);

/// The column a precision runs in: amp-bf16 -> bf16, amp-fp16 -> fp16; fp32 -> fp32, or tf32 on
/// CUDA for a model whose FLOPs are mostly convolutions (libtorch lets cuDNN run fp32 convolutions
/// as TF32 by default; matmuls stay fp32).
PeakColumn peak_column(Precision precision, Device device, bool conv_dominated);

/// A GEMM timed in the worker (CPU runs): its shape (m capped, see worker/peak_gemm.hpp), element
/// type and the best of its timed products. RunResult "peakGemm".
struct MeasuredGemm {
  GemmShape shape;
  std::string dtype;  ///< float32 | bfloat16 | float16
  double tflops = 0;  ///< best of `timed` products
  int timed = 0;
};
/// "float32" (fp32), "bfloat16" (amp-bf16), "float16" (amp-fp16).
std::string gemm_dtype(Precision precision);
/// The GEMM a CPU run measures: the model's dominant product for a device's batch, its rows cut
/// so that one product is at most kMaxGemmFlops (but keeps at least kMinGemmRows rows).
inline constexpr double kMaxGemmFlops = 4e9;
inline constexpr std::int64_t kMinGemmRows = 256;
std::optional<GemmShape> peak_gemm_shape(const RunConfig& c);

nlohmann::json to_json(const MeasuredGemm& g);
/// Throws std::runtime_error naming the bad field under `path`.
MeasuredGemm measured_gemm_from_json(const nlohmann::json& j, const std::string& path);

/// A peak and where it came from: "spec.benchmark.peakTFLOPS", "NVIDIA H100 SXM bf16 dense
/// (NVIDIA H100 Tensor Core GPU datasheet)", "measured GEMM 256 x 768 x 50257 bfloat16".
struct Peak {
  double tflops = 0;
  std::string source;
};
/// The run's peak per device, or nullopt (an unknown GPU, a CPU result without a measurement).
std::optional<Peak> resolve_peak(const RunConfig& c, const std::string& device_name,
                                 const std::optional<MeasuredGemm>& measured);

}  // namespace trainbench
