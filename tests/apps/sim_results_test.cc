// The result file of `simulate`: hardware figures are null under uniform costs (the key stays),
// numbers under analytic costs, and the idle split and in-action communication are written.
#include <gtest/gtest.h>

#include "pipelab/profiles/presets.h"
#include "pipelab/sim/simulation.h"
#include "sim_results.h"

namespace pipelab::app {
namespace {

nlohmann::json simulate_json(sim::CostModelKind cost) {
  sim::SimulationRequest r;
  r.model = model_preset("llama3-8b");
  r.gpu = gpu_preset("h100-sxm");
  ParallelConfig c;
  c.tp = 2;
  c.pp = 2;
  c.dp = 2;
  c.mbs = 1;
  c.gbs = 8;
  r.config = resolve(c, r.model);
  r.schedule = "1f1b";
  r.cost_model = cost;
  const sim::SimulationOutcome o = sim::simulate_config(r);
  return reports::to_json(simulate_result(config_json(r.model, r.gpu, o.config, std::string(sim::cost_model_name(cost))), o, ""));
}

TEST(SimulateResult, UniformCostsWriteNullHardwareFigures) {
  const nlohmann::json s = simulate_json(sim::CostModelKind::Uniform)["summary"];
  ASSERT_TRUE(s.contains("mfu"));
  EXPECT_TRUE(s["mfu"].is_null());
  EXPECT_TRUE(s["tflops_per_gpu"].is_null());
  EXPECT_GT(s["tokens_per_s_per_gpu"].get<double>(), 0);
}

TEST(SimulateResult, AnalyticCostsWriteEveryFigure) {
  const nlohmann::json j = simulate_json(sim::CostModelKind::Analytic);
  const nlohmann::json& s = j["summary"];
  EXPECT_GT(s["mfu"].get<double>(), 0);
  EXPECT_LT(s["mfu"].get<double>(), 1);
  EXPECT_GT(s["pipeline_bubble_ratio"].get<double>(), 0);
  EXPECT_LE(s["pipeline_bubble_ratio"].get<double>(), s["bubble_ratio"].get<double>());
  EXPECT_GT(s["exposed_dp_comm_ns"].get<std::int64_t>(), 0);
  EXPECT_GT(s["exposed_tp_comm_ns"].get<std::int64_t>(), 0);
  for (const nlohmann::json& rank : j["ranks"]) {
    const std::int64_t parts = rank["pipeline_bubble_ns"].get<std::int64_t>() + rank["imbalance_ns"].get<std::int64_t>() +
                               rank["exposed_pp_comm_ns"].get<std::int64_t>() + rank["exposed_dp_comm_ns"].get<std::int64_t>() +
                               rank["other_idle_ns"].get<std::int64_t>();
    EXPECT_EQ(parts, rank["idle_ns"].get<std::int64_t>());
  }
}

}  // namespace
}  // namespace pipelab::app
