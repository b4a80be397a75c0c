// AdamW whose step can run where the parameters are, with nothing read back to the host: LibTorch's multi-tensor
// kernel (at::_fused_adamw_, LibTorch 2.4 and later, on CPU and CUDA), each parameter's step count, the learning
// rate, the clipping scale and the skip flag being tensors on the parameters' device. On a GPU the host then only
// queues work, and a CUDA graph replays the step without freezing the counts or the rate (train/step_graph.h).
#pragma once

#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

namespace poslab {

// LibTorch's AdamW (its options, its state, its checkpoints) with device_step beside its own step. The moments are
// AdamW's own tensors; the step counts live on the device and are written back into each AdamWParamState when the
// optimizer is saved, and read from it again after a load, so a checkpoint is the same whichever step wrote it.
class DeviceAdamW : public torch::optim::AdamW {
 public:
  using torch::optim::AdamW::AdamW;

  // "" when this LibTorch has the fused kernel for `device`, else why not (LibTorch 1.x; 2.0-2.3 on the CPU).
  static std::string unsupported(const torch::Device& device);

  // One step of every parameter that has a gradient, each group with its options' betas, eps and weight decay, at
  // learning rate `lr` times the group's lr scale (set_lr_scales; 1 where unset): the gradient divided by grad_scale
  // first (undefined: 1; the caller's clipping), and the whole step skipped where skip is 1 (parameters, moments and
  // step counts unchanged). grad_scale and skip: 0-dim float32 tensors on the parameters' device. The gradients are
  // left divided.
  void device_step(double lr, const torch::Tensor& grad_scale, const torch::Tensor& skip) {
    set_lr(lr);
    device_step(grad_scale, skip);
  }
  // The same step at the learning rates set_lr wrote last. A CUDA graph captures this one: the rates are then its
  // inputs, written before each replay (a fill captured in the graph would replay the capture's rate).
  void device_step(const torch::Tensor& grad_scale, const torch::Tensor& skip);
  // Writes each group's learning rate, `lr` times the group's scale, into its tensor on the parameters' device (a
  // queued fill on a GPU: no wait).
  void set_lr(double lr);

  // Each group's learning rate as a multiple of device_step's `lr`, in param_groups' order (make_optimizer: wpe's
  // own group at train.position_lr_scale).
  void set_lr_scales(std::vector<double> scales) { lr_scales_ = std::move(scales); }

  // The step counts written into the state first (one read from the device per parameter).
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;

 private:
  // Each parameter's step count on its device (float32, as the kernel reads it), made from its AdamWParamState
  // at the first device_step after construction or a load.
  struct Steps {
    const torch::optim::OptimizerParamState* state = nullptr;  // the state the count belongs to
    torch::Tensor count;                                       // 0-dim float32
  };
  void write_steps_into_state() const;

  std::vector<Steps> steps_;        // per parameter, in param_groups' order
  std::vector<double> lr_scales_;   // per group; 1 past its end
  std::vector<torch::Tensor> lrs_;  // per group: 0-dim float32 on the parameters' device
};

}  // namespace poslab
