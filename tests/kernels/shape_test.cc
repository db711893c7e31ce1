// Tests of kernels/shape.cc: validation messages, FLOP counts against a hand count, bytes, params.
#include "pipelab/kernels/shape.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pipelab/base/error.h"
#include "pipelab/kernels/block.h"

namespace pipelab::kernels {
namespace {

using ::testing::HasSubstr;

BlockShape small_shape(bool swiglu) {
  return BlockShape{.hidden = 16, .ffn = 64, .heads = 4, .seq = 8, .mbs = 2, .swiglu = swiglu};
}

std::string validation_message(const BlockShape& shape) {
  try {
    shape.validate();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(KernelShape, ValidateAcceptsGoodShape) {
  EXPECT_NO_THROW(small_shape(false).validate());
  EXPECT_NO_THROW(small_shape(true).validate());
}

TEST(KernelShape, ValidateNamesTheField) {
  BlockShape s = small_shape(false);
  s.hidden = 100;
  s.heads = 3;
  EXPECT_EQ(validation_message(s), "BlockShape: hidden=100 must be divisible by heads=3");

  const auto with = [](auto mutate) {
    BlockShape b = small_shape(false);
    mutate(b);
    return validation_message(b);
  };
  EXPECT_THAT(with([](BlockShape& b) { b.hidden = 0; }), HasSubstr("hidden=0 must be positive"));
  EXPECT_THAT(with([](BlockShape& b) { b.ffn = -1; }), HasSubstr("ffn=-1 must be positive"));
  EXPECT_THAT(with([](BlockShape& b) { b.heads = 0; }), HasSubstr("heads=0 must be positive"));
  EXPECT_THAT(with([](BlockShape& b) { b.seq = 0; }), HasSubstr("seq=0 must be positive"));
  EXPECT_THAT(with([](BlockShape& b) { b.mbs = 0; }), HasSubstr("mbs=0 must be positive"));
  EXPECT_THAT(with([](BlockShape& b) { b.seq = 1 << 20; b.mbs = 1 << 12; }),
              HasSubstr("mbs*seq=4294967296 exceeds"));
}

TEST(KernelShape, InvalidShapeThrowsEverywhere) {
  BlockShape s = small_shape(false);
  s.heads = 5;
  EXPECT_THROW(block_flops(s), InputError);
  EXPECT_THROW(activation_bytes(s), InputError);
  EXPECT_THROW(param_count(s), InputError);
  EXPECT_THROW(init_params<float>(s, 1), InputError);
}

// Hand count for hidden=16, ffn=64, heads=4 (head_dim 4), seq=8, mbs=2 (T = 16 tokens):
//   QKV   2*16*16*48 = 24576      out  2*16*16*16 = 8192
//   W1    2*16*16*64 = 32768      W2   2*16*64*16 = 32768         projections = 98304
//   QK^T  per (seq, head) 2*8*8*4 = 512, times mbs*heads = 8 -> 4096;  PV the same -> attention 8192
TEST(KernelShape, FlopsMatchHandCountGelu) {
  const OpFlops f = block_flops(small_shape(false));
  EXPECT_EQ(f.forward, 98304 + 8192);
  EXPECT_EQ(f.backward_input, 98304 + 2 * 8192);
  EXPECT_EQ(f.backward_weight, 98304);
  EXPECT_EQ(f.backward(), f.backward_input + f.backward_weight);
  EXPECT_EQ(f.total(), 106496 + 114688 + 98304);
}

TEST(KernelShape, FlopsMatchHandCountSwiGlu) {
  // One more (16 x 64) GEMM of 32768 FLOPs per pass.
  const OpFlops f = block_flops(small_shape(true));
  EXPECT_EQ(f.forward, 131072 + 8192);
  EXPECT_EQ(f.backward_input, 131072 + 16384);
  EXPECT_EQ(f.backward_weight, 131072);
}

TEST(KernelShape, FlopsFollowClosedFormAtLargeShape) {
  // A llama-like layer: B = 2F - attention counted once more, W = projections; 64-bit safe.
  const BlockShape s{.hidden = 4096, .ffn = 14336, .heads = 32, .seq = 4096, .mbs = 1, .swiglu = true};
  const std::int64_t t = 4096;
  const std::int64_t proj = 2 * t * 4096 * (4 * 4096 + 3 * 14336);
  const std::int64_t attn = 4 * t * 4096 * 4096;
  const OpFlops f = block_flops(s);
  EXPECT_EQ(f.forward, proj + attn);
  EXPECT_EQ(f.backward_input, proj + 2 * attn);
  EXPECT_EQ(f.backward_weight, proj);
}

TEST(KernelShape, ActivationBytes) {
  EXPECT_EQ(activation_bytes(small_shape(false)), 2 * 8 * 16 * 4);
  EXPECT_EQ(small_shape(false).activation_elems(), 256);
  EXPECT_EQ(small_shape(false).tokens(), 16);
  EXPECT_EQ(small_shape(false).head_dim(), 4);
}

TEST(KernelShape, ParamCountMatchesTensors) {
  for (bool swiglu : {false, true}) {
    const BlockShape s = small_shape(swiglu);
    const std::int64_t expected = 2 * 16 + 4 * 16 * 16 + (swiglu ? 3 : 2) * 16 * 64;
    EXPECT_EQ(param_count(s), expected);
    EXPECT_EQ(init_params<float>(s, 3).size(), expected);
    EXPECT_EQ(init_params<float>(s, 3).tensors().size(), swiglu ? 7u : 6u);
  }
}

}  // namespace
}  // namespace pipelab::kernels
