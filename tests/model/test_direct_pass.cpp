// The whole-model pass (model/direct_pass.h) against autograd: the loss and every parameter's gradient on odd
// shapes, with and without biases, for each position variant, a frozen table, gradients accumulated over calls,
// in float32 and under bf16 autocast, and the cases it leaves to autograd.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/direct_pass.h"
#include "model/gpt.h"
#include "ops/autocast.h"
#include "util/kernel_paths.h"

namespace poslab {
namespace {

struct Shape {
  std::string position = "learned";
  bool bias = true;
  int n_layer = 2, n_head = 3, n_embd = 24, block_size = 11;
  int64_t vocab = 13, B = 3, T = 11;
  std::string trainable = "all";
  bool bf16 = false;  // under autocast, the products in bf16 (bf16_products=onednn)
};

std::string name_of(const Shape& s) {
  return s.position + (s.bias ? "" : " no-bias") + " layers " + std::to_string(s.n_layer) + " heads " +
         std::to_string(s.n_head) + " embd " + std::to_string(s.n_embd) + " B " + std::to_string(s.B) + " T " +
         std::to_string(s.T) + " trainable " + s.trainable + (s.bf16 ? " bf16" : " float32");
}

// A model of the shape with every parameter drawn at random (biases and LayerNorm weights too, so that their
// gradients and their effect on the others are seen), the same for the same seed.
GPT make_model(const Shape& s, uint64_t seed) {
  ModelConfig m;
  m.n_layer = s.n_layer;
  m.n_head = s.n_head;
  m.n_embd = s.n_embd;
  m.block_size = s.block_size;
  m.position = s.position;
  m.bias = s.bias;
  torch::manual_seed(seed);
  GPT model(m, s.vocab);
  torch::NoGradGuard no_grad;
  for (auto& p : model->named_parameters()) {
    if (p.key() == "wpe.weight" && s.position == "sinusoidal") continue;  // the fixed table as it is
    const bool ln = p.key().find("ln_") != std::string::npos;
    p.value().normal_(ln ? 1.0 : 0.0, ln ? 0.2 : 0.1);
  }
  if (s.trainable == "wpe")  // train.trainable = wpe, as train/optim.h sets it
    for (auto& p : model->named_parameters()) p.value().requires_grad_(p.key() == "wpe.weight");
  return model;
}

struct Batch2 {
  torch::Tensor x, y;
};

Batch2 batch_of(const Shape& s, uint64_t seed) {
  torch::manual_seed(seed);
  return {torch::randint(0, s.vocab, {s.B, s.T}, torch::kInt64), torch::randint(0, s.vocab, {s.B, s.T}, torch::kInt64)};
}

// Within float rounding in float32. In bf16 the pass rounds where autocast does, through the same kernels (equal
// bit for bit here); 1e-3 of the largest entry leaves a kernel room to sum in another order, and is 15 times below
// how far autograd's float32 gradients are from them (1.5e-2 for wte's on the default Shape).
void expect_grads_close(GPT& a, GPT& b, const std::string& what, double tol = 2e-5) {
  const auto pa = a->named_parameters(), pb = b->named_parameters();
  for (const auto& p : pa) {
    const torch::Tensor& ga = p.value().grad();
    const torch::Tensor& gb = pb[p.key()].grad();
    ASSERT_EQ(ga.defined(), gb.defined()) << what << ": " << p.key();
    if (!ga.defined()) continue;
    const double scale = ga.abs().max().item<double>();
    const double diff = (ga - gb).abs().max().item<double>();
    EXPECT_LE(diff, tol * scale + 1e-7) << what << ": " << p.key() << " (largest entry " << scale << ")";
  }
}

// The kernel paths a shape's check runs: poslab's defaults on a CPU without bf16 hardware, with bf16 products
// through oneDNN for a bf16 shape (the direct pass runs bf16 with those only).
KernelPaths paths_for(const Shape& s) {
  KernelPaths p = default_kernel_paths(false);
  if (s.bf16) p.bf16_products = "onednn";
  return p;
}

// Autograd's loss and gradients on `a`, the pass's on `b` (same weights), over `calls` batches with weight 1/calls.
void check(const Shape& s, int calls = 1) {
  SCOPED_TRACE(name_of(s) + ", " + std::to_string(calls) + " call(s)");
  GPT a = make_model(s, 7), b = make_model(s, 7);
  DirectPass pass(b);
  KernelPathsGuard paths(paths_for(s));
  for (int c = 0; c < calls; ++c) {
    const Batch2 batch = batch_of(s, 100 + c);
    torch::Tensor la;
    {
      AutocastGuard autocast(s.bf16, false);
      la = a->forward_loss(batch.x, batch.y, 1.0 / calls);
    }
    la.backward();
    const torch::Tensor lb = pass.forward_backward(batch.x, batch.y, 1.0 / calls, s.bf16);
    EXPECT_NEAR(lb.item<double>(), la.item<double>(), 1e-5 * std::abs(la.item<double>())) << "call " << c;
    EXPECT_FALSE(lb.requires_grad());
  }
  expect_grads_close(a, b, name_of(s), s.bf16 ? 1e-3 : 2e-5);
}

TEST(DirectPass, EveryGradientEqualsAutogradsOnOddShapes) {
  check(Shape{});
  Shape one_layer_one_head;
  one_layer_one_head.n_layer = 1;
  one_layer_one_head.n_head = 1;
  one_layer_one_head.n_embd = 20;
  one_layer_one_head.B = 1;
  one_layer_one_head.T = 1;
  check(one_layer_one_head);
  Shape shorter;  // a sequence shorter than the table: the rows past it get no gradient
  shorter.T = 6;
  shorter.n_layer = 3;
  check(shorter);
  Shape wide;  // more than one chunk of LayerNorm rows (256) and of head logits
  wide.B = 9;
  wide.T = 40;
  wide.block_size = 40;
  wide.vocab = 1201;  // 218 rows of logits to a chunk, 360 rows
  wide.n_embd = 48;
  check(wide);
}

// Each position variant, with and without biases.
void check_each_variant(bool bf16) {
  for (const char* position : {"learned", "sinusoidal", "none"})
    for (bool bias : {true, false}) {
      Shape s;
      s.position = position;
      s.bias = bias;
      s.bf16 = bf16;
      check(s);
    }
}

TEST(DirectPass, EveryGradientEqualsAutogradsWithoutBiasesAndForEachPositionVariant) { check_each_variant(false); }

TEST(DirectPass, Bf16GradientsEqualAutocastsOnEveryShapeAndVariant) {
  check_each_variant(true);
  Shape wide;  // more than one chunk of LayerNorm, GELU-bias and head rows (T 40, not a multiple of 16: the float path)
  wide.B = 9;
  wide.T = 40;
  wide.block_size = 40;
  wide.vocab = 1201;
  wide.n_embd = 48;
  wide.bf16 = true;
  check(wide);
  Shape frozen;
  frozen.trainable = "wpe";
  frozen.bf16 = true;
  check(frozen);
  frozen.trainable = "all";
  check(frozen, 3);  // accumulated over calls
}

TEST(DirectPass, AFrozenModelTrainsTheTableOnly) {
  Shape s;
  s.trainable = "wpe";
  check(s);
  GPT model = make_model(s, 7);
  DirectPass pass(model);
  const Batch2 batch = batch_of(s, 5);
  pass.forward_backward(batch.x, batch.y, 1.0);
  for (const auto& p : model->named_parameters())
    EXPECT_EQ(p.value().grad().defined(), p.key() == "wpe.weight") << p.key();
}

TEST(DirectPass, GradientsAccumulateOverCallsAsAutogradsDo) {
  check(Shape{}, 3);
  Shape none;
  none.position = "none";
  none.bias = false;
  check(none, 2);
}

TEST(DirectPass, ItsBuffersServeAgainAfterTheGradientsAreDropped) {
  // As train_step_on drops the gradients after each update: the second step's gradients are the second batch's
  // alone, whatever the first left in the pass's buffers; and another batch shape makes new buffers.
  const Shape s;
  GPT a = make_model(s, 7), b = make_model(s, 7);
  DirectPass pass(b);
  KernelPathsGuard fused(default_kernel_paths(false));
  Batch2 first = batch_of(s, 1);
  pass.forward_backward(first.x, first.y, 1.0);
  for (auto& p : b->parameters()) p.mutable_grad() = torch::Tensor();
  for (int64_t T : {s.T, int64_t{5}}) {
    const Batch2 batch = batch_of(s, 2);
    const torch::Tensor x = batch.x.slice(1, 0, T), y = batch.y.slice(1, 0, T);
    a->forward_loss(x, y, 1.0).backward();
    pass.forward_backward(x, y, 1.0);
    expect_grads_close(a, b, "T " + std::to_string(T));
    for (auto& p : a->parameters()) p.mutable_grad() = torch::Tensor();
    for (auto& p : b->parameters()) p.mutable_grad() = torch::Tensor();
  }
}

TEST(DirectPass, SaysWhatItCannotRunAndRejectsBadIds) {
  Shape s;
  GPT model = make_model(s, 7);
  EXPECT_EQ(DirectPass::unsupported(model, false, torch::kCPU), "");
  {
    KernelPaths p = default_kernel_paths(false);
    p.bf16_products = "float";
    KernelPathsGuard guard(p);
    EXPECT_EQ(DirectPass::unsupported(model, true, torch::kCPU), "it runs bf16 with bf16_products=onednn only");
    p.bf16_products = "onednn";
    KernelPathsGuard onednn(p);
    EXPECT_EQ(DirectPass::unsupported(model, true, torch::kCPU), "");
  }
  EXPECT_EQ(DirectPass::unsupported(model, false, torch::Device(torch::kCUDA, 0)), "it runs on the CPU only");
  ModelConfig m = model->cfg;
  m.dropout = 0.1;
  GPT dropping(m, s.vocab);
  EXPECT_EQ(DirectPass::unsupported(dropping, false, torch::kCPU), "it runs without dropout only");
  dropping->eval();
  EXPECT_EQ(DirectPass::unsupported(dropping, false, torch::kCPU), "");

  DirectPass pass(model);
  const Batch2 batch = batch_of(s, 3);
  torch::Tensor x = batch.x.clone();
  x[1][4] = s.vocab;
  try {
    pass.forward_backward(x, batch.y, 1.0);
    ADD_FAILURE() << "an id outside the vocabulary was read";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("token id 13 at row 15 is outside the vocabulary [0, 13)"), std::string::npos)
        << e.what();
  }
  torch::Tensor y = batch.y.clone();
  y[0][0] = -1;
  EXPECT_THROW(pass.forward_backward(batch.x, y, 1.0), c10::Error);
  EXPECT_THROW(pass.forward_backward(batch.x.slice(1, 0, 5), batch.y, 1.0), c10::Error);  // shapes differ
}

}  // namespace
}  // namespace poslab
