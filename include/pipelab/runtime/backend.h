// The device interface of the runtime: what a backend (cpu, cuda) must provide so the shared
// executor can run a schedule on it. A backend holds the stages of one rank, their weights and
// gradient accumulators, and the per-microbatch state between F, I and W (MicrobatchStates);
// activations live in Buffers from its pool. Everything else (order, dependencies, transports,
// the timeline) is the executor's. An asynchronous backend (cuda) times its actions on the device
// through a DeviceClock instead of the host clock.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pipelab/kernels/block.h"
#include "pipelab/kernels/shape.h"
#include "pipelab/runtime/buffer.h"
#include "pipelab/runtime/device_clock.h"
#include "pipelab/schedules/action.h"
#include "pipelab/schedules/schedule.h"

namespace pipelab::runtime {

/// The mock model a run executes: blocks of `block`'s shape, `layers_per_stage` per virtual stage,
/// weights of global layer l = init_params(block, layer_seed(seed, l)). Synthetic inputs and targets
/// use the same seed, so a run and the single-device reference see the same model and data.
struct ModelConfig {
  static constexpr int kMaxLayersPerStage = 1024;  // as --layers-per-stage accepts

  kernels::BlockShape block;
  int layers_per_stage = 1;
  std::uint64_t seed = 1;

  /// Throws InputError naming the field when the shape or layer count is invalid.
  void validate() const;
  /// Bytes of one activation (and of one gradient) crossing a stage boundary.
  std::int64_t activation_bytes() const;
  bool operator==(const ModelConfig&) const = default;
};

/// GEMM FLOPs of a compute action (F, B, I, W, or an F&B unit) on stages of `model`; 0 otherwise.
double action_flops(const ModelConfig& model, const Action& a);

/// One rank's compute device. Not thread-safe: one executor thread drives it.
class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string_view name() const = 0;
  /// Where activation buffers of this rank live.
  virtual BufferPool& pool() = 0;
  /// Size of every activation / gradient buffer.
  virtual std::size_t activation_bytes() const = 0;
  /// Stages this backend holds (the rank's stages, ascending).
  virtual const std::vector<int>& stages() const = 0;

  /// Called once per iteration before its inputs are loaded (untimed).
  virtual void begin_iteration() {}
  /// Writes the synthetic input of microbatch `mb` (for the first stage of its chain) into `act`.
  /// Called before the timed iteration (data loading is not part of the schedule).
  virtual void load_input(int mb, Buffer& act) = 0;
  /// F: act = stage(act) in place; keeps what the backward of (stage, mb) needs.
  virtual void forward(int stage, int mb, Buffer& act) = 0;
  /// At the last stage of a chain, after F: act := d loss / d out (MSE to the seeded target, scaled
  /// by 1/microbatches); returns the microbatch's loss.
  virtual double loss(int stage, int mb, Buffer& act) = 0;
  /// I: grad = d stage / d input applied to grad, in place; keeps what W needs.
  virtual void backward_input(int stage, int mb, Buffer& grad) = 0;
  /// W: accumulates the weight gradients of (stage, mb).
  virtual void backward_weight(int stage, int mb) = 0;
  /// B: I then W.
  virtual void backward(int stage, int mb, Buffer& grad) = 0;
  /// GEMM FLOPs of a compute action on this backend's model (recorded in the timeline).
  virtual double flops(const Action& a) const = 0;
  /// Waits for queued work (asynchronous devices) so the host clock can be read. CPU: no-op.
  virtual void synchronize() {}

  /// The device clock of an asynchronous backend; nullptr (cpu): actions are timed by the host
  /// around their calls, which return when the work is done.
  virtual DeviceClock* clock() { return nullptr; }
  /// With a clock: the executor calls begin_action before the compute calls of a compute action
  /// (F, I, W, B or an F&B unit) and end_action after them; they enqueue the action's start and end
  /// markers. An F&B unit's backward half may run on a second stream between the two.
  virtual DeviceClock::Token begin_action(const Action& /*unit*/) { return DeviceClock::kNone; }
  virtual DeviceClock::Token end_action(const Action& /*unit*/) { return DeviceClock::kNone; }
  /// After an iteration's last action and the transport's flush: waits for the device and returns
  /// the loss computed on the device (added to what loss() returned; the cpu returns it there).
  virtual double finish_iteration() { return 0; }

  virtual void zero_grads() = 0;
  /// Host copies of a held stage's gradient accumulators, one per layer.
  virtual std::vector<kernels::BlockGrads> gradients(int stage) const = 0;
  /// Bytes of per-microbatch state (forward-saved tensors and weight-grad stashes) held now.
  virtual std::int64_t state_bytes() const = 0;
  /// Bytes of weights and gradient accumulators.
  virtual std::int64_t static_bytes() const = 0;
  /// Per-microbatch state still held, as "(stage 0, mb 3): forward state" lines; empty when none.
  virtual std::vector<std::string> held_state() const = 0;
  /// Frees all per-microbatch state (after a failed iteration).
  virtual void discard_state() = 0;
};

}  // namespace pipelab::runtime
