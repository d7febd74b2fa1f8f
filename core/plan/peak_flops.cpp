#include "core/plan/peak_flops.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <set>
#include <stdexcept>
#include <vector>

#include "core/spec/json_fields.hpp"

namespace trainbench {

namespace jf = json_fields;

namespace {

/// A table entry and the words of the CUDA device name that select it (all of them).
struct GpuEntry {
  std::vector<std::string> words;
  GpuPeak peak;
};

// Dense peaks in TFLOP/s: the datasheets print the tensor-core figures "with sparsity" (marked
// *); the dense figure is half of that. More specific entries come first.
const std::vector<GpuEntry>& gpu_table() {
  static const char* a100 = "NVIDIA A100 Tensor Core GPU datasheet (SXM 80GB; PCIe the same)";
  static const char* h100 = "NVIDIA H100 Tensor Core GPU datasheet";
  static const char* h200 = "NVIDIA H200 Tensor Core GPU datasheet";
  static const std::vector<GpuEntry> table = {
      {{"H200", "NVL"}, {"NVIDIA H200 NVL", h200, 60, 417.5, 835.5, 835.5}},
      {{"H200"}, {"NVIDIA H200 SXM", h200, 67, 494.5, 989.5, 989.5}},
      {{"H100", "NVL"}, {"NVIDIA H100 NVL", h100, 60, 417.5, 835.5, 835.5}},
      {{"H100", "PCIE"}, {"NVIDIA H100 PCIe", h100, 51, 378, 756.5, 756.5}},
      {{"H100"}, {"NVIDIA H100 SXM", h100, 67, 494.5, 989.5, 989.5}},  // "NVIDIA H100 80GB HBM3"
      {{"A100"}, {"NVIDIA A100", a100, 19.5, 156, 312, 312}},
      {{"L40S"}, {"NVIDIA L40S", "NVIDIA L40S GPU datasheet", 91.6, 183, 362.05, 362.05}},
      {{"L4"}, {"NVIDIA L4", "NVIDIA L4 Tensor Core GPU datasheet", 30.3, 60, 121, 121}},
      {{"A10"}, {"NVIDIA A10", "NVIDIA A10 Tensor Core GPU datasheet", 31.2, 62.5, 125, 125}},
      // No TF32 or BF16 units; FP16 is the tensor-core figure.
      {{"V100"}, {"NVIDIA V100 SXM2", "NVIDIA Tesla V100 GPU datasheet (SXM2)", 15.7, 0, 0, 125}},
  };
  return table;
}

/// The name's words, upper case: "NVIDIA A100-SXM4-80GB" -> {NVIDIA, A100, SXM4, 80GB}.
std::set<std::string> name_words(const std::string& name) {
  std::set<std::string> words;
  std::string word;
  for (char ch : name + " ") {
    if (std::isalnum(static_cast<unsigned char>(ch))) {
      word += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    } else if (!word.empty()) {
      words.insert(word);
      word.clear();
    }
  }
  return words;
}

std::string shape_text(const GemmShape& g) {
  std::string s = std::to_string(g.m) + " x " + std::to_string(g.k) + " x " + std::to_string(g.n);
  return g.batch > 1 ? std::to_string(g.batch) + " x (" + s + ")" : s;
}

}  // namespace

std::string to_string(PeakColumn c) {
  switch (c) {
    case PeakColumn::kFp32:
      return "fp32";
    case PeakColumn::kTf32:
      return "tf32";
    case PeakColumn::kBf16:
      return "bf16";
    case PeakColumn::kFp16:
      return "fp16";
  }
  return "fp32";
}

double GpuPeak::column(PeakColumn c) const {
  switch (c) {
    case PeakColumn::kFp32:
      return fp32;
    case PeakColumn::kTf32:
      return tf32;
    case PeakColumn::kBf16:
      return bf16;
    case PeakColumn::kFp16:
      return fp16;
  }
  return 0;
}

const GpuPeak* find_gpu_peak(const std::string& device_name) {
  const std::set<std::string> words = name_words(device_name);
  for (const GpuEntry& e : gpu_table()) {
    const bool all =
        std::all_of(e.words.begin(), e.words.end(), [&](const std::string& w) { return words.count(w) > 0; });
    if (all) return &e.peak;
  }
  return nullptr;
}

PeakColumn peak_column(Precision precision, Device device, bool conv_dominated) {
  switch (precision) {
    case Precision::kAmpBf16:
      return PeakColumn::kBf16;
    case Precision::kAmpFp16:
      return PeakColumn::kFp16;
    case Precision::kFp32:
      break;
  }
  return device == Device::kCuda && conv_dominated ? PeakColumn::kTf32 : PeakColumn::kFp32;
}

std::string gemm_dtype(Precision precision) {
  switch (precision) {
    case Precision::kAmpBf16:
      return "bfloat16";
    case Precision::kAmpFp16:
      return "float16";
    case Precision::kFp32:
      break;
  }
  return "float32";
}

std::optional<GemmShape> peak_gemm_shape(const RunConfig& c) {
  std::optional<GemmShape> g = dominant_gemm(model_layers(c), c.batch_size_per_device);
  if (!g) return std::nullopt;
  const double per_row = 2.0 * static_cast<double>(g->k) * static_cast<double>(g->n) * static_cast<double>(g->batch);
  const auto cap = static_cast<std::int64_t>(std::floor(kMaxGemmFlops / per_row));
  g->m = std::min(g->m, std::max(cap, kMinGemmRows));
  return g;
}

nlohmann::json to_json(const MeasuredGemm& g) {
  return {{"m", g.shape.m},   {"k", g.shape.k},     {"n", g.shape.n},  {"batch", g.shape.batch},
          {"dtype", g.dtype}, {"tflops", g.tflops}, {"timed", g.timed}};
}

MeasuredGemm measured_gemm_from_json(const nlohmann::json& j, const std::string& path) {
  jf::require_object(j, path);
  MeasuredGemm g;
  g.shape = {jf::get_int(j, "m", path), jf::get_int(j, "k", path), jf::get_int(j, "n", path),
             jf::get_int(j, "batch", path)};
  g.dtype = jf::get_string(j, "dtype", path);
  g.tflops = jf::get_number(j, "tflops", path);
  g.timed = jf::get_int32(j, "timed", path);
  if (g.tflops < 0) throw std::runtime_error(path + ".tflops: must be >= 0");
  return g;
}

std::optional<Peak> resolve_peak(const RunConfig& c, const std::string& device_name,
                                 const std::optional<MeasuredGemm>& measured) {
  if (c.peak_tflops) return Peak{*c.peak_tflops, "spec.benchmark.peakTFLOPS"};
  if (c.device == Device::kCuda) {
    const GpuPeak* gpu = find_gpu_peak(device_name);
    if (gpu == nullptr) return std::nullopt;
    const PeakColumn col = peak_column(c.precision, c.device, conv_dominated(model_layers(c)));
    if (gpu->column(col) <= 0) return std::nullopt;
    return Peak{gpu->column(col), std::string(gpu->name) + " " + to_string(col) + " dense (" + gpu->source + ")"};
  }
  if (!measured || measured->tflops <= 0) return std::nullopt;
  return Peak{measured->tflops, "measured GEMM " + shape_text(measured->shape) + " " + measured->dtype};
}

}  // namespace trainbench
