// MeasuredProfile: what `pipelab profile` measured on a backend (per-layer and per-stage op times
// of the mock model, point-to-point latency and bandwidth), read by the simulator's profiled cost
// model. JSON format "pipelab.profile", version 1 (docs/runtime.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "pipelab/base/limits.h"

namespace pipelab {

/// Median times of one microbatch, in ns.
struct OpTimes {
  std::int64_t f_ns = 0;   // forward
  std::int64_t i_ns = 0;   // input gradient
  std::int64_t w_ns = 0;   // weight gradient
  std::int64_t b_ns = 0;   // full backward (I then W, measured as one)
  std::int64_t fb_ns = 0;  // an F&B unit: F of one microbatch then B of another, measured as one
  bool operator==(const OpTimes&) const = default;
};

struct P2PSample {
  std::int64_t bytes = 0;
  std::int64_t ns = 0;  // one-way time (median round trip / 2)
  bool operator==(const P2PSample&) const = default;
};

/// The P2P bandwidths a profile may state besides 0 (not measured), B/s: what the loader accepts and
/// the fit writes.
inline constexpr double kMinP2PBandwidth = 1e3, kMaxP2PBandwidth = 1e15;

struct P2PProfile {
  std::string transport;                // "inproc", "mpi", ... ("" = not measured)
  std::int64_t latency_ns = 0;          // time of an empty message
  double bandwidth_bytes_per_s = 0;     // 0 = no size-dependent term measured (time ~ latency)
  std::vector<P2PSample> samples;

  /// latency + bytes / bandwidth (header-only, so the simulator needs no profiles symbols), saturated
  /// at limits::kMaxDurationNs + 1 (which the simulator refuses) instead of overflowing.
  std::int64_t time_ns(std::int64_t bytes) const {
    const double transfer = bandwidth_bytes_per_s > 0 ? static_cast<double>(bytes) * 1e9 / bandwidth_bytes_per_s : 0.0;
    return limits::saturated_ns(static_cast<double>(latency_ns) + transfer);
  }
  bool operator==(const P2PProfile&) const = default;
};

struct MeasuredProfile {
  static constexpr std::string_view kFormat = "pipelab.profile";
  static constexpr int kVersion = 1;

  std::string backend = "cpu";  // backend that was measured
  std::string device;           // CPU model or GPU name
  int threads_per_rank = 1;     // BLAS threads per rank during the measurement
  int concurrency = 1;          // ranks measuring at the same time (each on its own core)

  // The mock model (kernels::BlockShape fields) and the stage size measured.
  int hidden = 0;
  int ffn = 0;
  int heads = 0;
  int seq = 0;
  int mbs = 0;
  bool swiglu = false;
  int layers_per_stage = 1;

  int repeats = 0;
  int warmup = 0;

  OpTimes per_layer;            // one block
  OpTimes per_stage;            // layers_per_stage blocks, measured as one stage
  std::int64_t loss_ns = 0;     // MSE loss and its gradient at the last stage, per microbatch
  double flops_f = 0;           // GEMM FLOPs of one block, one microbatch, per pass
  double flops_i = 0;
  double flops_w = 0;
  std::int64_t activation_bytes = 0;  // bytes crossing a stage boundary per microbatch

  P2PProfile p2p;

  bool operator==(const MeasuredProfile&) const = default;
};

nlohmann::json to_json(const MeasuredProfile& p);
/// Strict: unknown keys, wrong types, missing keys or another format/version throw InputError naming
/// the key and `context`.
MeasuredProfile measured_profile_from_json(const nlohmann::json& j, std::string_view context);
MeasuredProfile parse_measured_profile(std::string_view json_text, std::string_view context);
/// Reads a file (InputError when unreadable or malformed).
MeasuredProfile load_measured_profile(const std::string& path);
/// Writes pretty JSON (InputError when the file cannot be written).
void save_measured_profile(const MeasuredProfile& p, const std::string& path);

}  // namespace pipelab
