#pragma once
// The language models (bert-base, gpt2-small, mlstm) and the DDP + RPC benchmark's HybridModel
// (hybrid-embedding). Implemented in models_lm.cpp; build_model (models.cpp) dispatches here.
//
// Synthetic data (drawn from the rank's generator, see BenchModel::synthetic_batch):
//  - gpt2-small, mlstm: sequenceLength + 1 random tokens per example; inputs are the first
//    sequenceLength, targets the last sequenceLength (next-token loss).
//  - bert-base: sequenceLength random tokens, 15% of positions replaced by [MASK] (id 103, or
//    vocabSize - 1 for vocabularies of <= 103 tokens); targets [B, sequenceLength + 1]: the
//    masked positions' original tokens (-100 elsewhere) and, in the last column, a random
//    next-sentence label. Loss: masked-LM + next-sentence prediction (BERT's pre-training loss).
//  - hybrid-embedding: inputs [B, numTables, bagSize] row ids, targets random classes.

#include <torch/nn.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/plan/run_config.hpp"
#include "worker/models.hpp"

namespace trainbench::worker {

/// spec.benchmark.transformer.attention resolved: kEager, or kFused (at::scaled_dot_product_attention)
/// for fused and auto.
Attention resolve_attention(Attention requested);

/// bert-base, gpt2-small, mlstm or hybrid-embedding built for `config`; nullptr for any other
/// name. Throws ConfigError for sizes the model cannot take.
std::shared_ptr<BenchModel> build_sequence_model(const std::string& name, const RunConfig& config);

/// The seed's HybridModel as one process. The sparse part (the embedding tables, submodule
/// "sparse", one EmbeddingBag "table<i>" each) and the dense part (submodule "dense", the FC
/// layers) are separate so that a parameter-server paradigm can host the tables elsewhere:
/// forward(ids) == dense_forward(sparse_forward(ids)).
class HybridEmbeddingModel : public BenchModel {
 public:
  explicit HybridEmbeddingModel(const HybridEmbeddingSpec& spec);

  torch::Tensor forward(torch::Tensor ids) override;
  /// ids [B, numTables, bagSize] -> the bags' sums, concatenated per table: [B, numTables * embeddingDim].
  torch::Tensor sparse_forward(const torch::Tensor& ids);
  /// One table's lookup: ids [B, bagSize] -> [B, embeddingDim].
  torch::Tensor lookup(std::size_t table, const torch::Tensor& ids);
  /// features [B, numTables * embeddingDim] -> logits [B, numClasses].
  torch::Tensor dense_forward(const torch::Tensor& features);

  const std::vector<torch::nn::EmbeddingBag>& tables() const { return tables_; }
  torch::nn::Sequential& dense() { return dense_; }
  const HybridEmbeddingSpec& spec() const { return spec_; }

  /// Pipeline blocks: the tables (ids -> concatenated bags), then each Linear of the dense part.
  std::vector<ModelBlock> blocks() override;
  at::ScalarType input_dtype() const override { return at::kLong; }
  std::vector<std::int64_t> example_shape() const override { return {spec_.num_tables, spec_.bag_size}; }
  std::int64_t num_classes() const override { return spec_.num_classes; }
  SyntheticBatch synthetic_batch(std::int64_t batch, at::Generator& gen) const override;

 private:
  HybridEmbeddingSpec spec_;
  std::vector<torch::nn::EmbeddingBag> tables_;
  torch::nn::Sequential dense_{nullptr};
};

}  // namespace trainbench::worker
