// Drivers: warm-up and measured iterations on every rank, result collection (in memory for
// threads; a byte gather to rank 0 for processes).
#include "pipelab/runtime/run.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <optional>
#include <type_traits>

#include "pipelab/base/error.h"
#include "pipelab/kernels/blas.h"
#include "pipelab/runtime/cpu_backend.h"
#include "pipelab/runtime/errors.h"
#include "pipelab/runtime/inproc_transport.h"
#include "pipelab/runtime/machine.h"
#include "pipelab/runtime/rank_threads.h"
#include "pipelab/runtime/run_support.h"
#include "pipelab/schedules/validate.h"

namespace pipelab::runtime {
namespace {

void check_runnable(const Schedule& s, const RunOptions& o) {
  if (o.iterations < 1) throw InputError("run: iterations=" + std::to_string(o.iterations) + " must be >= 1");
  if (o.warmup < 0) throw InputError("run: warmup=" + std::to_string(o.warmup) + " must be >= 0");
  if (s.shape.ranks > 1 && !s.has_comms()) {
    throw ScheduleError("run: schedule \"" + s.name + "\" has no SEND/RECV actions; lower it first (add_send_recv)");
  }
  if (o.validate) require_valid(s);
}

// What one rank brings home.
struct RankOutcome {
  std::vector<IterationRecord> records;  // measured iterations
  std::int64_t static_bytes = 0;
  std::vector<std::pair<int, std::vector<kernels::BlockGrads>>> grads;  // (stage, layers)
};

RankOutcome run_rank(const Schedule& s, int rank, Backend& backend, Transport& transport, const RunOptions& o) {
  RankOutcome out;
  RankExecutor ex(s, rank, backend, transport, o.executor);
  out.records.reserve(static_cast<std::size_t>(o.iterations));
  for (int it = 0; it < o.warmup + o.iterations; ++it) {
    backend.zero_grads();
    IterationRecord rec = ex.run_iteration();
    if (it >= o.warmup) out.records.push_back(std::move(rec));
  }
  out.static_bytes = backend.static_bytes();
  if (o.collect_gradients) {
    for (int stage : backend.stages()) out.grads.emplace_back(stage, backend.gradients(stage));
  }
  return out;
}

RunResult assemble(const Schedule& s, std::vector<RankOutcome>& ranks, int iterations) {
  RunResult r;
  const auto P = static_cast<std::size_t>(s.shape.ranks);
  r.iterations.resize(static_cast<std::size_t>(iterations));
  r.losses.assign(static_cast<std::size_t>(iterations), 0.0);
  r.peak_state_bytes.assign(P, 0);
  r.static_bytes.assign(P, 0);
  for (auto& t : r.iterations) t.ranks.resize(P);
  for (std::size_t rank = 0; rank < P; ++rank) {
    RankOutcome& o = ranks[rank];
    for (std::size_t it = 0; it < o.records.size() && it < r.iterations.size(); ++it) {
      r.iterations[it].ranks[rank] = std::move(o.records[it].events);
      r.losses[it] += o.records[it].loss;
      r.peak_state_bytes[rank] = std::max(r.peak_state_bytes[rank], o.records[it].peak_state_bytes);
    }
    r.static_bytes[rank] = o.static_bytes;
    for (auto& [stage, g] : o.grads) {
      if (r.stage_gradients.size() < static_cast<std::size_t>(s.shape.stages)) r.stage_gradients.resize(static_cast<std::size_t>(s.shape.stages));
      r.stage_gradients[static_cast<std::size_t>(stage)] = std::move(g);
    }
  }
  return r;
}

// ---- byte serialization of a RankOutcome (same binary on every rank) -------------------------

static_assert(std::is_trivially_copyable_v<TimelineEvent>);
static_assert(std::is_trivially_copyable_v<kernels::BlockShape>);

class Writer {
 public:
  template <class T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    bytes.insert(bytes.end(), p, p + sizeof(T));
  }
  template <class T>
  void put_array(const T* data, std::size_t n) {
    put<std::uint64_t>(n);
    const auto* p = reinterpret_cast<const std::byte*>(data);
    bytes.insert(bytes.end(), p, p + n * sizeof(T));
  }
  std::vector<std::byte> bytes;
};

class Reader {
 public:
  explicit Reader(const std::vector<std::byte>& b) : b_(b) {}
  template <class T>
  T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  template <class T>
  std::vector<T> get_array() {
    const auto n = get<std::uint64_t>();
    need(n * sizeof(T));
    std::vector<T> v(n);
    if (n > 0) std::memcpy(v.data(), b_.data() + pos_, n * sizeof(T));
    pos_ += n * sizeof(T);
    return v;
  }

 private:
  void need(std::size_t n) const {
    if (pos_ + n > b_.size()) throw ExecutionError("run: truncated result from a rank");
  }
  const std::vector<std::byte>& b_;
  std::size_t pos_ = 0;
};

std::vector<std::byte> serialize(const RankOutcome& o) {
  Writer w;
  w.put<std::uint64_t>(o.records.size());
  for (const IterationRecord& rec : o.records) {
    w.put_array(rec.events.data(), rec.events.size());
    w.put(rec.loss);
    w.put(rec.peak_state_bytes);
  }
  w.put(o.static_bytes);
  w.put<std::uint64_t>(o.grads.size());
  for (const auto& [stage, layers] : o.grads) {
    w.put<std::int32_t>(stage);
    w.put<std::uint64_t>(layers.size());
    for (const kernels::BlockGrads& g : layers) {
      w.put(g.shape);
      for (const auto& t : g.tensors()) w.put_array(t.data.data(), t.data.size());
    }
  }
  return std::move(w.bytes);
}

RankOutcome deserialize(const std::vector<std::byte>& bytes) {
  Reader r(bytes);
  RankOutcome o;
  const auto n = r.get<std::uint64_t>();
  for (std::uint64_t i = 0; i < n; ++i) {
    IterationRecord rec;
    rec.events = r.get_array<TimelineEvent>();
    rec.loss = r.get<double>();
    rec.peak_state_bytes = r.get<std::int64_t>();
    o.records.push_back(std::move(rec));
  }
  o.static_bytes = r.get<std::int64_t>();
  const auto stages = r.get<std::uint64_t>();
  for (std::uint64_t i = 0; i < stages; ++i) {
    const int stage = r.get<std::int32_t>();
    const auto layers = r.get<std::uint64_t>();
    std::vector<kernels::BlockGrads> grads;
    for (std::uint64_t l = 0; l < layers; ++l) {
      kernels::BlockGrads g = kernels::zero_params<float>(r.get<kernels::BlockShape>());
      for (auto& t : g.tensors()) {
        const std::vector<float> v = r.get_array<float>();
        if (v.size() != t.data.size()) throw ExecutionError("run: gradient tensor size mismatch from a rank");
        std::copy(v.begin(), v.end(), t.data.begin());
      }
      grads.push_back(std::move(g));
    }
    o.grads.emplace_back(stage, std::move(grads));
  }
  return o;
}

}  // namespace

std::size_t RunResult::median_iteration() const {
  if (iterations.empty()) return 0;
  std::vector<std::pair<std::int64_t, std::size_t>> order;
  for (std::size_t i = 0; i < iterations.size(); ++i) order.emplace_back(iterations[i].makespan_ns(), i);
  std::sort(order.begin(), order.end());
  return order[(order.size() - 1) / 2].second;
}

RunResult run_inprocess(const Schedule& lowered, const BackendFactory& make_backend, const RunOptions& options,
                        const TransportWrapper& wrap) {
  check_runnable(lowered, options);
  const int P = lowered.shape.ranks;
  const int cores = hardware_cores();
  const bool pin = options.pin_threads && P <= cores;
  // Destruction order matters: the world (mailboxes holding buffers) goes before the backends
  // (whose pools own the memory).
  std::vector<std::unique_ptr<Backend>> backends(static_cast<std::size_t>(P));
  std::vector<RankOutcome> outcomes(static_cast<std::size_t>(P));
  {
    InprocWorld world(lowered.shape, options.wait, cores);
    run_on_rank_threads(world, pin, [&](int r) {
      const auto i = static_cast<std::size_t>(r);
      backends[i] = make_backend(r);
      if (!wrap) {
        outcomes[i] = run_rank(lowered, r, *backends[i], world.transport(r), options);
        return;
      }
      const std::unique_ptr<Transport> device_transport = wrap(r, world.transport(r), *backends[i]);
      outcomes[i] = run_rank(lowered, r, *backends[i], *device_transport, options);
    });
  }
  return assemble(lowered, outcomes, options.iterations);
}

RunResult run_cpu_inprocess(const Schedule& lowered, const ModelConfig& model, const RunOptions& options) {
  model.validate();
  require_host_memory(cpu_run_memory_bytes(lowered, model, 0, lowered.shape.ranks), "run");
  kernels::set_blas_threads(1);
  return run_inprocess(
      lowered, [&](int rank) { return std::make_unique<CpuBackend>(model, lowered.shape, rank); }, options);
}

RunResult run_distributed(const Schedule& lowered, Backend& backend, Transport& transport, const RunOptions& options) {
  check_runnable(lowered, options);
  const int rank = transport.rank();
  RankOutcome mine;
  std::exception_ptr failure;
  try {
    mine = run_rank(lowered, rank, backend, transport, options);
  } catch (const PeerAborted&) {
    failure = std::current_exception();
  } catch (const std::exception& e) {
    failure = std::current_exception();
    transport.abort(e.what());
  }
  // Every rank reaches this point, failed or not: a healthy rank may still be computing and a stuck
  // one ends through its own watchdog, so the agreement waits without a deadline of its own.
  const auto timeout = std::chrono::duration_cast<std::chrono::nanoseconds>(options.executor.timeout);
  const bool any = transport.any_failed(failure != nullptr, std::chrono::hours(24 * 365));
  if (failure) std::rethrow_exception(failure);
  if (any) {
    transport.check_abort();  // throws PeerAborted with the failing rank's message when it arrived
    throw PeerAborted("rank " + std::to_string(rank) + " finished, but another rank failed");
  }
  const std::vector<std::byte> bytes = serialize(mine);
  std::vector<std::vector<std::byte>> all = transport.gather(bytes, timeout);
  if (rank != 0) return {};
  std::vector<RankOutcome> outcomes;
  outcomes.reserve(all.size());
  for (const auto& b : all) outcomes.push_back(deserialize(b));
  return assemble(lowered, outcomes, options.iterations);
}

RunResult run_cpu_distributed(const Schedule& lowered, const ModelConfig& model, const TransportFactory& make_transport,
                              const RunOptions& options) {
  model.validate();
  kernels::set_blas_threads(1);
  // Declared before the transport, so destroyed after it: the transport may hold buffers of the
  // backend's pool until it is destroyed (sends abandoned after a failure).
  std::optional<CpuBackend> backend;
  const std::unique_ptr<Transport> transport = make_transport();
  if (!transport) throw InputError("run: the transport factory made no transport");
  const int rank = transport->rank();
  // Processes may each be bound to one core by the launcher: count the node's cores.
  require_host_memory(cpu_run_memory_bytes(lowered, model, rank, 1), "run (rank " + std::to_string(rank) + ")");
  if (options.pin_threads && lowered.shape.ranks <= online_cores()) pin_current_thread(rank);
  backend.emplace(model, lowered.shape, rank);  // after pinning: first-touch memory near the rank's core
  return run_distributed(lowered, *backend, *transport, options);
}

}  // namespace pipelab::runtime
