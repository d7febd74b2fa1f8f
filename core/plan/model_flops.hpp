#pragma once
// The layers of every model the worker builds, derived from the same shape knobs (the run's
// config: mlp, imageSize, sequenceLength, transformer, mlstm, hybridEmbedding), and the model
// FLOPs counted from them (docs/report.md, "Model FLOPs utilization").
//
// Convention: a multiply-add (MAC) is 2 FLOPs; only the matrix products count (Linear layers,
// convolutions, attention's scores and weighted sum, the mLSTM's gate matmuls); embeddings,
// norms, activations, softmax, pooling and residual additions count 0. Forward = 2 x MACs per
// example; training = forward + backward with the backward twice the forward = 3 x forward
// (Kaplan et al. 2020, "Scaling Laws for Neural Language Models", section 2.1; PaLM, Chowdhery
// et al. 2022, appendix B, whose attention term 12 x layers x hidden x sequence per token this is).
// The worker's tests check that the list's parameter count equals the libtorch model's, so the
// list cannot drift from the model.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/plan/run_config.hpp"

namespace trainbench {

enum class LayerKind {
  kLinear,     ///< in -> out features at `positions` places per example (tokens; 1 for a vector)
  kConv,       ///< in -> out channels, square kernel, stride, groups, positions = output h x w
  kAttention,  ///< softmax(Q K^T) V over `positions` tokens: in = hidden, heads (its projections are kLinear)
  kEmbedding,  ///< in rows x out columns; a lookup: 0 FLOPs
  kNorm,       ///< BatchNorm / LayerNorm over `in` features (weight and bias): 0 FLOPs counted
};

struct Layer {
  std::string name;
  LayerKind kind = LayerKind::kLinear;
  std::int64_t in = 0;
  std::int64_t out = 0;
  std::int64_t kernel = 1;  ///< conv
  std::int64_t stride = 1;  ///< conv
  std::int64_t groups = 1;  ///< conv
  std::int64_t positions = 1;
  std::int64_t heads = 0;  ///< attention
  bool bias = false;
  /// linear: the weight is another layer's (tied to an embedding: GPT-2's LM head, BERT's MLM
  /// decoder): no weight parameters of its own, the matmul still counts.
  bool tied = false;
};

/// A matrix product's shape: `batch` products of [m x k] x [k x n].
struct GemmShape {
  std::int64_t m = 0;
  std::int64_t k = 0;
  std::int64_t n = 0;
  std::int64_t batch = 1;
  bool operator==(const GemmShape& o) const { return m == o.m && k == o.k && n == o.n && batch == o.batch; }
};

std::int64_t layer_parameters(const Layer& l);
/// Forward multiply-adds of one example.
double layer_macs(const Layer& l);
/// The layer's product for one example (linear: positions x in x out; conv: its im2col product
/// per group; attention: Q K^T per head); m = 0 for layers without one.
GemmShape layer_gemm(const Layer& l);

/// The layers of `c.model` with the run's shape; empty for an unknown model or none (allreduce).
std::vector<Layer> model_layers(const RunConfig& c);

std::int64_t total_parameters(const std::vector<Layer>& layers);
double forward_macs_per_example(const std::vector<Layer>& layers);
/// 2 FLOPs per multiply-add.
double forward_flops_per_example(const std::vector<Layer>& layers);
/// Forward + backward (twice the forward): 3 x forward.
double training_flops_per_example(const std::vector<Layer>& layers);

/// The model's dominant product: of the layers' GEMM shapes, the one with the most FLOPs summed
/// over the layers that have it, with m scaled to `batch` examples. nullopt without products.
std::optional<GemmShape> dominant_gemm(const std::vector<Layer>& layers, std::int64_t batch);
/// Whether the layers' FLOPs are mostly convolutions (cuDNN may run fp32 convolutions as TF32).
bool conv_dominated(const std::vector<Layer>& layers);

}  // namespace trainbench
