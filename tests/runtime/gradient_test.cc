// Gradient equivalence: for every schedule at several PP / VP / m, one iteration on the cpu backend
// gives the gradients of the single-device sequential reference (to 1e-5 relative per tensor).
// The negative cases show the check fails when work is dropped or data is mis-routed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "pipelab/kernels/data.h"
#include "pipelab/runtime/cpu_backend.h"
#include "pipelab/runtime/errors.h"
#include "pipelab/runtime/gradients.h"
#include "pipelab/runtime/run.h"
#include "runtime_test_util.h"

namespace pipelab::runtime {
namespace {

using testing::Case;
using testing::lowered;
using testing::schedule_matrix;
using testing::tiny_model;

RunResult run_once(const Schedule& s, const ModelConfig& m, const RunOptions& base = {}) {
  RunOptions o = base;
  o.collect_gradients = true;
  return run_cpu_inprocess(s, m, o);
}

class GradientMatrix : public ::testing::TestWithParam<Case> {};

TEST_P(GradientMatrix, EqualsTheSingleDeviceReference) {
  const Case c = GetParam();
  const Schedule s = lowered(c.schedule, c.pp, c.vp, c.m);
  for (const ModelConfig& model : {tiny_model(1), tiny_model(2, /*swiglu=*/true)}) {
    const RunResult r = run_once(s, model);
    const PartGradients ref = reference_gradients(model, s.shape.stages_per_chain(), s.shape.microbatches);
    const GradientCheck check = compare_gradients(part_gradients(s.shape, r.stage_gradients), ref);
    EXPECT_TRUE(check.passed) << "max relative error " << check.max_rel_error << " at " << check.worst;
    EXPECT_LE(check.max_rel_error, 1e-5);
    // The loss is the reference's too: the mean of the microbatch losses.
    double ref_loss = 0;
    {
      kernels::StageModel whole(model.block, 0, s.shape.stages_per_chain() * model.layers_per_stage, model.seed);
      for (int mb = 0; mb < s.shape.microbatches; ++mb) {
        const auto x = kernels::synthetic_input<float>(model.block, mb, model.seed);
        std::vector<float> out(x.size());
        kernels::StageSaved saved;
        whole.forward(x, out, saved);
        ref_loss += kernels::mse_loss(out, kernels::synthetic_target<float>(model.block, mb, model.seed),
                                      1.0 / s.shape.microbatches)
                        .loss;
      }
    }
    ASSERT_EQ(r.losses.size(), 1u);
    EXPECT_NEAR(r.losses[0], ref_loss, 1e-6 * std::abs(ref_loss));
  }
}

INSTANTIATE_TEST_SUITE_P(AllSchedules, GradientMatrix, ::testing::ValuesIn(schedule_matrix()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.label(); });

TEST(Gradients, DualPipeCopiesOfAPartAreSummed) {
  const Schedule s = lowered("dualpipe", 2, 2, 4);
  const ModelConfig model = tiny_model();
  const RunResult r = run_once(s, model);
  ASSERT_EQ(r.stage_gradients.size(), 4u);
  // Each copy saw only its chain's microbatches: alone it is not the reference; the sum is.
  const PartGradients ref = reference_gradients(model, 2, 4);
  PartGradients chain0 = {r.stage_gradients[0], r.stage_gradients[1]};
  EXPECT_FALSE(compare_gradients(chain0, ref).passed);
  EXPECT_TRUE(compare_gradients(part_gradients(s.shape, r.stage_gradients), ref).passed);
}

TEST(Gradients, RepeatedIterationsGiveTheSameGradients) {
  const Schedule s = lowered("zb-v", 2, 2, 4);
  const ModelConfig model = tiny_model();
  RunOptions o;
  o.warmup = 2;
  o.iterations = 2;
  const RunResult r = run_once(s, model, o);
  const PartGradients ref = reference_gradients(model, s.shape.stages_per_chain(), 4);
  EXPECT_TRUE(compare_gradients(part_gradients(s.shape, r.stage_gradients), ref).passed);
  EXPECT_EQ(r.losses[0], r.losses[1]);
}

// ---- the check can fail ------------------------------------------------------------------------

TEST(GradientsCanFail, AgainstAWrongReference) {
  const Schedule s = lowered("1f1b", 2, 1, 4);
  const ModelConfig model = tiny_model();
  const PartGradients got = part_gradients(s.shape, run_once(s, model).stage_gradients);
  const GradientCheck fewer = compare_gradients(got, reference_gradients(model, 2, 3));  // one microbatch short
  EXPECT_FALSE(fewer.passed);
  EXPECT_GT(fewer.max_rel_error, 1e-2);
  ModelConfig other = model;
  other.seed = 8;
  EXPECT_FALSE(compare_gradients(got, reference_gradients(other, 2, 4)).passed);
  EXPECT_FALSE(compare_gradients(got, reference_gradients(model, 1, 4)).passed);  // wrong part count
}

TEST(GradientsCanFail, WhenAScheduleDropsAWeightGrad) {
  Schedule s = lowered("zb-h1", 2, 1, 4);
  auto& list = s.ranks[0];
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (list[i] && list[i]->op == Op::W) {
      list.erase(list.begin() + static_cast<long>(i));
      break;
    }
  }
  RunOptions o;
  o.validate = false;
  o.executor.check_state = false;  // let the leftover stash pass to show the gradients differ
  const ModelConfig model = tiny_model();
  const RunResult r = run_once(s, model, o);
  const GradientCheck c = compare_gradients(part_gradients(s.shape, r.stage_gradients), reference_gradients(model, 2, 4));
  EXPECT_FALSE(c.passed);
  EXPECT_GT(c.max_rel_error, 1e-2);
}

// A backend that feeds the first stage the input of the wrong microbatch: what an executor bug in
// routing would do. The gradients must give it away.
class MisroutingBackend final : public testing::ForwardingBackend {
 public:
  MisroutingBackend(const ModelConfig& m, const PipelineShape& shape, int rank) : testing::ForwardingBackend(inner_), inner_(m, shape, rank) {}
  std::string_view name() const override { return "misrouting"; }
  void load_input(int mb, Buffer& a) override { inner_.load_input(mb == 0 ? 1 : mb == 1 ? 0 : mb, a); }

 private:
  CpuBackend inner_;
};

TEST(GradientsCanFail, WhenMicrobatchesAreMisrouted) {
  const Schedule s = lowered("interleaved-1f1b", 2, 2, 4);
  const ModelConfig model = tiny_model();
  RunOptions o;
  o.collect_gradients = true;
  const RunResult r =
      run_inprocess(s, [&](int rank) { return std::make_unique<MisroutingBackend>(model, s.shape, rank); }, o);
  const GradientCheck c = compare_gradients(part_gradients(s.shape, r.stage_gradients), reference_gradients(model, 2, 4));
  EXPECT_FALSE(c.passed) << c.max_rel_error;
}

TEST(CpuBackend, StagesHoldTheirPartsWeightsAndDualPipeMirrorsShareThem) {
  const Schedule s = lowered("dualpipe", 2, 2, 4);
  const ModelConfig model = tiny_model(2);
  CpuBackend r0(model, s.shape, 0), r1(model, s.shape, 1);
  EXPECT_EQ(r0.stages(), (std::vector<int>{0, 3}));
  EXPECT_EQ(r1.stages(), (std::vector<int>{1, 2}));
  // Stage 0 (rank 0) and its mirror stage 2 (rank 1) hold part 0: layers 0-1.
  EXPECT_EQ(r0.stage_model(0).first_layer(), 0);
  EXPECT_EQ(r1.stage_model(2).first_layer(), 0);
  EXPECT_EQ(r0.stage_model(3).first_layer(), 2);
  EXPECT_EQ(r0.stage_model(0).params()[1].w_qkv, r1.stage_model(2).params()[1].w_qkv);
  EXPECT_EQ(r0.static_bytes(), 2 * 2 * 2 * kernels::param_count(model.block) * 4);
  EXPECT_EQ(r0.activation_bytes(), static_cast<std::size_t>(kernels::activation_bytes(model.block)));
}

TEST(CpuBackend, TracksAndDiscardsPerMicrobatchState) {
  const Schedule s = lowered("1f1b", 1, 1, 2);
  const ModelConfig model = tiny_model();
  CpuBackend b(model, s.shape, 0);
  Buffer act = b.pool().acquire(b.activation_bytes());
  b.load_input(0, act);
  b.forward(0, 0, act);
  EXPECT_GT(b.state_bytes(), 0);
  EXPECT_EQ(b.held_state().size(), 1u);
  EXPECT_THROW(b.forward(0, 0, act), ExecutionError);  // twice
  EXPECT_THROW(b.backward_weight(0, 0), ExecutionError);  // W before I
  b.loss(0, 0, act);
  b.backward_input(0, 0, act);
  EXPECT_THAT(b.held_state()[0], ::testing::HasSubstr("weight-grad stash"));
  b.discard_state();
  EXPECT_EQ(b.state_bytes(), 0);
  EXPECT_TRUE(b.held_state().empty());
  EXPECT_THROW(b.forward(5, 0, act), ExecutionError);  // not held
}

TEST(ActionFlops, CountsLayersTimesTheBlock) {
  const ModelConfig model = tiny_model(3);
  const kernels::OpFlops f = kernels::block_flops(model.block);
  EXPECT_EQ(action_flops(model, Action::make(Op::F, 0, 0)), 3.0 * static_cast<double>(f.forward));
  EXPECT_EQ(action_flops(model, Action::make(Op::B, 0, 0)), 3.0 * static_cast<double>(f.backward()));
  EXPECT_EQ(action_flops(model, Action::overlap(0, 1, 1, 0)), 3.0 * static_cast<double>(f.total()));
  EXPECT_EQ(action_flops(model, Action::make(Op::SendF, 0, 0)), 0.0);
}

}  // namespace
}  // namespace pipelab::runtime
