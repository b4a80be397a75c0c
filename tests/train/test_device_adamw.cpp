// The step on the device (LibTorch's fused AdamW, train/device_adamw.h) against poslab's own CPU step, its skip, and
// its step counts through a checkpoint. Where this LibTorch has no fused kernel (Debian's 1.13) the tests check the
// error that says so, and the step's comparison runs in the pip leg (LibTorch 2.x).
#include <gtest/gtest.h>

#include <sstream>

#include "model/gpt.h"
#include "test_devices.h"
#include "test_util.h"
#include "train/optim.h"
#include "util/error.h"

namespace poslab {
namespace {

ModelConfig device_step_model() {
  ModelConfig m;
  m.n_layer = 1;
  m.n_head = 2;
  m.n_embd = 16;
  m.block_size = 8;
  return m;
}

TrainConfig device_step_train_config() {
  TrainConfig t;
  t.weight_decay = 0.1;
  t.lr = 3e-3;
  t.grad_clip = 0.05;  // below the gradients' norm: every step clips
  return t;
}

void copy_device_step_parameters(const GPT& from, GPT& to) {
  torch::NoGradGuard no_grad;
  const auto src = from->parameters(), dst = to->parameters();
  for (size_t i = 0; i < src.size(); ++i) dst[i].copy_(src[i]);
}

const torch::optim::AdamWParamState& adamw_state_of(torch::optim::AdamW& opt, const torch::Tensor& p) {
  return static_cast<const torch::optim::AdamWParamState&>(*opt.state().at(optimizer_state_key(p)));
}

// One device step as train_step_on takes it: the clip as grad_scale, no skip.
void clipped_device_step(DeviceAdamW& opt, const TrainConfig& t, double lr) {
  const torch::Tensor norm = grad_norm_on_device(opt);
  opt.device_step(lr, torch::clamp_min((norm + 1e-6) / t.grad_clip, 1.0), torch::zeros_like(norm));
}

class DeviceAdamWOnDevice : public test::OnDevice {
 protected:
  void SetUp() override {
    test::OnDevice::SetUp();
    if (IsSkipped()) return;
    unsupported_ = DeviceAdamW::unsupported(device());
  }
  std::string unsupported_;
};

// Where there is no fused kernel, asking for it is an error naming the key, the reason and what to do.
TEST_P(DeviceAdamWOnDevice, AskedForWhereItCannotRunItSaysWhy) {
  TrainConfig t;
  t.adamw = "fused";
  if (unsupported_.empty()) {
    EXPECT_TRUE(adamw_on_device(t, device()));
    t.adamw = "auto";
    EXPECT_EQ(adamw_on_device(t, device()), is_cuda()) << "auto: on the device on CUDA only";
    t.adamw = "poslab";
    EXPECT_FALSE(adamw_on_device(t, device()));
    return;
  }
  std::cout << "[ info ] this LibTorch has no fused AdamW (" << unsupported_ << "): its error is what is tested\n";
  const std::string msg = test::error_of([&] { adamw_on_device(t, device()); });
  EXPECT_NE(msg.find("train.adamw = fused: "), std::string::npos) << msg;
  EXPECT_NE(msg.find("LibTorch 2.4 or later"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--libtorch pip"), std::string::npos) << msg;
  t.adamw = "auto";
  EXPECT_FALSE(adamw_on_device(t, device()));
}

// Two copies of one model, six clipped steps: poslab's CPU step (fused_adamw_step, the norm read on the host) and
// the device step (the norm, the clip and the update on the device). The same parameters to float rounding (the
// clip multiplies there and divides here), the same norms, and the step counts in AdamW's state once saved.
TEST_P(DeviceAdamWOnDevice, FollowsPoslabsStepWithClipping) {
  if (!unsupported_.empty())
    GTEST_SKIP() << "no fused AdamW in this LibTorch (" << unsupported_ << "): the pip leg runs it";
  for (const double position_lr_scale : {1.0, 4.0}) {  // 4: the table in a group of its own, at 4x the lr
    TrainConfig t = device_step_train_config();
    t.position_lr_scale = position_lr_scale;
    torch::manual_seed(3);
    GPT a(device_step_model(), 20), b(device_step_model(), 20);
    copy_device_step_parameters(a, b);
    b->to(device());
    auto opt_a = make_optimizer(a, t), opt_b = make_optimizer(b, t);
    const auto idx = torch::randint(0, 20, {4, 8}, torch::kLong);
    for (int step = 0; step < 6; ++step) {
      const double lr = t.lr * (step + 1) / 6;  // a learning rate that changes, as in warmup
      set_optimizer_hparams(*opt_a, lr, t);
      set_optimizer_hparams(*opt_b, lr, t);
      GPTImpl::loss(a->forward(idx), idx.roll(1, 1)).backward();
      GPTImpl::loss(b->forward(idx.to(device())), idx.roll(1, 1).to(device())).backward();
      const double norm_a = grad_norm(*opt_a);
      const double norm_b = grad_norm_on_device(*opt_b).item<double>();
      EXPECT_NEAR(norm_b, norm_a, 1e-5 * norm_a) << "step " << step;
      EXPECT_GT(norm_a, t.grad_clip) << "the test means to clip";
      fused_adamw_step(*opt_a, std::min(1.0, t.grad_clip / (norm_a + 1e-6)));
      clipped_device_step(*opt_b, t, lr);
      opt_a->zero_grad();
      opt_b->zero_grad();
    }
    const auto names = a->named_parameters().keys();
    for (size_t i = 0; i < names.size(); ++i) {
      const torch::Tensor pa = a->parameters()[i], pb = b->parameters()[i].cpu();
      // atol 1e-6 as in Optim.FusedStepMatchesLibTorchsAdamWWithClipping: a wrong update is off by ~lr = 3e-3.
      EXPECT_TRUE(torch::allclose(pa, pb, 1e-5, 1e-6)) << names[i] << " at position_lr_scale " << position_lr_scale
                                                       << ": max |diff| " << (pa - pb).abs().max().item<double>();
    }
    torch::serialize::OutputArchive archive;
    opt_b->save(archive);  // writes the device's step counts into the state
    for (const auto& p : b->parameters()) EXPECT_EQ(adamw_state_of(*opt_b, p).step(), 6);
  }
}

// A step flagged as skipped (a non-finite loss or norm) changes no parameter, moment or step count.
TEST_P(DeviceAdamWOnDevice, ASkippedStepChangesNothing) {
  if (!unsupported_.empty())
    GTEST_SKIP() << "no fused AdamW in this LibTorch (" << unsupported_ << "): the pip leg runs it";
  const TrainConfig t = device_step_train_config();
  torch::manual_seed(5);
  GPT model(device_step_model(), 20);
  model->to(device());
  auto opt = make_optimizer(model, t);
  const auto idx = torch::randint(0, 20, {2, 8}, torch::kLong).to(device());
  GPTImpl::loss(model->forward(idx), idx).backward();
  clipped_device_step(*opt, t, t.lr);  // one real step: moments and counts exist
  opt->zero_grad();
  std::vector<torch::Tensor> before, m, v;
  for (const auto& p : model->parameters()) {
    before.push_back(p.detach().clone());
    m.push_back(adamw_state_of(*opt, p).exp_avg().clone());
    v.push_back(adamw_state_of(*opt, p).exp_avg_sq().clone());
  }
  GPTImpl::loss(model->forward(idx), idx).backward();
  model->wte->weight.mutable_grad()[0][0] = NAN;
  const torch::Tensor norm = grad_norm_on_device(*opt);
  EXPECT_TRUE(std::isnan(norm.item<double>()));
  const torch::Tensor skip = torch::logical_not(torch::isfinite(norm)).to(torch::kFloat32);
  opt->device_step(t.lr, torch::clamp_min((norm + 1e-6) / t.grad_clip, 1.0), skip);
  torch::serialize::OutputArchive archive;
  opt->save(archive);
  const auto params = model->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_TRUE(torch::equal(params[i], before[i])) << i;
    EXPECT_TRUE(torch::equal(adamw_state_of(*opt, params[i]).exp_avg(), m[i])) << i;
    EXPECT_TRUE(torch::equal(adamw_state_of(*opt, params[i]).exp_avg_sq(), v[i])) << i;
    EXPECT_EQ(adamw_state_of(*opt, params[i]).step(), 1) << i;
  }
}

// Saved after 3 steps and loaded into a fresh optimizer (and model), the next 3 steps equal the uninterrupted
// optimizer's bit for bit: the counts travel through AdamWParamState::step.
TEST_P(DeviceAdamWOnDevice, ItsStateResumesBitForBit) {
  if (!unsupported_.empty())
    GTEST_SKIP() << "no fused AdamW in this LibTorch (" << unsupported_ << "): the pip leg runs it";
  const TrainConfig t = device_step_train_config();
  torch::manual_seed(7);
  GPT a(device_step_model(), 20), b(device_step_model(), 20);
  a->to(device());
  b->to(device());
  auto opt_a = make_optimizer(a, t);
  const auto idx = torch::randint(0, 20, {4, 8}, torch::kLong).to(device());
  auto step = [&](GPT& m, DeviceAdamW& opt, int i) {
    GPTImpl::loss(m->forward(idx), idx.roll(i + 1, 1)).backward();
    clipped_device_step(opt, t, t.lr / (i + 1));
    opt.zero_grad();
  };
  for (int i = 0; i < 3; ++i) step(a, *opt_a, i);
  std::stringstream buffer;
  {
    torch::serialize::OutputArchive archive;
    opt_a->save(archive);
    archive.save_to(buffer);
  }
  copy_device_step_parameters(a, b);
  auto opt_b = make_optimizer(b, t);
  {
    torch::serialize::InputArchive archive;
    archive.load_from(buffer, device());
    opt_b->load(archive);
  }
  for (const auto& p : b->parameters()) EXPECT_EQ(adamw_state_of(*opt_b, p).step(), 3);
  for (int i = 3; i < 6; ++i) {
    step(a, *opt_a, i);
    step(b, *opt_b, i);
  }
  const auto names = a->named_parameters().keys();
  for (size_t i = 0; i < names.size(); ++i)
    EXPECT_TRUE(torch::equal(a->parameters()[i], b->parameters()[i])) << names[i];
}

POSLAB_ON_EVERY_DEVICE(DeviceAdamWOnDevice);

}  // namespace
}  // namespace poslab
