// Profiling for the profiled cost model: per-layer and per-stage F, I, W, B and F&B times of the
// mock model on the cpu backend (median of repeats after warm-up), the loss, and the one-way time of
// point-to-point messages over a transport.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "pipelab/kernels/device_block.h"
#include "pipelab/profiles/measured_profile.h"
#include "pipelab/runtime/backend.h"
#include "pipelab/runtime/transport.h"

namespace pipelab::runtime {

struct ProfileOptions {
  ModelConfig model;
  int repeats = 20;   // timed repetitions per op and thread (the median of all is kept)
  int warmup = 3;     // untimed repetitions first...
  std::chrono::milliseconds min_warmup{300};  // ...and at least this long
  /// Threads measuring at the same time, one per core (capped at the cores): the load of a run whose
  /// ranks keep that many cores busy. 1 measures on the calling thread.
  int concurrency = 1;
  int core = 0;       // concurrency 1: pin the calling thread to this core; -1 = do not pin
  /// Called after each measured op with a short label, for progress output.
  std::function<void(const char* what)> on_progress;
};

/// Compute part of a profile (p2p left empty): backend "cpu", the model, per-layer and per-stage
/// op times and FLOPs, loss time, activation bytes. BLAS runs one thread per measuring thread.
MeasuredProfile measure_compute(const ProfileOptions& options);

/// A profile's header from the options it is measured with: backend, concurrency, the mock block's
/// shape, repeats and warmup (every backend's profile starts from this).
MeasuredProfile profile_header(const ProfileOptions& options, std::string backend, int concurrency);

/// Message sizes a profile measures for a model: 8 bytes, the activation, and 4x the activation.
std::vector<std::int64_t> p2p_sizes(std::int64_t activation_bytes);

/// Fits latency_ns and bandwidth_bytes_per_s of `p` to its samples (least squares; latency only
/// when the time does not grow with size).
void fit_p2p_line(P2PProfile& p);

/// Ping-pong between ranks 0 and 1 of `transport`; every rank calls it (ranks >= 2 only wait at the
/// barriers). One-way time per size = median round trip / 2; latency and bandwidth are the
/// least-squares line through (bytes, time). Meaningful on rank 0.
P2PProfile measure_p2p(Transport& transport, BufferPool& pool, std::span<const std::int64_t> sizes,
                                 int repeats, std::chrono::nanoseconds timeout);

/// measure_p2p between two threads of this process over the in-process transport.
P2PProfile measure_inproc_p2p(std::span<const std::int64_t> sizes, int repeats, WaitPolicy wait = WaitPolicy::Auto,
                              std::chrono::nanoseconds timeout = std::chrono::seconds(60));

/// How measure_profile measures point-to-point messages.
struct P2PProfileOptions {
  bool enabled = true;  // false: leave MeasuredProfile::p2p empty (a one-rank run sends nothing)
  int repeats = 20;     // timed round trips per message size
  std::chrono::nanoseconds timeout = std::chrono::seconds(60);  // watchdog of every P2P wait
  WaitPolicy wait = WaitPolicy::Auto;                           // in-process transport
  /// One process per rank (MPI): makes this process's endpoint, and every process calls
  /// measure_profile. Empty: the ranks are threads of this process.
  TransportFactory transport;
};

/// How `pipelab profile --backend cuda` measures.
struct CudaProfileOptions {
  kernels::GemmMath math = kernels::GemmMath::Bf16;
  int device = 0;
  /// Ranks that will share the device in the runs this profile predicts (single-GPU mode): the
  /// ops are measured on one rank's SM group, as those runs get it. 1: the whole GPU.
  int ranks_on_device = 1;
  bool partition_sms = true;
};

/// A profile measured on a GPU by running the mock model through the cuda backend and the
/// executor (device-event timed, so exactly what a run records): F and B from interleaved 1F1B,
/// I and W from interleaved ZB-H1, F&B from DualPipeV, each on one rank holding two stages (the
/// loss is the difference of the last and an inner stage's F), medians over `options.repeats`
/// iterations after `options.warmup`. With ranks_on_device > 1 every rank's SM group runs the
/// pipelines at once, as a single-GPU run loads the device, and the samples of all are pooled. P2P: device-to-device copies of p2p_sizes (the single-GPU
/// mode transport). backend "cuda", device named after the GPU and its SM share.
MeasuredProfile measure_cuda_profile(const ProfileOptions& options, const CudaProfileOptions& cuda);

/// The whole profile a run is predicted from: compute (measure_compute) and the P2P cost of the
/// message sizes p2p_sizes(model activation) (measure_p2p).
/// - Threads (no transport factory): compute on `compute.concurrency` cores at once, then a
///   ping-pong between two threads over the in-process transport.
/// - Processes (a factory): every process measures compute at the same time on its own core, as
///   the ranks of a run keep every core busy (concurrency 1; pinned to the core of its rank when
///   compute.core >= 0 and the node has a core per process), between barriers; then ranks 0 and 1
///   ping-pong. Rank 0's profile is the one to keep. A rank that fails tells the others (they stop
///   with PeerAborted instead of waiting at a barrier).
/// The transport and the pool of its messages live inside the call, the pool outliving the transport.
MeasuredProfile measure_profile(const ProfileOptions& compute, const P2PProfileOptions& p2p);

}  // namespace pipelab::runtime
