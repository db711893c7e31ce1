// Drivers: run a lowered schedule for some iterations on every rank, in-process (a thread per rank)
// or distributed (this process is one rank of a multi-process transport), and collect the measured
// timelines, losses, memory and gradients.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "pipelab/kernels/block.h"
#include "pipelab/runtime/backend.h"
#include "pipelab/runtime/executor.h"
#include "pipelab/runtime/transport.h"
#include "pipelab/schedules/schedule.h"
#include "pipelab/schedules/timeline.h"

namespace pipelab::runtime {

struct RunOptions {
  int warmup = 0;       // iterations run and discarded
  int iterations = 1;   // iterations measured
  ExecutorOptions executor;
  bool pin_threads = true;             // rank r's thread on core r when ranks <= cores (in-process, run_cpu_distributed)
  WaitPolicy wait = WaitPolicy::Auto;  // in-process transport
  bool validate = true;                // require_valid(schedule) first
  bool collect_gradients = false;      // fill RunResult::stage_gradients after the last iteration
};

struct RunResult {
  std::vector<Timeline> iterations;              // measured iterations, in order
  std::vector<double> losses;                    // per measured iteration (mean over microbatches)
  std::vector<std::int64_t> peak_state_bytes;    // per rank, max over measured iterations
  std::vector<std::int64_t> static_bytes;        // per rank: weights + gradient accumulators
  /// Per stage (index = stage), one BlockGrads per layer, after the last iteration.
  std::vector<std::vector<kernels::BlockGrads>> stage_gradients;
  /// GPU runs with CUPTI tracing: the kernels and copies of the median iteration's actions.
  std::vector<DeviceActivity> device_activity;

  /// Index of the iteration whose makespan is the median (the lower middle for an even count).
  std::size_t median_iteration() const;
};

/// Makes rank r's backend. Called on rank r's thread (so first-touch memory lands near its core).
using BackendFactory = std::function<std::unique_ptr<Backend>(int rank)>;

/// A device transport over rank r's in-process endpoint (which keeps the barrier, hand-over, abort
/// and gather), made on rank r's thread after its backend. Empty: the in-process endpoint itself.
using TransportWrapper = std::function<std::unique_ptr<Transport>(int rank, Transport& inproc, Backend& backend)>;

/// Runs every rank as a thread of this process over an InprocWorld. The first rank error is
/// rethrown after all threads stopped (the others stop with PeerAborted, which is dropped).
RunResult run_inprocess(const Schedule& lowered, const BackendFactory& make_backend, const RunOptions& options,
                        const TransportWrapper& wrap = {});

/// run_inprocess with CpuBackends of `model`.
RunResult run_cpu_inprocess(const Schedule& lowered, const ModelConfig& model, const RunOptions& options);

/// Runs this process's rank (transport.rank()) of a multi-process run. Rank 0 returns the full
/// result (timelines, memory and gradients of every rank); the other ranks return an empty result.
/// Every rank throws when any rank failed (the failing rank its own error, the others PeerAborted).
RunResult run_distributed(const Schedule& lowered, Backend& backend, Transport& transport, const RunOptions& options);

/// run_distributed with a CpuBackend of `model` for this process's rank, over the transport
/// `make_transport` makes (e.g. `[&] { return mpi.transport(lowered.shape); }`). It owns both, and
/// the backend (with its buffer pool) outlives the transport, which after a failure may hold the
/// buffers of sends it could not take back until it is destroyed. With options.pin_threads the
/// calling thread is pinned to core `rank` first when the node has a core per rank.
RunResult run_cpu_distributed(const Schedule& lowered, const ModelConfig& model, const TransportFactory& make_transport,
                              const RunOptions& options);

}  // namespace pipelab::runtime
