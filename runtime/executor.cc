// The executor: one rank's list of a lowered schedule, in order. Prerequisites come from
// schedules/dependencies.h (CommMode::Explicit): a signal of this rank's own stage is checked, one
// of another stage on this rank is a local hand-off of its buffer, SENT_F/SENT_B of another rank
// is a wait for the matching message. All per-iteration storage is sized at construction.
#include "pipelab/runtime/executor.h"

#include <algorithm>
#include <string>

#include "pipelab/base/error.h"
#include "pipelab/runtime/errors.h"
#include "pipelab/schedules/dependencies.h"

namespace pipelab::runtime {

struct RankExecutor::Impl {
  const Schedule& schedule;
  const PipelineShape& shape;
  int rank;
  Backend& backend;
  Transport& transport;
  ExecutorOptions options;
  const std::vector<Slot>& list;
  SignalIndex signals;
  MessageIndex messages;
  std::int64_t act_bytes;

  // Per iteration, indexed by SignalIndex: done[] = signal holds on this rank; held[] = the buffer
  // a completed action left for its consumer (Forward: the activation, InputGrad: the input
  // gradient). The loss gradient an F at a chain's last stage leaves for its I/B has its own slot
  // per (stage, mb) in loss_grad[].
  std::vector<std::uint8_t> done;
  std::vector<Buffer> held;
  std::vector<Buffer> loss_grad;            // per (stage, mb): stage * microbatches + mb
  std::vector<Buffer> inputs;               // per microbatch: loaded input of a first stage
  std::vector<std::uint8_t> posted;         // per message: RECV posted, not yet consumed
  std::vector<std::int32_t> send_event;     // per message: index of its Send event, -1 if none
  std::vector<double> flops;                // per list position
  std::vector<TimelineEvent> events;
  std::size_t event_capacity = 0;
  // Events of a device-timed rank whose times are markers resolved after the iteration.
  struct DeviceTimed {
    std::size_t event;
    DeviceInterval interval;
  };
  std::vector<DeviceTimed> device_timed;
  DeviceClock* clock = nullptr;  // the backend's; nullptr = host-timed
  // Activation-sized buffers this rank holds between actions (outputs waiting for their SEND or
  // local consumer, received data waiting for its consumer). A loaded input counts from the moment
  // its F consumes it, so the peak means what the simulator's activation memory means: the memory
  // of microbatches in progress.
  std::int64_t live_buffers = 0;
  Clock::time_point epoch;

  Impl(const Schedule& s, int r, Backend& b, Transport& t, ExecutorOptions o)
      : schedule(s),
        shape(s.shape),
        rank(r),
        backend(b),
        transport(t),
        options(std::move(o)),
        list(s.ranks.at(static_cast<std::size_t>(r))),
        signals(s.shape),
        messages(s.shape),
        act_bytes(static_cast<std::int64_t>(b.activation_bytes())) {
    done.assign(signals.size(), 0);
    held.resize(signals.size());
    loss_grad.resize(static_cast<std::size_t>(shape.stages) * static_cast<std::size_t>(shape.microbatches));
    inputs.resize(static_cast<std::size_t>(shape.microbatches));
    posted.assign(messages.size(), 0);
    send_event.assign(messages.size(), -1);
    for (const Slot& slot : list) {
      flops.push_back(slot ? backend.flops(*slot) : 0.0);
      if (slot) event_capacity += 2;  // an action and, for a consumer of a message, its RECV event
    }
    events.reserve(event_capacity);
    clock = backend.clock();
    if (clock) device_timed.reserve(event_capacity);
  }

  std::int64_t now() const { return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - epoch).count(); }

  std::string where(std::size_t pos, const Action& a) const {
    return "rank " + std::to_string(rank) + " at position " + std::to_string(pos) + " (" + to_string(a) + ")";
  }

  static std::string at(int stage, int mb) { return "(stage " + std::to_string(stage) + ", mb " + std::to_string(mb) + ")"; }

  // ---- data movement ---------------------------------------------------------------------------

  // The buffer a completed F (Forward) or I/B (InputGrad) left for its consumer.
  Buffer take(const SignalKey& k, std::size_t pos, const Action& a) {
    Buffer& b = held[signals(k)];
    if (!b) {
      throw ScheduleError(where(pos, a) + ": needs the output of " + describe(k) + ", which this rank has not produced " +
                          (done[signals(k)] ? "(it was already consumed)" : "yet"));
    }
    return std::move(b);
  }

  void put(const SignalKey& k, Buffer b) { held[signals(k)] = std::move(b); }

  Buffer& loss_grad_slot(int stage, int mb) {
    return loss_grad[static_cast<std::size_t>(stage) * static_cast<std::size_t>(shape.microbatches) + static_cast<std::size_t>(mb)];
  }

  // The loss gradient F(stage, mb) left at a chain's last stage, for its I or B.
  Buffer take_loss_grad(int stage, int mb, std::size_t pos, const Action& a) {
    Buffer& b = loss_grad_slot(stage, mb);
    if (!b) {
      const bool consumed = done[signals({Signal::InputGrad, stage, mb})] != 0;
      throw ScheduleError(where(pos, a) + ": needs the loss gradient of " + at(stage, mb) + ", which " +
                          (consumed ? "an earlier I/B of it already consumed"
                                    : "F(" + std::to_string(stage) + ", mb " + std::to_string(mb) + ") has not produced yet"));
    }
    return std::move(b);
  }

  // Waits for the message that satisfies SENT_F/SENT_B `k` and records its receive.
  Buffer receive(const SignalKey& k, std::size_t pos, const Action& a) {
    const Action recv = matching_p2p(Action::make(k.signal == Signal::SentF ? Op::SendF : Op::SendB, k.stage, k.mb));
    const MessageKey key = message_of(recv);
    const std::size_t m = messages(key);
    if (!posted[m]) {
      throw ScheduleError(where(pos, a) + ": needs the " + describe(key) + " from rank " + std::to_string(shape.rank_of(k.stage)) +
                          ", but no " + std::string(op_name(recv.op)) + " for it was posted earlier on this rank");
    }
    std::optional<Received> r = transport.wait_recv(key, options.timeout);
    if (!r) {
      throw WatchdogTimeout(where(pos, a) + " waited " + std::to_string(options.timeout.count()) + " ms for " + describe(k) +
                            " (the " + describe(key) + " from rank " + std::to_string(shape.rank_of(k.stage)) + ")");
    }
    posted[m] = 0;
    ++live_buffers;
    const std::int64_t end = std::max<std::int64_t>(r->arrived_ns, 0);
    const std::int64_t start = r->sent_ns >= 0 ? std::min(r->sent_ns, end) : end;
    if (r->device.clock) device_timed.push_back({events.size(), r->device});
    events.push_back(TimelineEvent{recv, Stream::Recv, start, end, static_cast<std::int64_t>(r->buffer.bytes()), 0});
    return std::move(r->buffer);
  }

  // Checks every prerequisite of one compute half and returns its operand: the activation an F
  // consumes or the output gradient an I/B consumes (empty for W).
  Buffer gather(const Action& half, std::size_t pos, const Action& unit) {
    Buffer operand;
    for (const SignalKey& k : prerequisites(half, shape, CommMode::Explicit)) {
      const bool own = k.stage == half.stage;
      switch (k.signal) {
        case Signal::SentF:
        case Signal::SentB: operand = receive(k, pos, unit); break;
        case Signal::Forward:
        case Signal::InputGrad:
          if (own) {
            if (!done[signals(k)]) {
              throw ScheduleError(where(pos, unit) + ": needs " + describe(k) + " on this rank, which has not run");
            }
          } else {
            operand = take(k, pos, unit);  // a stage on this rank: local hand-off
          }
          break;
        case Signal::WeightGrad: break;
      }
    }
    if (half.op == Op::F && shape.first_in_chain(half.stage)) {
      Buffer& in = inputs[static_cast<std::size_t>(half.mb)];
      if (!in) throw ScheduleError(where(pos, unit) + ": the input of microbatch " + std::to_string(half.mb) + " was already consumed");
      operand = std::move(in);
      ++live_buffers;  // from here on it is this microbatch's activation
    } else if ((half.op == Op::I || half.op == Op::B) && shape.last_in_chain(half.stage)) {
      operand = take_loss_grad(half.stage, half.mb, pos, unit);
    }
    return operand;
  }

  // Runs one compute half on its operand and stores the result for its consumer.
  double compute(const Action& half, Buffer operand) {
    double loss = 0;
    switch (half.op) {
      case Op::F:
        backend.forward(half.stage, half.mb, operand);
        if (shape.last_in_chain(half.stage)) {
          loss = backend.loss(half.stage, half.mb, operand);
          loss_grad_slot(half.stage, half.mb) = std::move(operand);
        } else {
          put({Signal::Forward, half.stage, half.mb}, std::move(operand));
        }
        break;
      case Op::I:
      case Op::B:
        if (half.op == Op::I) {
          backend.backward_input(half.stage, half.mb, operand);
        } else {
          backend.backward(half.stage, half.mb, operand);
        }
        if (shape.first_in_chain(half.stage)) {
          operand.reset();  // the gradient w.r.t. the model input is not needed
          --live_buffers;
        } else {
          put({Signal::InputGrad, half.stage, half.mb}, std::move(operand));
        }
        break;
      case Op::W: backend.backward_weight(half.stage, half.mb); break;
      default: break;
    }
    for (const SignalKey& k : completions(half)) done[signals(k)] = 1;
    return loss;
  }

  void post_send(const Action& a, std::size_t pos) {
    for (const SignalKey& k : prerequisites(a, shape, CommMode::Explicit)) {
      if (!done[signals(k)]) throw ScheduleError(where(pos, a) + ": sends data of " + describe(k) + ", which has not run on this rank");
    }
    if (p2p_past_chain_end(a, shape)) throw ScheduleError(where(pos, a) + ": no stage to send to");
    Buffer data = take({a.op == Op::SendF ? Signal::Forward : Signal::InputGrad, a.stage, a.mb}, pos, a);
    const MessageKey key = message_of(a);
    const std::int64_t t = now();
    send_event[messages(key)] = static_cast<std::int32_t>(events.size());
    events.push_back(TimelineEvent{a, Stream::Send, t, t, static_cast<std::int64_t>(data.bytes()), 0});
    --live_buffers;
    transport.isend(shape.rank_of(peer_stage(a)), key, std::move(data), t);
    for (const SignalKey& k : completions(a)) done[signals(k)] = 1;
  }

  void post_recv(const Action& a, std::size_t pos) {
    if (p2p_past_chain_end(a, shape)) throw ScheduleError(where(pos, a) + ": no stage to receive from");
    const MessageKey key = message_of(a);
    if (posted[messages(key)]) throw ScheduleError(where(pos, a) + ": the " + describe(key) + " is already posted");
    transport.irecv(shape.rank_of(peer_stage(a)), key, static_cast<std::size_t>(act_bytes), backend.pool());
    posted[messages(key)] = 1;
  }

  // ---- one iteration ---------------------------------------------------------------------------

  // Also frees whatever an iteration run without the state check left behind, so it cannot be
  // mistaken for this iteration's data.
  void reset_iteration() {
    std::fill(done.begin(), done.end(), 0);
    std::fill(posted.begin(), posted.end(), 0);
    std::fill(send_event.begin(), send_event.end(), -1);
    for (Buffer& b : held) b.reset();
    for (Buffer& b : loss_grad) b.reset();
    for (Buffer& b : inputs) b.reset();
    events.clear();
    device_timed.clear();
    live_buffers = 0;
  }

  void load_inputs() {
    backend.begin_iteration();
    for (const Slot& slot : list) {
      if (!slot) continue;
      const Action f = slot->forward_half();
      if (f.op == Op::F && shape.first_in_chain(f.stage) && !inputs[static_cast<std::size_t>(f.mb)]) {
        Buffer b = backend.pool().acquire(static_cast<std::size_t>(act_bytes));
        backend.load_input(f.mb, b);
        inputs[static_cast<std::size_t>(f.mb)] = std::move(b);  // counted in live_buffers once its F consumes it
      }
    }
  }

  IterationRecord run() {
    IterationRecord rec;
    reset_iteration();
    load_inputs();
    epoch = transport.barrier(options.timeout);
    if (clock) clock->start_iteration();
    for (std::size_t pos = 0; pos < list.size(); ++pos) {
      if (!list[pos]) continue;
      const Action& a = *list[pos];
      transport.check_abort();
      if (options.before_action) options.before_action(rank, pos, a);
      try {
        step(a, pos, rec);
      } catch (const PeerAborted&) {
        throw;  // carries the failing rank's own message
      } catch (const WatchdogTimeout&) {
        throw;  // names this rank and action already
      } catch (const ScheduleError&) {
        throw;  // names this rank and action already
      } catch (const std::exception& e) {
        // Backend and transport errors (ExecutionError included) get the rank, position and action.
        throw ExecutionError(where(pos, a) + ": " + e.what());
      }
      transport.progress();
      rec.peak_state_bytes = std::max(rec.peak_state_bytes, backend.state_bytes() + live_buffers * act_bytes);
    }
    for (const SendCompletion& c : transport.flush_sends(options.timeout)) {
      const std::int32_t e = send_event[messages(c.key)];
      if (e < 0) continue;
      if (c.device.clock) device_timed.push_back({static_cast<std::size_t>(e), c.device});
      events[static_cast<std::size_t>(e)].end_ns = std::max(events[static_cast<std::size_t>(e)].start_ns, c.done_ns);
    }
    rec.loss += backend.finish_iteration();
    resolve_device_times();
    if (options.check_state) check_leftovers();
    std::stable_sort(events.begin(), events.end(), [](const TimelineEvent& x, const TimelineEvent& y) { return x.start_ns < y.start_ns; });
    rec.events.swap(events);  // the record takes this iteration's events; the next gets fresh storage
    events.reserve(event_capacity);
    return rec;
  }

  void step(const Action& a, std::size_t pos, IterationRecord& rec) {
    switch (a.op) {
      case Op::SendF:
      case Op::SendB: post_send(a, pos); return;
      case Op::RecvF:
      case Op::RecvB: post_recv(a, pos); return;
      case Op::ReduceGrad: return;  // no data-parallel replicas in the runtime: nothing to reduce
      default: break;
    }
    // Compute: wait for every operand first (the unit starts when all its inputs are there).
    Buffer first, second;
    Action f_half = a, b_half = a;
    if (a.op == Op::OverlapFB) {
      f_half = a.forward_half();
      b_half = a.backward_half();
      first = gather(f_half, pos, a);
      second = gather(b_half, pos, a);
    } else {
      first = gather(a, pos, a);
    }
    std::int64_t start = 0, end = 0;
    DeviceInterval marks;
    if (clock) {
      marks = {clock, backend.begin_action(a), DeviceClock::kNone};
    } else {
      start = now();
    }
    double loss = compute(f_half, std::move(first));
    if (a.op == Op::OverlapFB) loss += compute(b_half, std::move(second));
    if (clock) {
      marks.end = backend.end_action(a);
      device_timed.push_back({events.size(), marks});
    } else {
      backend.synchronize();
      end = now();
    }
    rec.loss += loss;
    events.push_back(TimelineEvent{a, Stream::Compute, start, end, 0, flops[pos]});
  }

  // Device-timed events get their start and end from their markers (the device has caught up:
  // finish_iteration synchronized it). A marker a transport did not set keeps the host time.
  void resolve_device_times() {
    for (const DeviceTimed& d : device_timed) {
      TimelineEvent& e = events[d.event];
      if (d.interval.start != DeviceClock::kNone) e.start_ns = d.interval.clock->resolve(d.interval.start);
      if (d.interval.end != DeviceClock::kNone) e.end_ns = d.interval.clock->resolve(d.interval.end);
      e.end_ns = std::max(e.end_ns, e.start_ns);
    }
  }

  // Strings are built only for what is left over: the common, clean iteration allocates nothing.
  void check_leftovers() {
    std::vector<std::string> left = backend.held_state();
    for (int s = 0; s < shape.stages; ++s) {
      for (int mb = 0; mb < shape.microbatches; ++mb) {
        if (held[signals({Signal::Forward, s, mb})]) left.push_back(at(s, mb) + ": activation never sent or consumed");
        if (held[signals({Signal::InputGrad, s, mb})]) left.push_back(at(s, mb) + ": input gradient never sent or consumed");
        if (loss_grad_slot(s, mb)) left.push_back(at(s, mb) + ": loss gradient never consumed");
        for (Direction d : {Direction::Forward, Direction::Backward}) {
          if (posted[messages({d, s, mb})]) left.push_back("posted receive of the " + describe(MessageKey{d, s, mb}) + " never consumed");
        }
      }
    }
    for (int mb = 0; mb < shape.microbatches; ++mb) {
      if (inputs[static_cast<std::size_t>(mb)]) left.push_back("input of microbatch " + std::to_string(mb) + " never consumed");
    }
    if (left.empty()) return;
    std::string msg = "rank " + std::to_string(rank) + " ended the iteration with state left over:";
    for (std::size_t i = 0; i < left.size() && i < 8; ++i) msg += "\n  " + left[i];
    if (left.size() > 8) msg += "\n  ... and " + std::to_string(left.size() - 8) + " more";
    throw ExecutionError(msg);
  }

  // Frees everything an interrupted iteration holds.
  void cleanup() noexcept {
    for (Buffer& b : held) b.reset();
    for (Buffer& b : loss_grad) b.reset();
    for (Buffer& b : inputs) b.reset();
    std::fill(posted.begin(), posted.end(), 0);
    transport.cancel_all();
    try {
      backend.discard_state();
    } catch (...) {
    }
    live_buffers = 0;
  }
};

RankExecutor::RankExecutor(const Schedule& lowered, int rank, Backend& backend, Transport& transport, ExecutorOptions options) {
  if (rank < 0 || rank >= lowered.shape.ranks || static_cast<std::size_t>(rank) >= lowered.ranks.size()) {
    throw ScheduleError("executor: rank " + std::to_string(rank) + " out of range for a schedule of " +
                        std::to_string(lowered.ranks.size()) + " ranks");
  }
  if (backend.stages() != lowered.shape.stages_of_rank(rank)) {
    throw ScheduleError("executor: the " + std::string(backend.name()) + " backend of rank " + std::to_string(rank) +
                        " holds other stages than the schedule places there");
  }
  if (transport.rank() != rank || transport.size() != lowered.shape.ranks) {
    throw ScheduleError("executor: transport endpoint is rank " + std::to_string(transport.rank()) + " of " +
                        std::to_string(transport.size()) + ", expected rank " + std::to_string(rank) + " of " +
                        std::to_string(lowered.shape.ranks));
  }
  impl_ = std::make_unique<Impl>(lowered, rank, backend, transport, std::move(options));
}

RankExecutor::~RankExecutor() = default;

IterationRecord RankExecutor::run_iteration() {
  try {
    return impl_->run();
  } catch (const PeerAborted&) {
    impl_->cleanup();
    throw;
  } catch (const std::exception& e) {
    impl_->transport.abort(e.what());
    impl_->cleanup();
    throw;
  }
}

}  // namespace pipelab::runtime
