#pragma once
// The size knobs of the language models and the HybridModel (spec.benchmark.sequenceLength,
// .transformer, .mlstm, .hybridEmbedding): JSON form shared by the spec, the run config and the
// report, and the presets the worker builds.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/spec/spec.hpp"

namespace trainbench {

/// A transformer's resolved shape: the preset of `model` with the spec's non-zero overrides.
struct TransformerShape {
  int layers = 12;
  int hidden = 768;
  int heads = 12;
  int intermediate = 3072;
  int vocab_size = 0;
  int max_positions = 0;
};

/// True for bert-base and gpt2-small.
bool is_transformer_model(const std::string& model);
/// True for the models whose examples are token sequences (bert-base, gpt2-small, mlstm):
/// their examples/sec counts sequences.
bool is_language_model(const std::string& model);
/// The preset of bert-base / gpt2-small with `overrides` applied (0 keeps the preset).
TransformerShape resolve_transformer(const std::string& model, const TransformerSpec& overrides);

/// Residual blocks per stage of the ResNet / ResNeXt models ({2, 2, 2, 2} for resnet18, ...);
/// empty for the others.
const std::vector<int>& resnet_stage_depths(const std::string& model);

/// The blocks paradigms pipeline and model-parallel split `b.model` into (worker/models.hpp
/// blocks()): mlp one per Linear layer; ResNets stem, residual blocks, head (resnet50: 18);
/// transformers embeddings, layers, head; mlstm 3; hybrid-embedding the tables and one per
/// Linear layer. 0 for an unknown model.
int model_block_count(const std::string& model, const MlpSpec& mlp, const TransformerSpec& transformer,
                      const HybridEmbeddingSpec& hybrid_embedding);
int model_block_count(const BenchmarkSpec& b);

nlohmann::json to_json(const TransformerSpec& t);
nlohmann::json to_json(const MlstmSpec& m);
nlohmann::json to_json(const HybridEmbeddingSpec& h);
/// Strict readers (std::runtime_error naming the field under `path`).
TransformerSpec transformer_spec_from_json(const nlohmann::json& j, const std::string& path);
MlstmSpec mlstm_spec_from_json(const nlohmann::json& j, const std::string& path);
HybridEmbeddingSpec hybrid_embedding_spec_from_json(const nlohmann::json& j, const std::string& path);

/// Semantic checks of the model size fields of `b` for its model; each error names its field
/// under "spec.benchmark".
std::vector<FieldError> validate_model_sizes(const BenchmarkSpec& b);

}  // namespace trainbench
