// Mock-model flags.
#include "model_flags.h"

namespace pipelab::app {

runtime::ModelConfig default_mock_model() {
  runtime::ModelConfig m;
  m.block = kernels::BlockShape{.hidden = 128, .ffn = 512, .heads = 4, .seq = 64, .mbs = 2, .swiglu = false};
  m.layers_per_stage = 2;
  m.seed = 1;
  return m;
}

void add_model_flags(CLI::App* cmd, runtime::ModelConfig& m) {
  cmd->add_option("--hidden,--hidden-size", m.block.hidden, "Mock model width")->capture_default_str()->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--ffn,--ffn-hidden-size", m.block.ffn, "MLP inner width")->capture_default_str()->check(CLI::Range(1, 1 << 18));
  cmd->add_option("--heads,--num-attention-heads", m.block.heads, "Attention heads (divide --hidden)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 12));
  cmd->add_option("--seq,--seq-length", m.block.seq, "Tokens per sequence")->capture_default_str()->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--mbs,--micro-batch-size", m.block.mbs, "Sequences per microbatch")->capture_default_str()->check(CLI::Range(1, 1 << 12));
  cmd->add_option("--layers-per-stage,--num-layers-per-virtual-pipeline-stage", m.layers_per_stage, "Blocks per virtual stage")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 10));
  cmd->add_flag("--swiglu", m.block.swiglu, "SwiGLU MLP instead of GELU");
  cmd->add_option("--seed", m.seed, "Seed of weights and synthetic data")->capture_default_str();
}

}  // namespace pipelab::app
