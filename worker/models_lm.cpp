#include "worker/models_lm.hpp"

#include <ATen/ATen.h>
#include <torch/version.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/spec/model_sizes.hpp"
#include "worker/worker_error.hpp"

namespace trainbench::worker {
namespace {

namespace nn = torch::nn;
namespace F = torch::nn::functional;

constexpr double kInitStd = 0.02;  // BERT's and GPT-2's initializer_range
constexpr double kDefaultDropout = 0.1;  // BERT's and GPT-2's hidden/attention dropout

/// A transformer's shape and its dropout probability: 0.1, or 0 under the test option
/// RunConfig::test.no_dropout (tests comparing a split model with the unsplit one: the stages
/// draw their masks from their own generators).
struct LmShape : TransformerShape {
  double dropout = kDefaultDropout;
  bool fused_attention = false;  ///< at::scaled_dot_product_attention rather than matmul-softmax-matmul
};

constexpr std::int64_t kIgnoreIndex = -100;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void check_positive(const std::string& what, std::int64_t v) {
  if (v < 1) throw ConfigError(what + " must be >= 1, got " + std::to_string(v));
}

/// Initialisation of BERT and GPT-2 (Hugging Face's _init_weights): Linear and Embedding
/// weights N(0, 0.02), biases 0, LayerNorm 1 / 0.
void init_transformer_weights(nn::Module& root) {
  torch::NoGradGuard no_grad;
  for (auto& m : root.modules(/*include_self=*/false)) {
    if (auto* lin = m->as<nn::Linear>()) {
      lin->weight.normal_(0.0, kInitStd);
      if (lin->bias.defined()) lin->bias.zero_();
    } else if (auto* emb = m->as<nn::Embedding>()) {
      emb->weight.normal_(0.0, kInitStd);
    } else if (auto* ln = m->as<nn::LayerNorm>()) {
      ln->weight.fill_(1.0);
      ln->bias.zero_();
    }
  }
}

/// LayerNorm in its parameters' dtype: CPU autocast in libtorch 1.13 leaves layer_norm alone, and
/// a bfloat16 input with fp32 weights fails ("expected scalar type BFloat16 but found Float");
/// CUDA autocast runs layer_norm in fp32 anyway.
torch::Tensor layer_norm(nn::LayerNorm& ln, const torch::Tensor& x) {
  return ln->forward(x.scalar_type() == ln->weight.scalar_type() ? x : x.to(ln->weight.scalar_type()));
}

/// Multi-head self-attention with a fused q/k/v projection (GPT-2's c_attn; BERT's separate
/// query/key/value Linear layers hold the same 3 x (h*h + h) parameters) and an output projection.
class SelfAttention : public nn::Module {
 public:
  SelfAttention(std::int64_t hidden, std::int64_t heads, bool causal, double dropout, bool fused)
      : heads_(heads), head_dim_(hidden / heads), causal_(causal), fused_(fused), dropout_(dropout) {
    qkv_ = register_module("qkv", nn::Linear(hidden, 3 * hidden));
    out_ = register_module("out", nn::Linear(hidden, hidden));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    const std::int64_t b = x.size(0);
    const std::int64_t s = x.size(1);
    const std::int64_t h = x.size(2);
    // [B, S, 3, heads, d] -> [3, B, heads, S, d]
    torch::Tensor qkv = qkv_->forward(x).view({b, s, 3, heads_, head_dim_}).permute({2, 0, 3, 1, 4});
    torch::Tensor q = qkv[0];
    torch::Tensor k = qkv[1];
    torch::Tensor v = qkv[2];
    torch::Tensor ctx = (fused_ ? fused(q, k, v) : eager(q, k, v)).transpose(1, 2).reshape({b, s, h});
    return out_->forward(ctx);
  }

 private:
  /// q, k, v [B, heads, S, d] -> [B, heads, S, d]: one fused kernel (flash or memory-efficient
  /// attention on CUDA, a fused CPU kernel), the same maths as eager() with its default scale
  /// 1/sqrt(d), the causal mask and the attention dropout.
  torch::Tensor fused(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) const {
    return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, is_training() ? dropout_ : 0.0, causal_);
  }

  torch::Tensor eager(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) const {
    const std::int64_t s = q.size(2);
    torch::Tensor scores = torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(head_dim_)));
    if (causal_) {
      torch::Tensor mask = torch::ones({s, s}, torch::TensorOptions().dtype(torch::kBool).device(q.device())).triu(1);
      scores = scores.masked_fill(mask, -std::numeric_limits<float>::infinity());
    }
    // Softmax in fp32 (what autocast does on CUDA), back to the scores' dtype for the matmul.
    torch::Tensor probs = torch::softmax(scores, -1, torch::kFloat).to(scores.scalar_type());
    probs = F::dropout(probs, F::DropoutFuncOptions().p(dropout_).training(is_training()));
    return torch::matmul(probs, v);
  }

  std::int64_t heads_;
  std::int64_t head_dim_;
  bool causal_;
  bool fused_;
  double dropout_;
  nn::Linear qkv_{nullptr}, out_{nullptr};
};

/// One transformer layer. BERT: post-LayerNorm, exact GELU; GPT-2: pre-LayerNorm, tanh GELU.
class TransformerLayer : public nn::Module {
 public:
  TransformerLayer(const LmShape& s, bool gpt2, double eps) : gpt2_(gpt2), dropout_(s.dropout) {
    attn_ =
        register_module("attn", std::make_shared<SelfAttention>(s.hidden, s.heads, gpt2, s.dropout, s.fused_attention));
    ln1_ = register_module("ln1", nn::LayerNorm(nn::LayerNormOptions({s.hidden}).eps(eps)));
    fc_in_ = register_module("fc_in", nn::Linear(s.hidden, s.intermediate));
    fc_out_ = register_module("fc_out", nn::Linear(s.intermediate, s.hidden));
    ln2_ = register_module("ln2", nn::LayerNorm(nn::LayerNormOptions({s.hidden}).eps(eps)));
  }

  torch::Tensor forward(torch::Tensor x) {
    auto drop = [this](const torch::Tensor& t) {
      return F::dropout(t, F::DropoutFuncOptions().p(dropout_).training(is_training()));
    };
    if (gpt2_) {
      x = x + drop(attn_->forward(layer_norm(ln1_, x)));
      return x + drop(fc_out_->forward(torch::gelu(fc_in_->forward(layer_norm(ln2_, x)), "tanh")));
    }
    x = layer_norm(ln1_, x + drop(attn_->forward(x)));
    return layer_norm(ln2_, x + drop(fc_out_->forward(torch::gelu(fc_in_->forward(x)))));
  }

 private:
  bool gpt2_;
  double dropout_;
  std::shared_ptr<SelfAttention> attn_;
  nn::LayerNorm ln1_{nullptr}, ln2_{nullptr};
  nn::Linear fc_in_{nullptr}, fc_out_{nullptr};
};

LmShape checked_shape(const std::string& model, const RunConfig& c) {
  LmShape s;
  static_cast<TransformerShape&>(s) = resolve_transformer(model, c.transformer);
  if (c.test.no_dropout) s.dropout = 0;
  s.fused_attention = resolve_attention(c.transformer.attention) == Attention::kFused;
  check_positive(model + ": transformer.layers", s.layers);
  check_positive(model + ": transformer.hidden", s.hidden);
  check_positive(model + ": transformer.heads", s.heads);
  check_positive(model + ": transformer.intermediate", s.intermediate);
  check_positive(model + ": transformer.vocabSize", s.vocab_size);
  check_positive(model + ": transformer.maxPositions", s.max_positions);
  check_positive(model + ": sequenceLength", c.sequence_length);
  if (s.hidden % s.heads != 0) {
    throw ConfigError(model + ": transformer.hidden " + std::to_string(s.hidden) + " is not a multiple of heads " +
                      std::to_string(s.heads));
  }
  if (c.sequence_length > s.max_positions) {
    throw ConfigError(model + ": sequenceLength " + std::to_string(c.sequence_length) + " exceeds maxPositions " +
                      std::to_string(s.max_positions));
  }
  return s;
}

/// Random token sequences of length `len` in [0, vocab).
torch::Tensor random_tokens(std::int64_t batch, std::int64_t len, std::int64_t vocab, at::Generator& gen) {
  return at::randint(0, vocab, {batch, len}, gen, at::TensorOptions().dtype(at::kLong));
}

/// Next-token batch: inputs tokens[:, :-1], targets tokens[:, 1:].
SyntheticBatch next_token_batch(std::int64_t batch, std::int64_t len, std::int64_t vocab, at::Generator& gen) {
  torch::Tensor tokens = random_tokens(batch, len + 1, vocab, gen);
  return {tokens.slice(1, 0, len).contiguous(), tokens.slice(1, 1, len + 1).contiguous()};
}

torch::Tensor token_loss(const torch::Tensor& logits, const torch::Tensor& targets) {
  // Loss in fp32 whatever the autocast dtype of the logits.
  return F::cross_entropy(logits.reshape({-1, logits.size(-1)}).to(torch::kFloat), targets.reshape({-1}),
                          F::CrossEntropyFuncOptions().ignore_index(kIgnoreIndex));
}

// ---------------------------------------------------------------- GPT-2

/// GPT-2 (Radford et al. 2019, Hugging Face's GPT2LMHeadModel): token + position embeddings,
/// pre-LN layers, final LayerNorm, LM head tied to the token embedding (no bias).
/// gpt2-small: 124,439,808 parameters.
class Gpt2 : public BenchModel {
 public:
  Gpt2(const LmShape& s, std::int64_t seq_len) : shape_(s), seq_len_(seq_len) {
    wte_ = register_module("wte", nn::Embedding(s.vocab_size, s.hidden));
    wpe_ = register_module("wpe", nn::Embedding(s.max_positions, s.hidden));
    layers_ = register_module("h", nn::ModuleList());
    for (int i = 0; i < s.layers; ++i) layers_->push_back(std::make_shared<TransformerLayer>(s, true, 1e-5));
    ln_f_ = register_module("ln_f", nn::LayerNorm(nn::LayerNormOptions({s.hidden}).eps(1e-5)));
    init_transformer_weights(*this);
    // GPT-2: residual projections scaled by 1/sqrt(2 * layers).
    torch::NoGradGuard no_grad;
    for (const auto& kv : named_parameters()) {
      if (ends_with(kv.key(), ".attn.out.weight") || ends_with(kv.key(), ".fc_out.weight")) {
        kv.value().normal_(0.0, kInitStd / std::sqrt(2.0 * s.layers));
      }
    }
  }

  torch::Tensor forward(torch::Tensor ids) override {
    torch::Tensor x = embed(ids);
    for (const auto& layer : *layers_) x = layer->as<TransformerLayer>()->forward(x);
    return head(x);
  }
  /// Pipeline blocks: the embeddings, each layer, the head (final LayerNorm and the LM head,
  /// which is the token embedding: that weight is tied across the first and the last block).
  std::vector<ModelBlock> blocks() override {
    std::vector<ModelBlock> out;
    out.push_back({"embeddings", {wte_.ptr(), wpe_.ptr()}, [this](torch::Tensor ids) { return embed(ids); }});
    for (std::size_t i = 0; i < layers_->size(); ++i) {
      std::shared_ptr<nn::Module> layer = layers_->ptr(i);
      out.push_back({"h." + std::to_string(i), {layer},
                     [layer](torch::Tensor x) { return layer->as<TransformerLayer>()->forward(x); }});
    }
    out.push_back({"head", {ln_f_.ptr(), wte_.ptr()}, [this](torch::Tensor x) { return head(x); }});
    return out;
  }
  torch::Tensor output_loss(const torch::Tensor& output, const torch::Tensor& targets) override {
    return token_loss(output, targets);
  }
  at::ScalarType input_dtype() const override { return at::kLong; }
  torch::Tensor loss(const torch::Tensor& inputs, const torch::Tensor& targets) override {
    return token_loss(forward(inputs), targets);
  }
  std::vector<std::int64_t> example_shape() const override { return {seq_len_}; }
  std::int64_t num_classes() const override { return shape_.vocab_size; }
  SyntheticBatch synthetic_batch(std::int64_t batch, at::Generator& gen) const override {
    return next_token_batch(batch, seq_len_, shape_.vocab_size, gen);
  }

 private:
  torch::Tensor embed(const torch::Tensor& ids) {
    torch::Tensor pos = torch::arange(ids.size(1), torch::TensorOptions().dtype(torch::kLong).device(ids.device()));
    torch::Tensor x = wte_->forward(ids) + wpe_->forward(pos).unsqueeze(0);
    return F::dropout(x, F::DropoutFuncOptions().p(shape_.dropout).training(is_training()));
  }
  torch::Tensor head(const torch::Tensor& x) { return F::linear(layer_norm(ln_f_, x), wte_->weight); }  // tied

  LmShape shape_;
  std::int64_t seq_len_;
  nn::Embedding wte_{nullptr}, wpe_{nullptr};
  nn::ModuleList layers_{nullptr};
  nn::LayerNorm ln_f_{nullptr};
};

// ---------------------------------------------------------------- BERT

/// BERT's encoder with its pooler (Hugging Face's BertModel): word + position + token-type
/// embeddings, LayerNorm (eps 1e-12), post-LN layers, pooler tanh(Linear) on the first token.
/// bert-base: 109,482,240 parameters.
class BertEncoder : public nn::Module {
 public:
  explicit BertEncoder(const LmShape& s) : dropout_(s.dropout) {
    word_ = register_module("word_embeddings", nn::Embedding(s.vocab_size, s.hidden));
    position_ = register_module("position_embeddings", nn::Embedding(s.max_positions, s.hidden));
    token_type_ = register_module("token_type_embeddings", nn::Embedding(2, s.hidden));
    ln_ = register_module("embeddings_ln", nn::LayerNorm(nn::LayerNormOptions({s.hidden}).eps(1e-12)));
    layers_ = register_module("layer", nn::ModuleList());
    for (int i = 0; i < s.layers; ++i) layers_->push_back(std::make_shared<TransformerLayer>(s, false, 1e-12));
    pooler_ = register_module("pooler", nn::Linear(s.hidden, s.hidden));
  }

  /// ids [B, S] -> (sequence output [B, S, h], pooled output [B, h]). Token types: the first
  /// half of each sequence is segment A, the rest segment B.
  std::pair<torch::Tensor, torch::Tensor> forward(const torch::Tensor& ids) {
    torch::Tensor x = embed(ids);
    for (const auto& layer : *layers_) x = layer->as<TransformerLayer>()->forward(x);
    return {x, pool(x)};
  }
  /// ids [B, S] -> the embeddings' output [B, S, h].
  torch::Tensor embed(const torch::Tensor& ids) {
    const std::int64_t s = ids.size(1);
    auto opts = torch::TensorOptions().dtype(torch::kLong).device(ids.device());
    torch::Tensor pos = torch::arange(s, opts);
    torch::Tensor types = (pos >= (s + 1) / 2).to(torch::kLong);
    torch::Tensor x = word_->forward(ids) + (position_->forward(pos) + token_type_->forward(types)).unsqueeze(0);
    return F::dropout(layer_norm(ln_, x), F::DropoutFuncOptions().p(dropout_).training(is_training()));
  }
  /// The pooler: tanh(Linear) of the first token.
  torch::Tensor pool(const torch::Tensor& sequence) { return torch::tanh(pooler_->forward(sequence.select(1, 0))); }
  const torch::Tensor& word_embeddings() const { return word_->weight; }
  std::vector<std::shared_ptr<nn::Module>> embedding_modules() const {
    return {word_.ptr(), position_.ptr(), token_type_.ptr(), ln_.ptr()};
  }
  std::shared_ptr<nn::Module> word_module() const { return word_.ptr(); }
  std::shared_ptr<nn::Module> pooler_module() const { return pooler_.ptr(); }
  const nn::ModuleList& layers() const { return layers_; }

 private:
  double dropout_;
  nn::Embedding word_{nullptr}, position_{nullptr}, token_type_{nullptr};
  nn::LayerNorm ln_{nullptr};
  nn::ModuleList layers_{nullptr};
  nn::Linear pooler_{nullptr};
};

/// BERT's pre-training heads (BertPreTrainingHeads): the MLM transform (Linear, GELU,
/// LayerNorm), a decoder tied to the word embeddings plus its own bias, and the next-sentence
/// classifier on the pooled output. bert-base: 622,650 + 1,538 = 624,188 parameters.
class BertHeads : public nn::Module {
 public:
  explicit BertHeads(const TransformerShape& s) {
    transform_ = register_module("transform", nn::Linear(s.hidden, s.hidden));
    ln_ = register_module("transform_ln", nn::LayerNorm(nn::LayerNormOptions({s.hidden}).eps(1e-12)));
    decoder_bias_ = register_parameter("decoder_bias", torch::zeros({s.vocab_size}));
    nsp_ = register_module("seq_relationship", nn::Linear(s.hidden, 2));
  }
  torch::Tensor mlm_logits(const torch::Tensor& sequence, const torch::Tensor& word_embeddings) {
    torch::Tensor h = layer_norm(ln_, torch::gelu(transform_->forward(sequence)));
    return F::linear(h, word_embeddings, decoder_bias_);
  }
  torch::Tensor nsp_logits(const torch::Tensor& pooled) { return nsp_->forward(pooled); }

 private:
  nn::Linear transform_{nullptr}, nsp_{nullptr};
  nn::LayerNorm ln_{nullptr};
  torch::Tensor decoder_bias_;
};

/// BertForPreTraining: encoder ("bert") + heads ("head"); loss = masked LM + next sentence.
class Bert : public BenchModel {
 public:
  Bert(const LmShape& s, std::int64_t seq_len) : shape_(s), seq_len_(seq_len) {
    if (seq_len < 2) throw ConfigError("bert-base: sequenceLength must be >= 2 (two segments)");
    bert_ = register_module("bert", std::make_shared<BertEncoder>(s));
    head_ = register_module("head", std::make_shared<BertHeads>(s));
    init_transformer_weights(*this);
  }

  torch::Tensor forward(torch::Tensor ids) override {
    auto [sequence, pooled] = bert_->forward(ids);
    (void)pooled;
    return head_->mlm_logits(sequence, bert_->word_embeddings());
  }
  torch::Tensor loss(const torch::Tensor& inputs, const torch::Tensor& targets) override {
    auto [sequence, pooled] = bert_->forward(inputs);
    torch::Tensor mlm = head_->mlm_logits(sequence, bert_->word_embeddings());
    torch::Tensor mlm_targets = targets.slice(1, 0, seq_len_);
    torch::Tensor nsp_targets = targets.select(1, seq_len_);
    return token_loss(mlm, mlm_targets) +
           F::cross_entropy(head_->nsp_logits(pooled).to(torch::kFloat), nsp_targets);
  }
  /// Pipeline blocks: the embeddings, each layer, then the pooler and both heads, whose MLM
  /// decoder is the word embedding (tied across the first and the last block). The last block's
  /// output packs both heads' logits per example: [B, S x vocab + 2] (output_loss unpacks it).
  std::vector<ModelBlock> blocks() override {
    std::vector<ModelBlock> out;
    out.push_back({"embeddings", bert_->embedding_modules(), [this](torch::Tensor ids) { return bert_->embed(ids); }});
    for (std::size_t i = 0; i < bert_->layers()->size(); ++i) {
      std::shared_ptr<nn::Module> layer = bert_->layers()->ptr(i);
      out.push_back({"layer." + std::to_string(i), {layer},
                     [layer](torch::Tensor x) { return layer->as<TransformerLayer>()->forward(x); }});
    }
    out.push_back({"heads", {bert_->pooler_module(), head_, bert_->word_module()}, [this](torch::Tensor x) {
                     torch::Tensor mlm = head_->mlm_logits(x, bert_->word_embeddings());
                     torch::Tensor nsp = head_->nsp_logits(bert_->pool(x));
                     return torch::cat({mlm.reshape({x.size(0), -1}), nsp.to(mlm.scalar_type())}, 1);
                   }});
    return out;
  }
  torch::Tensor output_loss(const torch::Tensor& output, const torch::Tensor& targets) override {
    const std::int64_t tokens = seq_len_ * shape_.vocab_size;
    torch::Tensor mlm = output.narrow(1, 0, tokens).reshape({output.size(0), seq_len_, shape_.vocab_size});
    return token_loss(mlm, targets.slice(1, 0, seq_len_)) +
           F::cross_entropy(output.narrow(1, tokens, 2).to(torch::kFloat), targets.select(1, seq_len_));
  }
  at::ScalarType input_dtype() const override { return at::kLong; }
  std::vector<std::int64_t> example_shape() const override { return {seq_len_}; }
  std::int64_t num_classes() const override { return shape_.vocab_size; }
  SyntheticBatch synthetic_batch(std::int64_t batch, at::Generator& gen) const override {
    torch::Tensor tokens = random_tokens(batch, seq_len_, shape_.vocab_size, gen);
    torch::Tensor masked = at::rand({batch, seq_len_}, gen) < 0.15;
    const std::int64_t mask_id = shape_.vocab_size > 103 ? 103 : shape_.vocab_size - 1;  // [MASK]
    torch::Tensor nsp = at::randint(0, 2, {batch, 1}, gen, at::TensorOptions().dtype(at::kLong));
    SyntheticBatch b;
    b.inputs = torch::where(masked, torch::full_like(tokens, mask_id), tokens);
    b.targets = torch::cat({torch::where(masked, tokens, torch::full_like(tokens, kIgnoreIndex)), nsp}, 1);
    return b;
  }

 private:
  TransformerShape shape_;
  std::int64_t seq_len_;
  std::shared_ptr<BertEncoder> bert_;
  std::shared_ptr<BertHeads> head_;
};

// ---------------------------------------------------------------- mLSTM

/// The multiplicative LSTM (Krause et al. 2016) of NVIDIA's sentiment-discovery, byte-level:
///   m_t = (W_mx x_t) * (W_mh h_{t-1});  [i f o u] = W_x x_t + W_m m_t + b;
///   c_t = sigmoid(f) * c_{t-1} + sigmoid(i) * tanh(u);  h_t = sigmoid(o) * tanh(c_t)
/// then a Linear decoder to the 256 bytes. Parameters (E = embeddingSize, H = hiddenSize):
///   256 E + H E + H^2 + 4 H E + 4 H^2 + 4 H + 256 H + 256.
class Mlstm : public BenchModel {
 public:
  static constexpr std::int64_t kVocab = 256;
  Mlstm(std::int64_t hidden, std::int64_t embedding, std::int64_t seq_len) : hidden_(hidden), seq_len_(seq_len) {
    embed_ = register_module("embedding", nn::Embedding(kVocab, embedding));
    w_mx_ = register_module("w_mx", nn::Linear(nn::LinearOptions(embedding, hidden).bias(false)));
    w_mh_ = register_module("w_mh", nn::Linear(nn::LinearOptions(hidden, hidden).bias(false)));
    w_x_ = register_module("w_x", nn::Linear(nn::LinearOptions(embedding, 4 * hidden).bias(true)));
    w_m_ = register_module("w_m", nn::Linear(nn::LinearOptions(hidden, 4 * hidden).bias(false)));
    decoder_ = register_module("decoder", nn::Linear(hidden, kVocab));
  }

  torch::Tensor forward(torch::Tensor ids) override { return decoder_->forward(recurrence(embed_->forward(ids))); }
  /// Pipeline blocks: the embedding, the multiplicative LSTM, the decoder.
  std::vector<ModelBlock> blocks() override {
    auto embed = embed_.ptr();
    auto decoder = decoder_.ptr();
    return {{"embedding", {embed}, [embed](torch::Tensor ids) { return embed->forward(ids); }},
            {"mlstm",
             {w_mx_.ptr(), w_mh_.ptr(), w_x_.ptr(), w_m_.ptr()},
             [this](torch::Tensor emb) { return recurrence(emb); }},
            {"decoder", {decoder}, [decoder](torch::Tensor h) { return decoder->forward(h); }}};
  }
  torch::Tensor output_loss(const torch::Tensor& output, const torch::Tensor& targets) override {
    return token_loss(output, targets);
  }
  at::ScalarType input_dtype() const override { return at::kLong; }

  /// emb [B, S, E] -> hidden states [B, S, H].
  torch::Tensor recurrence(const torch::Tensor& emb) {
    const std::int64_t b = emb.size(0);
    const std::int64_t s = emb.size(1);
    // The input projections of all steps at once; the recurrence step by step.
    torch::Tensor mx_all = w_mx_->forward(emb);  // [B, S, H]
    torch::Tensor gx_all = w_x_->forward(emb);   // [B, S, 4H]
    torch::Tensor h = torch::zeros({b, hidden_}, mx_all.options());
    torch::Tensor c = torch::zeros({b, hidden_}, torch::TensorOptions().dtype(torch::kFloat).device(emb.device()));
    std::vector<torch::Tensor> outputs;
    outputs.reserve(static_cast<std::size_t>(s));
    for (std::int64_t t = 0; t < s; ++t) {
      torch::Tensor m = mx_all.select(1, t) * w_mh_->forward(h);
      torch::Tensor gates = gx_all.select(1, t) + w_m_->forward(m);
      auto g = gates.chunk(4, 1);
      c = torch::sigmoid(g[1]) * c + torch::sigmoid(g[0]) * torch::tanh(g[3]);
      h = torch::sigmoid(g[2]) * torch::tanh(c);
      outputs.push_back(h);
    }
    return torch::stack(outputs, 1);
  }
  torch::Tensor loss(const torch::Tensor& inputs, const torch::Tensor& targets) override {
    return token_loss(forward(inputs), targets);
  }
  std::vector<std::int64_t> example_shape() const override { return {seq_len_}; }
  std::int64_t num_classes() const override { return kVocab; }
  SyntheticBatch synthetic_batch(std::int64_t batch, at::Generator& gen) const override {
    return next_token_batch(batch, seq_len_, kVocab, gen);
  }

 private:
  std::int64_t hidden_;
  std::int64_t seq_len_;
  nn::Embedding embed_{nullptr};
  nn::Linear w_mx_{nullptr}, w_mh_{nullptr}, w_x_{nullptr}, w_m_{nullptr}, decoder_{nullptr};
};

}  // namespace

// ---------------------------------------------------------------- HybridModel

HybridEmbeddingModel::HybridEmbeddingModel(const HybridEmbeddingSpec& spec) : spec_(spec) {
  check_positive("hybrid-embedding: numTables", spec.num_tables);
  check_positive("hybrid-embedding: numEmbeddings", spec.num_embeddings);
  check_positive("hybrid-embedding: embeddingDim", spec.embedding_dim);
  check_positive("hybrid-embedding: bagSize", spec.bag_size);
  if (spec.num_classes < 2) throw ConfigError("hybrid-embedding: numClasses must be >= 2");
  auto sparse = register_module("sparse", nn::ModuleList());
  for (int t = 0; t < spec.num_tables; ++t) {
    nn::EmbeddingBag table(nn::EmbeddingBagOptions(spec.num_embeddings, spec.embedding_dim).mode(torch::kSum));
    sparse->push_back(table);
    tables_.push_back(table);
  }
  // The seed: Sequential(fc1, fc2, relu, fc3, fc4, fc5) with 512-256-128-64-32-8.
  dense_ = register_module("dense", nn::Sequential());
  std::int64_t in = static_cast<std::int64_t>(spec.num_tables) * spec.embedding_dim;
  for (std::size_t i = 0; i < spec.dense_sizes.size(); ++i) {
    check_positive("hybrid-embedding: denseSizes[" + std::to_string(i) + "]", spec.dense_sizes[i]);
    dense_->push_back(nn::Linear(in, spec.dense_sizes[i]));
    if (i == 1) dense_->push_back(nn::ReLU());
    in = spec.dense_sizes[i];
  }
  dense_->push_back(nn::Linear(in, spec.num_classes));
}

torch::Tensor HybridEmbeddingModel::lookup(std::size_t table, const torch::Tensor& ids) {
  return tables_.at(table)->forward(ids);
}

torch::Tensor HybridEmbeddingModel::sparse_forward(const torch::Tensor& ids) {
  std::vector<torch::Tensor> parts;
  parts.reserve(tables_.size());
  for (std::size_t t = 0; t < tables_.size(); ++t) {
    parts.push_back(lookup(t, ids.select(1, static_cast<std::int64_t>(t))));
  }
  return torch::cat(parts, 1);
}

torch::Tensor HybridEmbeddingModel::dense_forward(const torch::Tensor& features) { return dense_->forward(features); }

torch::Tensor HybridEmbeddingModel::forward(torch::Tensor ids) { return dense_forward(sparse_forward(ids)); }

std::vector<ModelBlock> HybridEmbeddingModel::blocks() {
  std::vector<ModelBlock> out;
  std::vector<std::shared_ptr<nn::Module>> tables;
  for (const auto& t : tables_) tables.push_back(t.ptr());
  out.push_back({"sparse", tables, [this](torch::Tensor ids) { return sparse_forward(ids); }});
  // One block per Linear of the dense part, the ReLU that follows one inside its block.
  const std::size_t n = dense_->size();
  for (std::size_t i = 0; i < n; ++i) {
    auto linear = std::dynamic_pointer_cast<nn::LinearImpl>(dense_->ptr(i));
    if (!linear) continue;
    const bool relu = i + 1 < n && std::dynamic_pointer_cast<nn::ReLUImpl>(dense_->ptr(i + 1)) != nullptr;
    out.push_back({"dense." + std::to_string(i), {linear}, [linear, relu](torch::Tensor x) {
                     x = linear->forward(x);
                     return relu ? torch::relu(x) : x;
                   }});
  }
  return out;
}

SyntheticBatch HybridEmbeddingModel::synthetic_batch(std::int64_t batch, at::Generator& gen) const {
  SyntheticBatch b;
  b.inputs = at::randint(0, spec_.num_embeddings, {batch, spec_.num_tables, spec_.bag_size}, gen,
                         at::TensorOptions().dtype(at::kLong));
  b.targets = at::randint(0, spec_.num_classes, {batch}, gen, at::TensorOptions().dtype(at::kLong));
  return b;
}

Attention resolve_attention(Attention requested) {
  return requested == Attention::kEager ? Attention::kEager : Attention::kFused;
}

std::shared_ptr<BenchModel> build_sequence_model(const std::string& name, const RunConfig& config) {
  if (name == "gpt2-small") return std::make_shared<Gpt2>(checked_shape(name, config), config.sequence_length);
  if (name == "bert-base") return std::make_shared<Bert>(checked_shape(name, config), config.sequence_length);
  if (name == "mlstm") {
    check_positive("mlstm: mlstm.hiddenSize", config.mlstm.hidden_size);
    check_positive("mlstm: mlstm.embeddingSize", config.mlstm.embedding_size);
    check_positive("mlstm: sequenceLength", config.sequence_length);
    return std::make_shared<Mlstm>(config.mlstm.hidden_size, config.mlstm.embedding_size, config.sequence_length);
  }
  if (name == "hybrid-embedding") return std::make_shared<HybridEmbeddingModel>(config.hybrid_embedding);
  return nullptr;
}

}  // namespace trainbench::worker
