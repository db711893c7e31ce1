// PipelineLayout: Megatron's layout grammar both ways, and the split of each way to give one —
// checked against Megatron-Bridge's published recipes (DeepSeek-V3, Llama 3.1 405B).
#include <pipelab/profiles/pipeline_layout.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>

#include <pipelab/base/error.h>
#include <pipelab/profiles/model_spec.h>
#include <pipelab/profiles/parallel_config.h>
#include <pipelab/profiles/presets.h>

#include "error_message.h"

namespace pipelab {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::error_message;

PipelineLayout parse(std::string_view text) {
  Result<PipelineLayout> r = parse_pipeline_layout(text);
  EXPECT_TRUE(r.ok()) << text << ": " << (r.ok() ? "" : r.error().to_string());
  return r.ok() ? r.value() : PipelineLayout{};
}

std::vector<int> repeat(std::initializer_list<std::pair<int, int>> runs) {  // (value, count) runs
  std::vector<int> out;
  for (const auto& [value, count] : runs) out.insert(out.end(), static_cast<std::size_t>(count), value);
  return out;
}

TEST(LayoutGrammar, ExpandsRepeatsGroupsAndCommas) {
  const PipelineLayout l = parse("Et*3|(tt|)*2,m|L");
  ASSERT_EQ(l.size(), 5);
  EXPECT_THAT(l.decoder_counts(), ElementsAre(3, 2, 2, 0, 0));
  EXPECT_TRUE(l.stages[0].has(LayerKind::Embedding));
  EXPECT_EQ(l.stages[3].count(LayerKind::Mtp), 1);
  EXPECT_TRUE(l.stages[4].has(LayerKind::Loss));
  EXPECT_EQ(parse("E||t|L").size(), 4);  // an empty stage is allowed, as in Megatron
}

TEST(LayoutGrammar, ErrorsNameTheColumn) {
  for (const auto& [text, column, what] : std::vector<std::tuple<std::string, int, std::string>>{
           {"Et|x|L", 4, "unexpected 'x'"},
           {"E(t|)*2|L", 0, ""},  // valid
           {"E((t)*2)*2|L", 3, "nested parentheses"},
           {"E(tt|)|L", 7, "expected '*N' after ')'"},
           {"Et*|L", 4, "expected a number after '*'"},
           {"Et*0|L", 4, "at least 1"},
           {"E(tt|L", 7, "without a matching ')'"},
           {"Et)|L", 3, "without a matching '('"},
           {"E t|L", 2, "unexpected ' '"},
           {"", 1, "an empty layout"},
           {",,", 1, "an empty layout"}}) {  // fuzz finding: ",," parsed to one empty stage, written back as ""
    const Result<PipelineLayout> r = parse_pipeline_layout(text);
    if (column == 0) {
      EXPECT_TRUE(r.ok()) << text;
      continue;
    }
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.error().column, column) << text << ": " << r.error().message;
    EXPECT_THAT(r.error().message, HasSubstr(what)) << text;
  }
}

TEST(LayoutGrammar, WritesMegatronsCompressedForm) {
  for (const char* text : {"Et|(tt|)*30mL", "Et*3|(tt|)*29,m|L", "Et*4|(t*4|)*14tmL", "E|t|tL"}) {
    const PipelineLayout l = parse(text);
    EXPECT_EQ(parse(l.to_megatron()), l) << text << " -> " << l.to_megatron();
  }
  EXPECT_EQ(parse("Et|(tt|)*30mL").to_megatron(), "Et|(tt|)*30mL");  // Megatron-Bridge's DeepSeek-V3 string
  EXPECT_EQ(layout_from_decoder_counts({2, 2, 2}, 0).to_megatron(), "Ett|tt|ttL");
}

// Megatron-Bridge's DeepSeek-V3 recipe on H100 (PP8 VP4): 61 decoder layers and one MTP layer.
TEST(Layouts, DeepSeekV3OnPp8Vp4) {
  const ModelSpec m = model_preset("deepseek-v3");
  ParallelConfig c;
  c.pp = 8;
  c.vp = 4;
  c.pipeline_layout = "Et|(tt|)*30mL";
  const ResolvedLayout r = resolve_pipeline_layout(c, m, 32);
  EXPECT_EQ(r.source, "layout");
  EXPECT_EQ(r.layout.decoder_counts(), repeat({{1, 1}, {2, 30}, {0, 1}}));
  EXPECT_EQ(r.layout.stages.back().count(LayerKind::Mtp), 1);
}

// The three ways of giving a layout agree, with the MTP layer on the last stage beside the loss:
// DeepSeek-V3 on 16 stages as Megatron-Bridge's "Et*4|(t*4|)*14tmL", as first 4 / last 1, and as
// an explicit list.
TEST(Layouts, ThreeWaysAgreeForDeepSeekV3) {
  const ModelSpec m = model_preset("deepseek-v3");
  ParallelConfig c;
  c.pp = 16;
  c.vp = 1;
  c.pipeline_layout = "Et*4|(t*4|)*14tmL";
  const PipelineLayout by_string = resolve_pipeline_layout(c, m, 16).layout;
  EXPECT_EQ(by_string.decoder_counts(), repeat({{4, 15}, {1, 1}}));
  c.pipeline_layout.clear();
  c.decoder_first_pipeline_num_layers = 4;
  c.decoder_last_pipeline_num_layers = 1;
  EXPECT_EQ(resolve_pipeline_layout(c, m, 16).layout, by_string);
  c.decoder_first_pipeline_num_layers = c.decoder_last_pipeline_num_layers = 0;
  c.stage_layers = by_string.decoder_counts();
  EXPECT_EQ(resolve_pipeline_layout(c, m, 16).layout, by_string);
  EXPECT_EQ(by_string.to_megatron(), "Et*4|(t*4|)*14tmL");
}

// Megatron's documented PP16 VP2 layout puts the MTP layer on a stage of its own, which only a
// layout string can say; first/last cannot express its split (rank 0 would hold 3 + 2 layers over
// 2 chunks, and Megatron's rule needs each rank's layers divisible by vp).
TEST(Layouts, OnlyAStringPlacesAStandaloneMtpStage) {
  const ModelSpec m = model_preset("deepseek-v3");
  ParallelConfig c;
  c.pp = 16;
  c.vp = 2;
  c.pipeline_layout = "Et*3|(tt|)*29,m|L";
  const PipelineLayout l = resolve_pipeline_layout(c, m, 32).layout;
  EXPECT_EQ(l.decoder_counts(), repeat({{3, 1}, {2, 29}, {0, 2}}));
  EXPECT_EQ(l.stages[30].count(LayerKind::Mtp), 1);
  c.pipeline_layout.clear();
  c.decoder_first_pipeline_num_layers = 5;  // 54 left for 14 middle ranks: uneven
  c.decoder_last_pipeline_num_layers = 2;
  EXPECT_THAT(error_message<ConfigError>([&] { resolve_pipeline_layout(c, m, 32); }), HasSubstr("14 middle pipeline ranks"));
  c.decoder_first_pipeline_num_layers = 3;  // 56 left: 4 per middle rank, but 3 is not divisible by vp=2
  c.decoder_last_pipeline_num_layers = 2;
  EXPECT_THAT(error_message<ConfigError>([&] { resolve_pipeline_layout(c, m, 32); }), HasSubstr("divisible by vp=2"));
}

// Megatron-Bridge's Llama 3.1 405B recipe: TP8 PP8 CP2 VP8 with embedding and loss accounted for:
// 126 + 2 = 128 slots, 2 per chunk: [1] + [2]*62 + [1].
TEST(Layouts, Llama405BAccountsForEmbeddingAndLoss) {
  const ModelSpec m = model_preset("llama3.1-405b");
  ParallelConfig c;
  c.pp = 8;
  c.vp = 8;
  c.account_for_embedding_in_pipeline_split = true;
  c.account_for_loss_in_pipeline_split = true;
  const ResolvedLayout r = resolve_pipeline_layout(c, m, 64);
  EXPECT_EQ(r.source, "account_for");
  EXPECT_EQ(r.layout.decoder_counts(), repeat({{1, 1}, {2, 62}, {1, 1}}));
  c.account_for_loss_in_pipeline_split = false;  // 127 slots do not split over 64 stages
  EXPECT_THAT(error_message<ConfigError>([&] { resolve_pipeline_layout(c, m, 64); }), HasSubstr("127 must split evenly over pp*vp=64"));
}

TEST(Layouts, FirstAndLastFollowMegatronsRule) {
  ModelSpec m = model_preset("llama3-70b");  // 80 layers
  ParallelConfig c;
  c.pp = 4;
  c.vp = 2;
  c.decoder_first_pipeline_num_layers = 18;
  c.decoder_last_pipeline_num_layers = 18;
  // Middle ranks share 44: 22 each; every rank's layers split over its 2 chunks; stage v*pp + r.
  EXPECT_EQ(resolve_pipeline_layout(c, m, 8).layout.decoder_counts(), (std::vector<int>{9, 11, 11, 9, 9, 11, 11, 9}));
}

TEST(Layouts, BalancedSplitWhenNothingIsGivenAndLayersDoNotDivide) {
  const ModelSpec m = model_preset("deepseek-v3");
  ParallelConfig c;
  c.pp = 8;
  c.vp = 4;
  const ResolvedLayout r = resolve_pipeline_layout(c, m, 32);
  EXPECT_EQ(r.source, "balanced");
  const std::vector<int> d = r.layout.decoder_counts();
  EXPECT_EQ(std::accumulate(d.begin(), d.end(), 0), 61);
  EXPECT_LE(*std::max_element(d.begin(), d.end()) - *std::min_element(d.begin(), d.end()), 2);
  EXPECT_LE(d.back(), d.front());  // the loss stage carries the LM head
  EXPECT_THAT(r.warning, HasSubstr("--pipeline-model-parallel-layout \"" + r.layout.to_megatron() + "\""));
}

TEST(Layouts, ALayoutStringIsCheckedAgainstTheModel) {
  const ModelSpec m = model_preset("deepseek-v3");
  ParallelConfig c;
  c.pp = 8;
  c.vp = 4;
  c.pipeline_layout = "Et|(tt|)*29mL";  // 31 stages, 59 decoders
  EXPECT_THAT(error_message<ConfigError>([&] { resolve_pipeline_layout(c, m, 32); }), HasSubstr("31 stages, the schedule needs pp*vp=32"));
  c.pipeline_layout = "Et|(tt|)*29,tt|mL";  // 32 stages, 61 decoders, MTP and loss last
  EXPECT_NO_THROW(resolve_pipeline_layout(c, m, 32));
  c.pipeline_layout = "Et|(tt|)*30tL";  // 62 decoders, no MTP
  EXPECT_THAT(error_message<ConfigError>([&] { resolve_pipeline_layout(c, m, 32); }), HasSubstr("62 decoder layers (t), num_layers=61"));
  c.pipeline_layout = "tE|(tt|)*30mL";
  EXPECT_THAT(error_message<ConfigError>([&] { resolve_pipeline_layout(c, m, 32); }), HasSubstr("the embedding (E) must be the first layer"));
  c.pipeline_layout = "Et|(tt|)*29,tmt|L";  // a decoder layer after the MTP layer
  EXPECT_THAT(error_message<ConfigError>([&] { resolve_pipeline_layout(c, m, 32); }), HasSubstr("MTP layers (m) must follow"));
  c.stage_layers = repeat({{2, 32}});
  EXPECT_THAT(error_message<ConfigError>([&] { resolve_pipeline_layout(c, m, 32); }), HasSubstr("give the pipeline split one way"));
}

}  // namespace
}  // namespace pipelab
