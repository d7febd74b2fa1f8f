#include "core/plan/model_flops.hpp"

#include <map>
#include <tuple>

#include "core/spec/model_sizes.hpp"

namespace trainbench {
namespace {

using Layers = std::vector<Layer>;

Layer linear(const std::string& name, std::int64_t in, std::int64_t out, std::int64_t positions, bool bias = true) {
  Layer l;
  l.name = name;
  l.kind = LayerKind::kLinear;
  l.in = in;
  l.out = out;
  l.positions = positions;
  l.bias = bias;
  return l;
}

Layer tied_linear(const std::string& name, std::int64_t in, std::int64_t out, std::int64_t positions, bool bias) {
  Layer l = linear(name, in, out, positions, bias);
  l.tied = true;
  return l;
}

Layer table(const std::string& name, std::int64_t rows, std::int64_t columns) {
  Layer l;
  l.name = name;
  l.kind = LayerKind::kEmbedding;
  l.in = rows;
  l.out = columns;
  return l;
}

Layer norm(const std::string& name, std::int64_t features) {
  Layer l;
  l.name = name;
  l.kind = LayerKind::kNorm;
  l.in = features;
  return l;
}

// ---------------------------------------------------------------- mlp

Layers mlp_layers(const MlpSpec& m) {
  Layers out;
  std::int64_t in = m.input_size;
  for (std::size_t i = 0; i < m.hidden_sizes.size(); ++i) {
    out.push_back(linear("fc" + std::to_string(i), in, m.hidden_sizes[i], 1));
    in = m.hidden_sizes[i];
  }
  out.push_back(linear("fc" + std::to_string(m.hidden_sizes.size()), in, m.num_classes, 1));
  return out;
}

// ---------------------------------------------------------------- ResNet / ResNeXt (torchvision)

/// Output side of a square convolution or pooling.
std::int64_t conv_out(std::int64_t side, std::int64_t kernel, std::int64_t stride, std::int64_t padding) {
  return (side + 2 * padding - kernel) / stride + 1;
}

/// A bias-free convolution (torchvision's) at input side `side` with "same" padding
/// (kernel / 2); `side` becomes the output side.
Layer conv(const std::string& name, std::int64_t in, std::int64_t out, std::int64_t kernel, std::int64_t stride,
           std::int64_t groups, std::int64_t& side) {
  side = conv_out(side, kernel, stride, kernel / 2);
  Layer l;
  l.name = name;
  l.kind = LayerKind::kConv;
  l.in = in;
  l.out = out;
  l.kernel = kernel;
  l.stride = stride;
  l.groups = groups;
  l.positions = side * side;
  return l;
}

struct ResNetFamily {
  bool bottleneck = true;
  std::int64_t groups = 1;
  std::int64_t width_per_group = 64;
};

ResNetFamily resnet_family(const std::string& model) {
  if (model == "resnet18") return {false, 1, 64};
  if (model == "resnext50_32x4d") return {true, 32, 4};
  if (model == "resnext101_32x8d") return {true, 32, 8};
  return {true, 1, 64};
}

/// One residual block (torchvision's BasicBlock / Bottleneck) at input side `side`.
void residual_block(Layers& out, const std::string& p, const ResNetFamily& f, std::int64_t inplanes,
                    std::int64_t planes, std::int64_t stride, std::int64_t& side) {
  const std::int64_t in_side = side;
  const std::int64_t expansion = f.bottleneck ? 4 : 1;
  if (f.bottleneck) {
    const std::int64_t width = (planes * f.width_per_group / 64) * f.groups;
    out.push_back(conv(p + "conv1", inplanes, width, 1, 1, 1, side));
    out.push_back(norm(p + "bn1", width));
    out.push_back(conv(p + "conv2", width, width, 3, stride, f.groups, side));
    out.push_back(norm(p + "bn2", width));
    out.push_back(conv(p + "conv3", width, planes * expansion, 1, 1, 1, side));
    out.push_back(norm(p + "bn3", planes * expansion));
  } else {
    out.push_back(conv(p + "conv1", inplanes, planes, 3, stride, 1, side));
    out.push_back(norm(p + "bn1", planes));
    out.push_back(conv(p + "conv2", planes, planes, 3, 1, 1, side));
    out.push_back(norm(p + "bn2", planes));
  }
  if (stride != 1 || inplanes != planes * expansion) {
    std::int64_t ds_side = in_side;
    out.push_back(conv(p + "downsample.0", inplanes, planes * expansion, 1, stride, 1, ds_side));
    out.push_back(norm(p + "downsample.1", planes * expansion));
  }
}

Layers resnet_layers(const std::string& model, std::int64_t image_size) {
  const ResNetFamily f = resnet_family(model);
  const std::int64_t expansion = f.bottleneck ? 4 : 1;
  Layers out;
  std::int64_t side = image_size;
  out.push_back(conv("conv1", 3, 64, 7, 2, 1, side));
  out.push_back(norm("bn1", 64));
  side = conv_out(side, 3, 2, 1);  // max pool
  std::int64_t inplanes = 64;
  const std::vector<int>& depths = resnet_stage_depths(model);
  for (std::size_t stage = 0; stage < depths.size(); ++stage) {
    const std::int64_t planes = std::int64_t{64} << stage;
    for (int i = 0; i < depths[stage]; ++i) {
      const std::int64_t stride = (i == 0 && stage > 0) ? 2 : 1;
      const std::string p = "layer" + std::to_string(stage + 1) + "." + std::to_string(i) + ".";
      residual_block(out, p, f, inplanes, planes, stride, side);
      inplanes = planes * expansion;
    }
  }
  out.push_back(linear("fc", 512 * expansion, 1000, 1));
  return out;
}

// ---------------------------------------------------------------- transformers, mLSTM, HybridModel

/// One transformer layer (worker/models_lm.cpp TransformerLayer) over `seq` tokens.
void transformer_layer(Layers& out, const std::string& p, const TransformerShape& s, std::int64_t seq) {
  out.push_back(norm(p + "ln1", s.hidden));
  out.push_back(linear(p + "attn.qkv", s.hidden, 3LL * s.hidden, seq));
  Layer attention;
  attention.name = p + "attn";
  attention.kind = LayerKind::kAttention;
  attention.in = s.hidden;
  attention.heads = s.heads;
  attention.positions = seq;
  out.push_back(attention);
  out.push_back(linear(p + "attn.out", s.hidden, s.hidden, seq));
  out.push_back(norm(p + "ln2", s.hidden));
  out.push_back(linear(p + "fc_in", s.hidden, s.intermediate, seq));
  out.push_back(linear(p + "fc_out", s.intermediate, s.hidden, seq));
}

/// GPT2LMHeadModel: embeddings, layers, final LayerNorm, the LM head tied to the token embedding.
Layers gpt2_layers(const TransformerShape& s, std::int64_t seq) {
  Layers out{table("wte", s.vocab_size, s.hidden), table("wpe", s.max_positions, s.hidden)};
  for (int i = 0; i < s.layers; ++i) transformer_layer(out, "h." + std::to_string(i) + ".", s, seq);
  out.push_back(norm("ln_f", s.hidden));
  out.push_back(tied_linear("lm_head", s.hidden, s.vocab_size, seq, false));
  return out;
}

/// BertForPreTraining: embeddings, layers, pooler (first token), MLM transform and decoder (tied
/// to the word embedding, own bias) over every token, next-sentence classifier.
Layers bert_layers(const TransformerShape& s, std::int64_t seq) {
  Layers out{table("word_embeddings", s.vocab_size, s.hidden), table("position_embeddings", s.max_positions, s.hidden),
             table("token_type_embeddings", 2, s.hidden), norm("embeddings_ln", s.hidden)};
  for (int i = 0; i < s.layers; ++i) transformer_layer(out, "layer." + std::to_string(i) + ".", s, seq);
  out.push_back(linear("pooler", s.hidden, s.hidden, 1));
  out.push_back(linear("head.transform", s.hidden, s.hidden, seq));
  out.push_back(norm("head.transform_ln", s.hidden));
  out.push_back(tied_linear("head.decoder", s.hidden, s.vocab_size, seq, true));
  out.push_back(linear("head.seq_relationship", s.hidden, 2, 1));
  return out;
}

/// The multiplicative LSTM: its gate matmuls at every token, then the byte decoder.
Layers mlstm_layers(const MlstmSpec& m, std::int64_t seq) {
  const std::int64_t e = m.embedding_size;
  const std::int64_t h = m.hidden_size;
  return {table("embedding", 256, e),         linear("w_mx", e, h, seq, false),    linear("w_mh", h, h, seq, false),
          linear("w_x", e, 4 * h, seq, true), linear("w_m", h, 4 * h, seq, false), linear("decoder", h, 256, seq)};
}

/// HybridModel: EmbeddingBag tables (a bag's sum counts 0 FLOPs, as a lookup), then the Linears.
Layers hybrid_embedding_layers(const HybridEmbeddingSpec& h) {
  Layers out;
  for (int t = 0; t < h.num_tables; ++t)
    out.push_back(table("table" + std::to_string(t), h.num_embeddings, h.embedding_dim));
  std::int64_t in = static_cast<std::int64_t>(h.num_tables) * h.embedding_dim;
  for (std::size_t i = 0; i < h.dense_sizes.size(); ++i) {
    out.push_back(linear("dense.fc" + std::to_string(i), in, h.dense_sizes[i], 1));
    in = h.dense_sizes[i];
  }
  out.push_back(linear("dense.fc" + std::to_string(h.dense_sizes.size()), in, h.num_classes, 1));
  return out;
}

}  // namespace

std::int64_t layer_parameters(const Layer& l) {
  switch (l.kind) {
    case LayerKind::kLinear:
      return (l.tied ? 0 : l.in * l.out) + (l.bias ? l.out : 0);
    case LayerKind::kConv:
      return l.out * (l.in / l.groups) * l.kernel * l.kernel + (l.bias ? l.out : 0);
    case LayerKind::kEmbedding:
      return l.in * l.out;
    case LayerKind::kNorm:
      return 2 * l.in;
    case LayerKind::kAttention:
      return 0;
  }
  return 0;
}

double layer_macs(const Layer& l) {
  const GemmShape g = layer_gemm(l);
  const double product =
      static_cast<double>(g.m) * static_cast<double>(g.k) * static_cast<double>(g.n) * static_cast<double>(g.batch);
  // Attention: Q K^T and then probabilities x V, the same multiply-adds each.
  return l.kind == LayerKind::kAttention ? 2.0 * product : product;
}

GemmShape layer_gemm(const Layer& l) {
  switch (l.kind) {
    case LayerKind::kLinear:
      return {l.positions, l.in, l.out, 1};
    case LayerKind::kConv:
      return {l.positions, (l.in / l.groups) * l.kernel * l.kernel, l.out / l.groups, l.groups};
    case LayerKind::kAttention:
      return {l.positions, l.heads > 0 ? l.in / l.heads : l.in, l.positions, l.heads > 0 ? l.heads : 1};
    case LayerKind::kEmbedding:
    case LayerKind::kNorm:
      break;
  }
  return {0, 0, 0, 1};
}

std::vector<Layer> model_layers(const RunConfig& c) {
  const std::string& m = c.model;
  if (m == "mlp") return mlp_layers(c.mlp);
  if (m == "gpt2-small") return gpt2_layers(resolve_transformer(m, c.transformer), c.sequence_length);
  if (m == "bert-base") return bert_layers(resolve_transformer(m, c.transformer), c.sequence_length);
  if (m == "mlstm") return mlstm_layers(c.mlstm, c.sequence_length);
  if (m == "hybrid-embedding") return hybrid_embedding_layers(c.hybrid_embedding);
  if (!resnet_stage_depths(m).empty()) return resnet_layers(m, c.image_size);
  return {};
}

std::int64_t total_parameters(const std::vector<Layer>& layers) {
  std::int64_t n = 0;
  for (const Layer& l : layers) n += layer_parameters(l);
  return n;
}

double forward_macs_per_example(const std::vector<Layer>& layers) {
  double macs = 0;
  for (const Layer& l : layers) macs += layer_macs(l);
  return macs;
}

double forward_flops_per_example(const std::vector<Layer>& layers) { return 2.0 * forward_macs_per_example(layers); }

double training_flops_per_example(const std::vector<Layer>& layers) { return 3.0 * forward_flops_per_example(layers); }

std::optional<GemmShape> dominant_gemm(const std::vector<Layer>& layers, std::int64_t batch) {
  // Key: the shape and whether more examples add products (attention: per example and head)
  // or rows (linear and conv: the examples' positions stacked).
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, bool>, double> by_shape;
  for (const Layer& l : layers) {
    const GemmShape g = layer_gemm(l);
    if (g.m > 0) by_shape[{g.m, g.k, g.n, g.batch, l.kind == LayerKind::kAttention}] += layer_macs(l);
  }
  std::optional<GemmShape> best;
  double best_macs = 0;
  for (const auto& [key, macs] : by_shape) {
    if (macs <= best_macs) continue;
    best_macs = macs;
    const auto [m, k, n, products, per_example] = key;
    best = per_example ? GemmShape{m, k, n, products * batch} : GemmShape{m * batch, k, n, products};
  }
  return best;
}

bool conv_dominated(const std::vector<Layer>& layers) {
  double conv = 0;
  for (const Layer& l : layers) {
    if (l.kind == LayerKind::kConv) conv += layer_macs(l);
  }
  return conv > 0.5 * forward_macs_per_example(layers);
}

}  // namespace trainbench
