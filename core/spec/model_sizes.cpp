#include "core/spec/model_sizes.hpp"

#include <stdexcept>

#include "core/spec/json_fields.hpp"

namespace trainbench {

namespace jf = json_fields;

bool is_transformer_model(const std::string& model) { return model == "bert-base" || model == "gpt2-small"; }

bool is_language_model(const std::string& model) { return is_transformer_model(model) || model == "mlstm"; }

TransformerShape resolve_transformer(const std::string& model, const TransformerSpec& o) {
  TransformerShape s;
  if (model == "bert-base") {
    s.vocab_size = 30522;
    s.max_positions = 512;
  } else {
    s.vocab_size = 50257;
    s.max_positions = 1024;
  }
  if (o.layers > 0) s.layers = o.layers;
  if (o.hidden > 0) s.hidden = o.hidden;
  if (o.heads > 0) s.heads = o.heads;
  if (o.intermediate > 0) s.intermediate = o.intermediate;
  if (o.vocab_size > 0) s.vocab_size = o.vocab_size;
  if (o.max_positions > 0) s.max_positions = o.max_positions;
  return s;
}

const std::vector<int>& resnet_stage_depths(const std::string& model) {
  static const std::vector<int> k18{2, 2, 2, 2};
  static const std::vector<int> k50{3, 4, 6, 3};
  static const std::vector<int> k101{3, 4, 23, 3};
  static const std::vector<int> none;
  if (model == "resnet18") return k18;
  if (model == "resnet50" || model == "resnext50_32x4d") return k50;
  if (model == "resnet101" || model == "resnext101_32x8d") return k101;
  return none;
}

int model_block_count(const std::string& model, const MlpSpec& mlp, const TransformerSpec& transformer,
                      const HybridEmbeddingSpec& hybrid_embedding) {
  const auto size = [](const std::vector<int>& v) { return static_cast<int>(v.size()); };
  // mlp: one block per Linear layer; transformers: embeddings, layers, head; mlstm: embedding,
  // recurrence, decoder; hybrid-embedding: the tables, then one per Linear layer.
  if (model == "mlp") return size(mlp.hidden_sizes) + 1;
  if (is_transformer_model(model)) return resolve_transformer(model, transformer).layers + 2;
  if (model == "mlstm") return 3;
  if (model == "hybrid-embedding") return size(hybrid_embedding.dense_sizes) + 2;
  const auto& depths = resnet_stage_depths(model);
  if (depths.empty()) return 0;
  int blocks = 2;  // stem, head
  for (int d : depths) blocks += d;
  return blocks;
}

int model_block_count(const BenchmarkSpec& b) {
  return model_block_count(b.model, b.mlp, b.transformer, b.hybrid_embedding);
}

nlohmann::json to_json(const TransformerSpec& t) {
  return {{"layers", t.layers},
          {"hidden", t.hidden},
          {"heads", t.heads},
          {"intermediate", t.intermediate},
          {"vocabSize", t.vocab_size},
          {"maxPositions", t.max_positions},
          {"attention", to_string(t.attention)}};
}

nlohmann::json to_json(const MlstmSpec& m) {
  return {{"hiddenSize", m.hidden_size}, {"embeddingSize", m.embedding_size}};
}

nlohmann::json to_json(const HybridEmbeddingSpec& h) {
  return {{"numTables", h.num_tables},     {"numEmbeddings", h.num_embeddings}, {"embeddingDim", h.embedding_dim},
          {"bagSize", h.bag_size},         {"denseSizes", h.dense_sizes},       {"numClasses", h.num_classes}};
}

namespace {
int get_int32(const nlohmann::json& j, const std::string& key, const std::string& path) {
  return jf::get_int32(j, key, path);
}
}  // namespace

TransformerSpec transformer_spec_from_json(const nlohmann::json& j, const std::string& path) {
  jf::require_object(j, path);
  TransformerSpec t;
  t.layers = get_int32(j, "layers", path);
  t.hidden = get_int32(j, "hidden", path);
  t.heads = get_int32(j, "heads", path);
  t.intermediate = get_int32(j, "intermediate", path);
  t.vocab_size = get_int32(j, "vocabSize", path);
  t.max_positions = get_int32(j, "maxPositions", path);
  // Absent in reports of workers before the switch: they computed attention eagerly.
  t.attention = jf::has(j, "attention") ? jf::get_enum<Attention>(j, "attention", path) : Attention::kEager;
  return t;
}

MlstmSpec mlstm_spec_from_json(const nlohmann::json& j, const std::string& path) {
  jf::require_object(j, path);
  MlstmSpec m;
  m.hidden_size = get_int32(j, "hiddenSize", path);
  m.embedding_size = get_int32(j, "embeddingSize", path);
  return m;
}

HybridEmbeddingSpec hybrid_embedding_spec_from_json(const nlohmann::json& j, const std::string& path) {
  jf::require_object(j, path);
  HybridEmbeddingSpec h;
  h.num_tables = get_int32(j, "numTables", path);
  h.num_embeddings = get_int32(j, "numEmbeddings", path);
  h.embedding_dim = get_int32(j, "embeddingDim", path);
  h.bag_size = get_int32(j, "bagSize", path);
  h.num_classes = get_int32(j, "numClasses", path);
  h.dense_sizes = jf::get_int32_list(j, "denseSizes", path);
  return h;
}

std::vector<FieldError> validate_model_sizes(const BenchmarkSpec& b) {
  std::vector<FieldError> errors;
  const std::string bp = "spec.benchmark";
  auto in_range = [&errors](const std::string& path, long long v, IntRange r) {
    if (v < r.min) errors.push_back({path, "must be >= " + std::to_string(r.min) + ", got " + std::to_string(v)});
    if (v > r.max) errors.push_back({path, "must be <= " + std::to_string(r.max) + ", got " + std::to_string(v)});
  };
  using namespace bounds;
  in_range(bp + ".sequenceLength", b.sequence_length, kSequenceLength);
  const TransformerSpec& t = b.transformer;
  const std::string tp = bp + ".transformer";
  in_range(tp + ".layers", t.layers, kTransformerSize);
  in_range(tp + ".hidden", t.hidden, kTransformerSize);
  in_range(tp + ".heads", t.heads, kTransformerSize);
  in_range(tp + ".intermediate", t.intermediate, kTransformerSize);
  in_range(tp + ".vocabSize", t.vocab_size, kTransformerSize);
  in_range(tp + ".maxPositions", t.max_positions, kTransformerSize);
  in_range(bp + ".mlstm.hiddenSize", b.mlstm.hidden_size, kMlstmSize);
  in_range(bp + ".mlstm.embeddingSize", b.mlstm.embedding_size, kMlstmSize);
  const HybridEmbeddingSpec& h = b.hybrid_embedding;
  const std::string hp = bp + ".hybridEmbedding";
  in_range(hp + ".numTables", h.num_tables, kEmbeddingSize);
  in_range(hp + ".numEmbeddings", h.num_embeddings, kEmbeddingSize);
  in_range(hp + ".embeddingDim", h.embedding_dim, kEmbeddingSize);
  in_range(hp + ".bagSize", h.bag_size, kEmbeddingSize);
  in_range(hp + ".numClasses", h.num_classes, kNumClasses);
  for (std::size_t i = 0; i < h.dense_sizes.size(); ++i) {
    in_range(hp + ".denseSizes[" + std::to_string(i) + "]", h.dense_sizes[i], kLayerWidth);
  }
  const bool sizes_ok = b.sequence_length >= 1 && t.layers >= 0 && t.hidden >= 0 && t.heads >= 0 &&
                        t.intermediate >= 0 && t.vocab_size >= 0 && t.max_positions >= 0;
  if (!sizes_ok || !is_transformer_model(b.model)) return errors;
  const TransformerShape s = resolve_transformer(b.model, t);
  if (s.hidden % s.heads != 0) {
    errors.push_back({tp + (t.heads > 0 ? ".heads" : ".hidden"),
                      "hidden (" + std::to_string(s.hidden) + ") must be a multiple of heads (" +
                          std::to_string(s.heads) + ")"});
  }
  if (b.sequence_length > s.max_positions) {
    errors.push_back({bp + ".sequenceLength",
                      "must be <= the model's positions (" + b.model + ": " + std::to_string(s.max_positions) +
                          ", spec.benchmark.transformer.maxPositions), got " + std::to_string(b.sequence_length)});
  }
  if (b.model == "bert-base" && b.sequence_length < 2) {
    errors.push_back({bp + ".sequenceLength", "bert-base needs >= 2 tokens (two segments), got " +
                                                  std::to_string(b.sequence_length)});
  }
  return errors;
}

}  // namespace trainbench
