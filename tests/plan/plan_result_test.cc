// The plan result schema (reports/plan_result.cc): to_json and load_plan_result are inverses, the
// contract's keys are there, and the renderers show the table, exclusions and recipes.
#include "pipelab/reports/plan_result.h"

#include <gtest/gtest.h>

#include "pipelab/base/error.h"

namespace pipelab::reports {
namespace {

PlanResult sample() {
  PlanResult r;
  r.config = {{"model", {{"name", "llama3-70b"}}}, {"gpu", {{"name", "h100-sxm"}}}, {"gpus", 64}, {"gbs", 128},
              {"seq_length", 8192}, {"precision", "fp8"}};
  r.evaluated = 3;
  r.excluded = {{"tp=N must divide num_query_groups=8", 12}, {"simulated peak memory exceeds the usable 76.0 GiB", 1}};
  PlanEntry e;
  e.layout = {.tp = 4, .pp = 8, .vp = 5, .cp = 1, .ep = 1, .etp = 4, .dp = 2, .mbs = 1, .schedule = "interleaved-1f1b",
              .recompute = "none", .stage_layers = std::vector<int>(40, 2), .fsdp = "none", .embedding_loss_aware = false,
              .pipeline_layout = "Ett|(tt|)*38ttL"};
  e.summary = {.makespan_ns = 5'000'000'000, .bubble_ratio = 0.05, .tflops_per_gpu = 700.5, .mfu = 0.35, .tokens_per_s_per_gpu = 1638.4,
               .peak_memory_bytes = {60LL << 30, 61LL << 30}, .exposed_comm_ns = 1000, .memory_capacity_bytes = 76LL << 30,
               .oom = false, .model_flops = 1e18, .tokens_per_iteration = 128 * 8192};
  r.top = {e, e};
  r.top[1].layout.vp = 10;
  r.recipes = {"--tensor-model-parallel-size 4\n", "model.tensor_model_parallel_size=4\n", "distributed:\n  tp_size: 4\n",
               "[parallelism]\ntensor_parallel_degree = 4\n"};
  r.search = {.candidates = 16, .searched = 16, .complete = true, .seconds = 1.5, .threads = 2};
  r.why = {"bubble 5.0% vs 6.0%"};
  r.points = {{"interleaved-1f1b", 1638.4, 61LL << 30, true}, {"1f1b", 1500, 90LL << 30, false}};
  return r;
}

TEST(PlanResult, RoundTripsThroughJson) {
  const PlanResult r = sample();
  const nlohmann::json j = to_json(r);
  for (const char* key : {"format", "version", "kind", "config", "evaluated", "excluded", "top", "recipes"}) EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["kind"], "plan");
  for (const char* key : {"tp", "pp", "vp", "cp", "ep", "etp", "dp", "mbs", "schedule", "recompute", "stage_layers"}) {
    EXPECT_TRUE(j["top"][0]["layout"].contains(key)) << key;
  }
  for (const char* key : {"megatron_lm", "megatron_bridge", "automodel_yaml", "torchtitan"}) EXPECT_TRUE(j["recipes"].contains(key)) << key;
  EXPECT_EQ(load_plan_result(nlohmann::json::parse(j.dump()), "plan.json"), r);
}

TEST(PlanResult, LoadNamesTheBadField) {
  nlohmann::json j = to_json(sample());
  j["top"][1]["layout"].erase("tp");
  try {
    load_plan_result(j, "plan.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("top[1].layout"), std::string::npos) << e.what();
  }
  j = to_json(sample());
  j["kind"] = "simulate";
  EXPECT_THROW(load_plan_result(j, "plan.json"), InputError);
}

TEST(PlanResult, TextAndHtmlShowTheTableExclusionsAndRecipes) {
  const PlanResult r = sample();
  const std::string text = render_plan_text(r);
  EXPECT_NE(text.find("interleaved-1f1b"), std::string::npos);
  EXPECT_NE(text.find("12  tp=N must divide num_query_groups=8"), std::string::npos) << text;
  EXPECT_NE(text.find("--tensor-model-parallel-size 4"), std::string::npos);
  EXPECT_NE(text.find("best layout found: OK"), std::string::npos);
  const std::string html = render_plan_html(r, nullptr);
  EXPECT_NE(html.find("<svg class=\"pareto\""), std::string::npos);
  EXPECT_NE(html.find("data-schedule=\"1f1b\""), std::string::npos);
  EXPECT_NE(html.find("id=\"top\""), std::string::npos);
  PlanResult empty = r;
  empty.top.clear();
  EXPECT_NE(render_plan_text(empty).find("nothing fits: FAILED"), std::string::npos);
}

TEST(PlanResult, MarkdownAndCsvShowTheTopTable) {
  const PlanResult r = sample();
  const std::string md = render_plan_markdown(r);
  EXPECT_NE(md.find("| 1 | interleaved-1f1b | 4 | 8 | 5 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 12 | tp=N must divide num_query_groups=8 |"), std::string::npos) << md;
  EXPECT_NE(md.find("- bubble 5.0% vs 6.0%"), std::string::npos);
  EXPECT_NE(md.find("```toml\n[parallelism]"), std::string::npos);
  const std::string csv = render_plan_csv(r);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "rank,schedule,tp,pp,vp,cp,ep,etp,dp,mbs,recompute,dp-shard,split,iteration (ms),bubble (%),TFLOP/s (/GPU),MFU (%),"
            "tokens/s (/GPU),peak mem (GiB),exp. comm (ms)");
  EXPECT_NE(csv.find("\n2,interleaved-1f1b,4,8,10,1,1,4,2,1,none,dist-opt,balanced,5000.0,5.0,700.5,35.0,1638,61.0,0.00\n"),
            std::string::npos)
      << csv;
  PlanResult uniform = r;
  uniform.top[0].summary.mfu.reset();  // no hardware figure: an empty cell
  EXPECT_NE(render_plan_csv(uniform).find(",5.0,700.5,,1638,"), std::string::npos);
}

}  // namespace
}  // namespace pipelab::reports
