// sim::LayerGeometry: one GPU's share of a layer, worked out once, and the cost and memory models
// reading the same numbers from it.
#include <gtest/gtest.h>

#include <memory>

#include "pipelab/base/error.h"
#include "pipelab/profiles/presets.h"
#include "pipelab/schedules/registry.h"
#include "pipelab/sim/analytic_cost.h"
#include "pipelab/sim/layer_geometry.h"
#include "pipelab/sim/memory_model.h"
#include "pipelab/sim/stage_layers.h"

namespace pipelab {
namespace {

TEST(LayerGeometry, OneGpusShareOfADenseLayer) {
  const ModelSpec m = model_preset("llama3-70b");
  const sim::LayerGeometry g(m, resolve({.tp = 8, .pp = 4, .cp = 2, .dp = 2, .mbs = 2, .gbs = 32}, m));
  EXPECT_EQ(g.tokens(), 2 * 8192 / 2);  // mbs x seq / cp
  EXPECT_TRUE(g.sequence_parallel());
  EXPECT_EQ(g.sp_split(), 8);
  EXPECT_EQ(g.hidden_state_bytes(), 8192.0 / 8 * 8192 * 2);
  EXPECT_EQ(g.vocab_divisor(), 128 * 8);
  EXPECT_EQ(g.vocab_per_gpu(), 129024 / 8);  // 128256 padded to a multiple of 1024
  EXPECT_EQ(g.logits(), 8192.0 * 129024 / 8);
  const sim::LayerWidths& w = g.widths(0);
  EXPECT_EQ(w.hidden, 8192);
  EXPECT_EQ(w.query, 64 * 128);
  EXPECT_EQ(w.key, 8 * 128);
  EXPECT_EQ(w.value, 8 * 128);
  EXPECT_EQ(w.mlp, 28672);
  EXPECT_EQ(w.mlp_up, 2 * 28672);  // SwiGLU: gate and up
  EXPECT_EQ(g.layer_params(0).total, m.layer_params(0) / 8);
  EXPECT_EQ(g.layer_params(0).experts, 0);
}

// An MTP module's decoder layer is a MoE layer like the last one: its experts split over EP (and
// counted as experts), its norms and projection over TP.
TEST(LayerGeometry, MtpModulesSplitTheirExpertsOverEp) {
  const ModelSpec m = model_preset("deepseek-v3");
  ASSERT_EQ(m.mtp_num_layers, 1);
  const sim::LayerGeometry g(m, resolve({.tp = 2, .pp = 8, .ep = 64, .dp = 64, .mbs = 1, .gbs = 8192}, m));
  const sim::GpuParams layer = g.layer_params(m.num_layers - 1);
  ASSERT_GT(layer.experts, 0);
  // A part holding embedding, loss and MTP (so the module needs no copies of the vocab weights).
  const sim::LayerRange plain{.first = m.num_layers - 1, .count = 1, .has_embedding = true, .has_loss = true};
  sim::LayerRange with_mtp = plain;
  with_mtp.mtp_layers = 1;
  const sim::GpuParams a = g.stage_params(plain), b = g.stage_params(with_mtp);
  EXPECT_EQ(b.experts - a.experts, layer.experts);
  const std::int64_t rest = m.mtp_params() - m.layer_params(m.num_layers - 1);  // norms and eh_proj
  EXPECT_EQ(b.total - a.total, layer.total + rest / 2);
  EXPECT_EQ(b.quantized, 0);  // BF16 unless a param-gather flag quantizes the decoder layers
}

TEST(LayerGeometry, MoeLayersActivateTopKAndSharedExperts) {
  const ModelSpec m = model_preset("deepseek-v3");
  const ParallelConfig c = resolve({.tp = 2, .pp = 4, .ep = 8, .dp = 8, .gbs = 64, .sequence_parallel = false}, m);
  const sim::LayerGeometry g(m, c);
  EXPECT_FALSE(g.sequence_parallel());
  EXPECT_EQ(g.sp_split(), 1);
  const sim::LayerWidths& moe = g.widths(3);  // past the 3 dense layers
  EXPECT_EQ(moe.mlp, 8 * 2048 + 2048);
  EXPECT_EQ(moe.query, 128 * (128 + 64));  // MLA: heads x (qk + rope dims)
  EXPECT_EQ(moe.key, 128 * 128);
  EXPECT_EQ(moe.value, 128 * 128);
  EXPECT_EQ(g.widths(0).mlp, 18432);
  const std::int64_t experts = std::int64_t{256} * 3 * 7168 * 2048;
  EXPECT_EQ(g.layer_params(3).experts, experts / (8 * 2));  // over ep x etp (= tp by default)
  EXPECT_EQ(g.layer_params(3).total, (m.layer_params(3) - experts) / 2 + experts / 16);
}

// Routed experts split over EP x ETP, not TP: with etp=1 a rank holds its local experts whole, so the
// EP x ETP ranks of a group hold each expert weight exactly once, whatever tp is.
TEST(LayerGeometry, ExpertsSplitOverEpAndExpertTp) {
  const ModelSpec m = model_preset("mixtral-8x7b");
  const std::int64_t experts = std::int64_t{m.num_experts} * 3 * m.hidden_size * m.moe_ffn_hidden_size;
  for (const auto& [tp, ep, etp] : {std::tuple{8, 8, 1}, std::tuple{1, 8, 1}, std::tuple{8, 1, 1}, std::tuple{2, 4, 2}}) {
    const ParallelConfig c = resolve({.tp = tp, .pp = 1, .ep = ep, .etp = etp, .dp = 8 / tp, .gbs = 64}, m);
    const sim::LayerGeometry g(m, c);
    EXPECT_EQ(g.layer_params(0).experts * ep * etp, experts) << "tp" << tp << " ep" << ep << " etp" << etp;
    EXPECT_EQ(g.layer_params(0).total, (m.layer_params(0) - experts) / tp + experts / (ep * etp));
  }
}

TEST(LayerGeometry, NeedsAResolvedConfig) {
  const ModelSpec m = model_preset("llama3-8b");
  EXPECT_THROW(sim::LayerGeometry(m, ParallelConfig{.tp = 2, .gbs = 8}), ConfigError);  // dp and seq_length unset
}

// The point of one geometry: what the cost model sends between stages and reduces over DP is what
// the memory model holds.
TEST(LayerGeometry, TheCostAndMemoryModelsReadTheSameNumbers) {
  const ModelSpec m = model_preset("mixtral-8x7b");
  const ParallelConfig c = resolve({.tp = 2, .pp = 4, .ep = 2, .dp = 4, .gbs = 32, .recompute = Recompute::kFull}, m);
  const Schedule s = make_schedule("1f1b", {4, 1, 8, 0});
  const auto g = std::make_shared<const sim::LayerGeometry>(m, c);
  const sim::AnalyticCost cost(g, gpu_preset("h100-sxm"), s.shape);
  const sim::MemoryModel memory(g, s.shape);
  // Full recompute keeps exactly the layer input, which is what crosses a pipeline boundary.
  EXPECT_EQ(cost.boundary_bytes(0), memory.layer_activation_bytes(0));
  const auto ranges = sim::stage_layers(m, c, s.shape);
  for (int st = 0; st < s.shape.stages; ++st) {
    const sim::GpuParams params = g->stage_params(ranges[static_cast<std::size_t>(st)]);
    EXPECT_EQ(cost.reduce_grad_bytes(st), params.total * sim::kBf16Bytes) << st;  // bf16 gradients
    EXPECT_EQ(memory.static_memory(st).params_bytes, params.total * sim::kBf16Bytes) << st;
  }
}

}  // namespace
}  // namespace pipelab
