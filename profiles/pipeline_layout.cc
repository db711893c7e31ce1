// PipelineLayout: Megatron's layout grammar both ways, and the split rules of each way to give one.
#include <pipelab/profiles/pipeline_layout.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <optional>

#include <pipelab/base/error.h>
#include <pipelab/profiles/flops.h>
#include <pipelab/profiles/model_spec.h>
#include <pipelab/profiles/parallel_config.h>

namespace pipelab {

namespace {

std::string str(std::int64_t v) { return std::to_string(v); }

char symbol(LayerKind k) {
  switch (k) {
    case LayerKind::Embedding: return 'E';
    case LayerKind::Decoder: return 't';
    case LayerKind::Mtp: return 'm';
    case LayerKind::Loss: return 'L';
  }
  return '?';
}

// Recursive descent over the text with its columns: items := (symbol ['*' N] | '(' items ')' '*' N | ',')*.
// Expands into the flat symbol string (with '|' between stages).
class LayoutParser {
 public:
  explicit LayoutParser(std::string_view text) : text_(text) {}

  Result<std::string> parse() {
    std::string out;
    if (auto err = items(out, /*in_group=*/false)) return *err;
    return out;
  }

 private:
  static constexpr std::size_t kMaxExpanded = 1u << 20;  // symbols: far beyond any model's layers

  std::optional<ParseError> fail(std::string message) const {
    return ParseError{std::move(message), 1, static_cast<int>(pos_) + 1};
  }

  // A repeat count after '*': one or more digits, at least 1.
  std::optional<ParseError> count(std::size_t& n) {
    if (pos_ >= text_.size() || text_[pos_] != '*') return fail("expected '*N' after ')'");
    ++pos_;
    const std::size_t start = pos_;
    n = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      n = n * 10 + static_cast<std::size_t>(text_[pos_] - '0');
      if (n > kMaxExpanded) return fail("repeat count too large");
      ++pos_;
    }
    if (pos_ == start) return fail("expected a number after '*'");
    if (n == 0) {
      pos_ = start;
      return fail("a repeat count must be at least 1");
    }
    return std::nullopt;
  }

  std::optional<ParseError> items(std::string& out, bool in_group) {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == ',') {
        ++pos_;  // cosmetic, as in Megatron
      } else if (c == ')') {
        if (!in_group) return fail("')' without a matching '('");
        return std::nullopt;
      } else if (c == '(') {
        if (in_group) return fail("nested parentheses are not part of Megatron's layout grammar");
        ++pos_;
        std::string group;
        if (auto err = items(group, true)) return err;
        if (pos_ >= text_.size()) return fail("'(' without a matching ')'");
        ++pos_;  // ')'
        std::size_t n = 0;
        if (auto err = count(n)) return err;
        if (group.size() * n + out.size() > kMaxExpanded) return fail("the layout expands to too many symbols");
        for (std::size_t i = 0; i < n; ++i) out += group;
      } else if (c == 'E' || c == 't' || c == 'm' || c == 'L' || c == '|') {
        ++pos_;
        std::size_t n = 1;
        if (pos_ < text_.size() && text_[pos_] == '*') {
          if (auto err = count(n)) return err;
        }
        if (n + out.size() > kMaxExpanded) return fail("the layout expands to too many symbols");
        out.append(n, c);
      } else {
        return fail(std::string("unexpected '") + c + "': a layout holds E (embedding), t (decoder), m (MTP), L (loss), '|' "
                    "between stages, 'X*N' and '(...)*N' repeats and commas");
      }
    }
    if (in_group) return fail("'(' without a matching ')'");
    return std::nullopt;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

// Decoder layers per stage from Megatron's --decoder-first/last-pipeline-num-layers: the first and
// last pipeline rank get theirs, the middle ranks split the rest evenly, every rank splits its count
// evenly over its vp chunks; stage v*pp + r is chunk v of rank r.
std::vector<int> first_last_split(const ParallelConfig& c, const ModelSpec& m, int pp, int vp) {
  const int first = c.decoder_first_pipeline_num_layers, last = c.decoder_last_pipeline_num_layers;
  std::vector<int> per_rank(static_cast<std::size_t>(pp), 0);
  int given = 0, rest = m.num_layers;
  if (first > 0) {
    per_rank.front() = first;
    rest -= first;
    ++given;
  }
  if (last > 0) {
    if (pp == 1 && first > 0) throw ConfigError("decoder_first/last_pipeline_num_layers: pp=1 has one stage; give at most one");
    per_rank.back() = last;
    rest -= last;
    ++given;
  }
  const int middle = pp - given;
  if (rest < 0 || (middle == 0 && rest != 0) || (middle > 0 && rest % middle != 0)) {
    throw ConfigError("decoder_first/last_pipeline_num_layers: num_layers=" + str(m.num_layers) + " minus first=" + str(first) +
                      " and last=" + str(last) + " leaves " + str(rest) + " layers, which must split evenly over the " +
                      str(middle) + " middle pipeline ranks");
  }
  for (int r = 0; r < pp; ++r) {
    const bool is_first = r == 0 && first > 0, is_last = r == pp - 1 && last > 0;
    if (!is_first && !is_last) per_rank[static_cast<std::size_t>(r)] = middle > 0 ? rest / middle : 0;
  }
  std::vector<int> stages(static_cast<std::size_t>(pp) * vp);
  for (int r = 0; r < pp; ++r) {
    const int n = per_rank[static_cast<std::size_t>(r)];
    if (n % vp != 0) {
      throw ConfigError("decoder_first/last_pipeline_num_layers: pipeline rank " + str(r) + " holds " + str(n) +
                        " layers, which must be divisible by vp=" + str(vp) + " (each of its chunks holds the same number)");
    }
    for (int v = 0; v < vp; ++v) stages[static_cast<std::size_t>(v * pp + r)] = n / vp;
  }
  return stages;
}

// Megatron's --account-for-embedding/loss-in-pipeline-split: the embedding and the loss count as
// one layer each; every stage gets N' / stages slots, the first one decoder fewer (embedding), the
// last one fewer (loss).
std::vector<int> account_for_split(const ParallelConfig& c, const ModelSpec& m, int stages) {
  const int extra = (c.account_for_embedding_in_pipeline_split ? 1 : 0) + (c.account_for_loss_in_pipeline_split ? 1 : 0);
  const int slots = m.num_layers + extra;
  if (slots % stages != 0) {
    throw ConfigError("account_for_*_in_pipeline_split: num_layers=" + str(m.num_layers) + " plus " + str(extra) +
                      " accounted layer(s) = " + str(slots) + " must split evenly over pp*vp=" + str(stages) + " stages");
  }
  std::vector<int> out(static_cast<std::size_t>(stages), slots / stages);
  if (c.account_for_embedding_in_pipeline_split) --out.front();
  if (c.account_for_loss_in_pipeline_split) --out.back();
  return out;
}

// The loss stage's LM head and cross-entropy, in decoder layers of the same cost (per token,
// forward FLOPs): the weight a balanced split gives the last stage.
double loss_in_layers(const ModelSpec& m) {
  const double layer = layer_forward_flops(m, m.num_layers - 1, 1, m.seq_length, 1, 1).forward();
  const double head = logits_forward_flops(m, 1, m.seq_length, 1, 1, megatron_vocab_divisor(1));
  return layer > 0 ? head / layer : 0.0;
}

// Layers split as evenly as the cost allows: the stages share num_layers; the last carries the loss
// as extra load; layers move off the most loaded stage while that lowers the maximum.
std::vector<int> balanced_split(const ModelSpec& m, int stages) {
  std::vector<int> out(static_cast<std::size_t>(stages), m.num_layers / stages);
  for (int i = 0; i < m.num_layers % stages; ++i) ++out[static_cast<std::size_t>(i)];
  const double extra_last = loss_in_layers(m);
  auto load = [&](std::size_t s) { return out[s] + (s + 1 == out.size() ? extra_last : 0.0); };
  for (int guard = 0; guard < m.num_layers; ++guard) {
    std::size_t hi = 0, lo = 0;
    for (std::size_t s = 1; s < out.size(); ++s) {
      if (load(s) > load(hi)) hi = s;
      if (load(s) < load(lo)) lo = s;
    }
    if (out[hi] == 0 || load(lo) + 1 >= load(hi)) break;
    --out[hi];
    ++out[lo];
  }
  return out;
}

}  // namespace

int StageLayout::count(LayerKind kind) const { return static_cast<int>(std::count(layers.begin(), layers.end(), kind)); }

std::vector<int> PipelineLayout::decoder_counts() const {
  std::vector<int> out;
  out.reserve(stages.size());
  for (const StageLayout& s : stages) out.push_back(s.decoders());
  return out;
}

std::string PipelineLayout::to_megatron() const {
  // Each stage's symbols, runs of three or more of one symbol as "X*N".
  std::vector<std::string> text;
  for (const StageLayout& s : stages) {
    std::string t;
    for (std::size_t i = 0; i < s.layers.size();) {
      std::size_t j = i;
      while (j < s.layers.size() && s.layers[j] == s.layers[i]) ++j;
      const char c = symbol(s.layers[i]);
      t += j - i >= 3 ? std::string(1, c) + "*" + std::to_string(j - i) : std::string(j - i, c);
      i = j;
    }
    text.push_back(std::move(t));
  }
  // Runs of identical stages as "(X|)*N"; a run that ends the layout keeps its last stage outside
  // the group (a trailing '|' would add an empty stage).
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    std::size_t j = i;
    while (j < text.size() && text[j] == text[i]) ++j;
    const std::size_t run = j - i;
    const bool ends = j == text.size();
    const std::size_t grouped = ends ? run - 1 : run;
    if (grouped >= 2) {
      out += "(" + text[i] + "|)*" + std::to_string(grouped);
    } else {
      for (std::size_t k = 0; k < grouped; ++k) out += text[i] + "|";
    }
    if (ends) out += text[i];
    i = j;
  }
  return out;
}

Result<PipelineLayout> parse_pipeline_layout(std::string_view text) {
  Result<std::string> flat = LayoutParser(text).parse();
  if (!flat) return flat.error();
  if (flat.value().empty()) return ParseError{"an empty layout", 1, 1};  // "", or only commas: nothing to write back
  PipelineLayout layout;
  layout.stages.emplace_back();
  for (const char c : flat.value()) {
    switch (c) {
      case '|': layout.stages.emplace_back(); break;
      case 'E': layout.stages.back().layers.push_back(LayerKind::Embedding); break;
      case 't': layout.stages.back().layers.push_back(LayerKind::Decoder); break;
      case 'm': layout.stages.back().layers.push_back(LayerKind::Mtp); break;
      default: layout.stages.back().layers.push_back(LayerKind::Loss); break;
    }
  }
  return layout;
}

PipelineLayout layout_from_decoder_counts(const std::vector<int>& decoders, int mtp_layers) {
  PipelineLayout layout;
  for (std::size_t s = 0; s < decoders.size(); ++s) {
    StageLayout stage;
    if (s == 0) stage.layers.push_back(LayerKind::Embedding);
    stage.layers.insert(stage.layers.end(), static_cast<std::size_t>(std::max(decoders[s], 0)), LayerKind::Decoder);
    if (s + 1 == decoders.size()) {
      stage.layers.insert(stage.layers.end(), static_cast<std::size_t>(std::max(mtp_layers, 0)), LayerKind::Mtp);
      stage.layers.push_back(LayerKind::Loss);
    }
    layout.stages.push_back(std::move(stage));
  }
  return layout;
}

namespace {

// The rules a layout string must keep (Megatron's validate_layer_layout) for this model and stage count.
void check_layout_string(const PipelineLayout& l, const ModelSpec& m, int stages) {
  const std::string field = "pipeline_layout";
  if (l.size() != stages) {
    throw ConfigError(field + ": " + str(l.size()) + " stages, the schedule needs pp*vp=" + str(stages) +
                      " (set vp to the layout's stages / pp)");
  }
  int decoders = 0, mtp = 0, embeddings = 0, losses = 0;
  for (const StageLayout& s : l.stages) {
    decoders += s.decoders();
    mtp += s.count(LayerKind::Mtp);
    embeddings += s.count(LayerKind::Embedding);
    losses += s.count(LayerKind::Loss);
  }
  if (decoders != m.num_layers) {
    throw ConfigError(field + ": " + str(decoders) + " decoder layers (t), num_layers=" + str(m.num_layers));
  }
  if (mtp != m.mtp_num_layers) throw ConfigError(field + ": " + str(mtp) + " MTP layers (m), mtp_num_layers=" + str(m.mtp_num_layers));
  const StageLayout& first = l.stages.front();
  const StageLayout& last = l.stages.back();
  if (embeddings != 1 || first.layers.empty() || first.layers.front() != LayerKind::Embedding) {
    throw ConfigError(field + ": the embedding (E) must be the first layer of the first stage, once");
  }
  if (losses != 1 || last.layers.empty() || last.layers.back() != LayerKind::Loss) {
    throw ConfigError(field + ": the loss (L) must be the last layer of the last stage, once");
  }
  // MTP layers follow the last decoder layer, all in one stage.
  bool decoder_seen_after_mtp = false, mtp_seen = false;
  int mtp_stages = 0;
  for (const StageLayout& s : l.stages) {
    mtp_stages += s.has(LayerKind::Mtp);
    for (LayerKind k : s.layers) {
      if (k == LayerKind::Mtp) mtp_seen = true;
      if (k == LayerKind::Decoder && mtp_seen) decoder_seen_after_mtp = true;
    }
  }
  if (decoder_seen_after_mtp || mtp_stages > 1) throw ConfigError(field + ": MTP layers (m) must follow the last decoder layer, in one stage");
}

}  // namespace

ResolvedLayout resolve_pipeline_layout(const ParallelConfig& c, const ModelSpec& m, int stages) {
  if (stages < 1 || c.pp < 1 || stages % c.pp != 0) {
    throw ConfigError("pp=" + str(c.pp) + " must divide the " + str(stages) + " virtual stages");
  }
  const int vp = stages / c.pp;
  const bool first_last = c.decoder_first_pipeline_num_layers > 0 || c.decoder_last_pipeline_num_layers > 0;
  const bool account = c.account_for_embedding_in_pipeline_split || c.account_for_loss_in_pipeline_split;
  const int ways = (!c.pipeline_layout.empty()) + (!c.stage_layers.empty()) + first_last + account;
  if (ways > 1) {
    throw ConfigError("give the pipeline split one way: pipeline_layout, stage_layers, decoder_first/last_pipeline_num_layers "
                      "or account_for_*_in_pipeline_split (Megatron accepts one)");
  }
  ResolvedLayout out;
  if (!c.pipeline_layout.empty()) {
    Result<PipelineLayout> parsed = parse_pipeline_layout(c.pipeline_layout);
    if (!parsed) {
      const ParseError& e = parsed.error();
      throw ConfigError("pipeline_layout '" + c.pipeline_layout + "', column " + str(e.column) + ": " + e.message);
    }
    check_layout_string(parsed.value(), m, stages);
    out.layout = std::move(parsed).value();
    out.source = "layout";
    return out;
  }
  std::vector<int> decoders;
  if (!c.stage_layers.empty()) {
    if (static_cast<int>(c.stage_layers.size()) != stages) {
      throw ConfigError("stage_layers has " + str(static_cast<std::int64_t>(c.stage_layers.size())) + " entries, need pp*vp=" + str(stages));
    }
    for (std::size_t i = 0; i < c.stage_layers.size(); ++i) {
      if (c.stage_layers[i] < 0) throw ConfigError("stage_layers[" + str(static_cast<std::int64_t>(i)) + "]=" + str(c.stage_layers[i]) + " must be >= 0");
    }
    const std::int64_t sum = std::accumulate(c.stage_layers.begin(), c.stage_layers.end(), std::int64_t{0});
    if (sum != m.num_layers) throw ConfigError("stage_layers sums to " + str(sum) + ", need num_layers=" + str(m.num_layers));
    decoders = c.stage_layers;
    out.source = "stage_layers";
  } else if (first_last) {
    decoders = first_last_split(c, m, c.pp, vp);
    out.source = "first_last";
  } else if (account) {
    decoders = account_for_split(c, m, stages);
    out.source = "account_for";
  } else if (m.num_layers % stages == 0) {
    decoders.assign(static_cast<std::size_t>(stages), m.num_layers / stages);
    out.source = "even";
  } else {
    decoders = balanced_split(m, stages);
    out.source = "balanced";
  }
  out.layout = layout_from_decoder_counts(decoders, m.mtp_num_layers);
  if (out.source == "balanced") {
    std::string counts;
    for (int d : decoders) counts += (counts.empty() ? "" : ",") + str(d);
    char weight[32];
    std::snprintf(weight, sizeof weight, "%.1f", loss_in_layers(m));
    out.warning = "num_layers=" + str(m.num_layers) + " does not divide over pp*vp=" + str(stages) +
                  " stages: using a cost-balanced split of " + counts + " decoder layers (the LM head and loss weigh " + weight +
                  " layers); in Megatron: --pipeline-model-parallel-layout \"" + out.layout.to_megatron() + "\"";
  }
  return out;
}

}  // namespace pipelab
