// Schedule validation rules (docs/validation.md). Structural rules run first; the deadlock replay
// runs only on a structurally sound schedule, since it indexes by stage and microbatch.
#include "pipelab/schedules/validate.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "pipelab/base/error.h"
#include "pipelab/schedules/dependencies.h"
#include "pipelab/schedules/replay.h"
#include "pipelab/schedules/text_grid.h"

namespace pipelab {
namespace {

std::string cell(const Action& a) { return to_string(a); }

class Checker {
 public:
  Checker(const Schedule& s, ValidationScope scope) : s_(s), shape_(s.shape), scope_(scope) {}

  Validation run() {
    if (!check_shape()) return std::move(out_);
    check_ranges_and_placement();
    if (!out_.ok()) return std::move(out_);
    check_exactly_once_and_order();
    check_comms();
    if (!out_.ok() || scope_ == ValidationScope::WithoutDeadlock) return std::move(out_);
    check_deadlock();
    return std::move(out_);
  }

 private:
  void add(int rank, int pos, std::string rule, std::string msg) {
    if (out_.diagnostics.size() >= Validation::kMaxListed) {
      ++out_.omitted;
      return;
    }
    out_.diagnostics.push_back({rank, pos, std::move(rule), std::move(msg)});
  }

  bool check_shape() {
    const auto P = shape_.ranks;
    if (P < 1 || shape_.stages < 1 || shape_.microbatches < 1 || shape_.chains < 1) {
      add(-1, -1, "shape", "ranks, stages, microbatches and chains must all be >= 1");
      return false;
    }
    if (static_cast<int>(s_.ranks.size()) != P) {
      add(-1, -1, "shape", "schedule has " + std::to_string(s_.ranks.size()) + " rank lists but pp=" + std::to_string(P));
      return false;
    }
    if (static_cast<int>(shape_.stage_to_rank.size()) != shape_.stages) {
      add(-1, -1, "shape", "stage_to_rank has " + std::to_string(shape_.stage_to_rank.size()) + " entries, need stages=" +
                               std::to_string(shape_.stages));
      return false;
    }
    if (shape_.stages % shape_.chains != 0 || shape_.microbatches % shape_.chains != 0) {
      add(-1, -1, "shape", "chains=" + std::to_string(shape_.chains) + " must divide stages and microbatches");
      return false;
    }
    bool ok = true;
    for (int st = 0; st < shape_.stages; ++st) {
      const int r = shape_.rank_of(st);
      if (r < 0 || r >= P) {
        add(-1, -1, "shape", "stage " + std::to_string(st) + " is placed on rank " + std::to_string(r) + ", outside [0, " +
                                 std::to_string(P) + ")");
        ok = false;
      }
    }
    if (ok) {
      std::vector<char> holds(static_cast<std::size_t>(P), 0);
      for (int st = 0; st < shape_.stages; ++st) holds[static_cast<std::size_t>(shape_.rank_of(st))] = 1;
      for (int r = 0; r < P; ++r) {
        if (!holds[static_cast<std::size_t>(r)]) {
          add(r, -1, "placement", "rank " + std::to_string(r) + " holds no stage");
          ok = false;
        }
      }
    }
    if (ok && shape_.placement != Placement::Explicit) {
      for (int st = 0; st < shape_.stages; ++st) {
        if (shape_.rank_of(st) != placed_rank(shape_.placement, P, shape_.stages, st)) {
          add(-1, -1, "placement", "stage_to_rank does not match the declared " + std::string(placement_name(shape_.placement)) +
                                       " placement at stage " + std::to_string(st));
          return false;
        }
      }
    }
    return ok;
  }

  // Checks one (stage, mb) reference of action `what` at (r, pos): both in range, the microbatch
  // flows through the stage's chain, and the stage is placed on rank r, whose list holds the action.
  // `a` is named in a diagnostic only: its text is built on failure.
  bool check_ref(int r, int pos, const Action& a, int stage, int mb) {
    const auto what = [&] { return cell(a); };
    if (stage < 0 || stage >= shape_.stages) {
      add(r, pos, "range", what() + ": stage " + std::to_string(stage) + " outside [0, " + std::to_string(shape_.stages) + ")");
      return false;
    }
    if (mb < 0 || mb >= shape_.microbatches) {
      add(r, pos, "range", what() + ": microbatch " + std::to_string(mb) + " outside [0, " + std::to_string(shape_.microbatches) + ")");
      return false;
    }
    if (shape_.chain_of_microbatch(mb) != shape_.chain_of_stage(stage)) {
      add(r, pos, "range", what() + ": microbatch " + std::to_string(mb) + " does not flow through stage " + std::to_string(stage) +
                               " (chain " + std::to_string(shape_.chain_of_stage(stage)) + ")");
      return false;
    }
    if (shape_.rank_of(stage) != r) {
      add(r, pos, "placement", what() + " runs on rank " + std::to_string(r) + " but stage " + std::to_string(stage) +
                                   " is placed on rank " + std::to_string(shape_.rank_of(stage)));
      return false;
    }
    return true;
  }

  void check_ranges_and_placement() {
    for (int r = 0; r < shape_.ranks; ++r) {
      const auto& list = s_.ranks[static_cast<std::size_t>(r)];
      for (int pos = 0; pos < static_cast<int>(list.size()); ++pos) {
        if (!list[static_cast<std::size_t>(pos)]) continue;
        const Action& a = *list[static_cast<std::size_t>(pos)];
        if (a.op == Op::OverlapFB) {
          check_ref(r, pos, a, a.stage, a.mb);
          check_ref(r, pos, a, a.b_stage, a.b_mb);
        } else if (a.op == Op::ReduceGrad) {
          // No microbatch: the stage must exist and live here.
          check_ref(r, pos, a, a.stage, shape_.chain_of_stage(std::clamp(a.stage, 0, shape_.stages - 1)) *
                                                   shape_.microbatches_per_chain());
        } else {
          check_ref(r, pos, a, a.stage, a.mb);
        }
      }
    }
  }

  struct Count {
    int f = 0, b = 0, i = 0, w = 0;
  };

  void check_exactly_once_and_order() {
    std::vector<Count> counts(static_cast<std::size_t>(shape_.stages) * shape_.microbatches);
    auto at = [&](int st, int mb) -> Count& {
      return counts[static_cast<std::size_t>(st) * shape_.microbatches + static_cast<std::size_t>(mb)];
    };
    auto see = [&](int r, int pos, Op op, int st, int mb) {
      Count& c = at(st, mb);
      const auto what = [&] { return cell(Action::make(op, st, mb)); };  // text only for a diagnostic
      switch (op) {
        case Op::F:
          if (++c.f > 1) add(r, pos, "exactly-once", "duplicate forward " + what());
          break;
        case Op::B:
        case Op::I:
          if (c.f == 0) add(r, pos, "order", what() + " runs before its forward " + cell(Action::make(Op::F, st, mb)));
          if (op == Op::B ? ++c.b + c.i > 1 : ++c.i + c.b > 1) add(r, pos, "exactly-once", "duplicate backward " + what());
          break;
        case Op::W:
          if (c.i == 0) {
            add(r, pos, "order", what() + " runs before its input-grad " + cell(Action::make(Op::I, st, mb)) +
                                     (c.b ? " (the full backward already computed it)" : ""));
          }
          if (++c.w > 1) add(r, pos, "exactly-once", "duplicate weight-grad " + what());
          break;
        default: break;
      }
    };
    // Weight-grads done per stage so far (a full B counts), for REDUCE_GRAD's placement.
    std::vector<int> weight_grads(static_cast<std::size_t>(shape_.stages), 0);
    std::vector<int> reductions(static_cast<std::size_t>(shape_.stages), 0);
    for (int r = 0; r < shape_.ranks; ++r) {
      const auto& list = s_.ranks[static_cast<std::size_t>(r)];
      for (int pos = 0; pos < static_cast<int>(list.size()); ++pos) {
        if (!list[static_cast<std::size_t>(pos)]) continue;
        const Action& a = *list[static_cast<std::size_t>(pos)];
        if (a.op == Op::OverlapFB) {
          see(r, pos, Op::F, a.stage, a.mb);
          see(r, pos, Op::B, a.b_stage, a.b_mb);
          ++weight_grads[static_cast<std::size_t>(a.b_stage)];
        } else if (is_compute(a.op)) {
          see(r, pos, a.op, a.stage, a.mb);
          if (a.op == Op::B || a.op == Op::W) ++weight_grads[static_cast<std::size_t>(a.stage)];
        } else if (a.op == Op::ReduceGrad) {
          const auto st = static_cast<std::size_t>(a.stage);
          if (++reductions[st] > 1) add(r, pos, "exactly-once", "duplicate " + cell(a));
          if (weight_grads[st] < shape_.microbatches_per_chain()) {
            add(r, pos, "order", cell(a) + " runs after only " + std::to_string(weight_grads[st]) + " of stage " +
                                     std::to_string(a.stage) + "'s " + std::to_string(shape_.microbatches_per_chain()) +
                                     " weight-grads");
          }
        }
      }
    }
    for (int st = 0; st < shape_.stages; ++st) {
      for (int mb = 0; mb < shape_.microbatches; ++mb) {
        if (shape_.chain_of_microbatch(mb) != shape_.chain_of_stage(st)) continue;
        const Count& c = at(st, mb);
        const bool missing_f = c.f == 0, missing_b = c.b == 0 && c.i == 0, missing_w = c.i > 0 && c.w == 0;
        const bool b_and_w = c.b > 0 && c.w > 0 && c.i == 0;
        if (!(missing_f || missing_b || missing_w || b_and_w)) continue;
        if (out_.diagnostics.size() >= Validation::kMaxListed) {  // only counted: no message to build
          out_.omitted += static_cast<std::size_t>(missing_f) + missing_b + missing_w + b_and_w;
          continue;
        }
        const int owner = shape_.rank_of(st);
        const std::string key = "stage " + std::to_string(st) + " microbatch " + std::to_string(mb);
        if (missing_f) add(owner, -1, "exactly-once", "missing forward " + cell(Action::make(Op::F, st, mb)) + " (" + key + ")");
        if (missing_b) {
          add(owner, -1, "exactly-once", "missing backward " + cell(Action::make(Op::B, st, mb)) + " or " +
                                             cell(Action::make(Op::I, st, mb)) + " (" + key + ")");
        }
        if (missing_w) add(owner, -1, "exactly-once", "missing weight-grad " + cell(Action::make(Op::W, st, mb)) + " after its I");
        if (b_and_w) add(owner, -1, "exactly-once", key + " has both a full B and a W");
      }
    }
  }

  // Sends and receives: only between stages on different ranks, each matched exactly once, the
  // receive posted before its consumer, and every cross-rank dependency covered once lowered.
  void check_comms() {
    if (!s_.has_comms()) return;
    // key (op, stage, mb) -> (rank, position)
    std::map<std::tuple<int, int, int>, std::pair<int, int>> posted;
    auto key = [](Op op, int st, int mb) { return std::make_tuple(static_cast<int>(op), st, mb); };
    for (int r = 0; r < shape_.ranks; ++r) {
      const auto& list = s_.ranks[static_cast<std::size_t>(r)];
      for (int pos = 0; pos < static_cast<int>(list.size()); ++pos) {
        if (!list[static_cast<std::size_t>(pos)] || !is_p2p(list[static_cast<std::size_t>(pos)]->op)) continue;
        const Action& a = *list[static_cast<std::size_t>(pos)];
        const int peer = peer_stage(a);
        if (p2p_past_chain_end(a, shape_)) {
          add(r, pos, "comm", cell(a) + ": stage " + std::to_string(a.stage) + " has no " +
                                  (peer > a.stage ? "next" : "previous") + " stage to exchange with");
          continue;
        }
        if (!crosses_ranks(shape_, a.stage, peer)) {
          add(r, pos, "comm", cell(a) + ": stages " + std::to_string(a.stage) + " and " + std::to_string(peer) +
                                  " are both on rank " + std::to_string(r) + "; no send/recv between them");
          continue;
        }
        if (!posted.emplace(key(a.op, a.stage, a.mb), std::make_pair(r, pos)).second) {
          add(r, pos, "comm", "duplicate " + cell(a));
        }
      }
    }
    auto find = [&](Op op, int st, int mb) -> const std::pair<int, int>* {
      auto it = posted.find(key(op, st, mb));
      return it == posted.end() ? nullptr : &it->second;
    };
    // Every send has its receive and the reverse.
    for (const auto& [k, where] : posted) {
      const Action a = Action::make(static_cast<Op>(std::get<0>(k)), std::get<1>(k), std::get<2>(k));
      const Action partner = matching_p2p(a);
      if (!find(partner.op, partner.stage, partner.mb)) {
        add(where.first, where.second, "comm", cell(a) + " has no matching " + cell(partner) + " on rank " +
                                                   std::to_string(shape_.rank_of(partner.stage)));
      }
    }
    // Every cross-rank consumer has its receive earlier in its own list: each prerequisite on a
    // posted SEND (dependencies.h, explicit comms) needs its matching RECV on this rank.
    for (int r = 0; r < shape_.ranks; ++r) {
      const auto& list = s_.ranks[static_cast<std::size_t>(r)];
      for (int pos = 0; pos < static_cast<int>(list.size()); ++pos) {
        if (!list[static_cast<std::size_t>(pos)]) continue;
        const Action& a = *list[static_cast<std::size_t>(pos)];
        for (const SignalKey& k : prerequisites(a, shape_, CommMode::Explicit)) {
          if (k.signal != Signal::SentF && k.signal != Signal::SentB) continue;
          const Action recv = receive_for(k);
          const auto* w = find(recv.op, recv.stage, recv.mb);
          if (!w || w->first != r || w->second > pos) {
            add(r, pos, "comm", cell(a) + " needs " + cell(recv) + " earlier on rank " + std::to_string(r));
          }
        }
      }
    }
  }

  void check_deadlock() {
    const Replay replay = replay_lockstep(s_);
    if (replay.completed) return;
    for (const StuckRank& st : replay.stuck) {
      const std::string waits = describe_waits(st);
      add(st.rank, st.position, "deadlock", "rank " + std::to_string(st.rank) + " is stuck at " + cell(st.action) +
                                                " waiting for " + (waits.empty() ? "nothing?" : waits));
    }
  }

  const Schedule& s_;
  const PipelineShape& shape_;
  ValidationScope scope_;
  Validation out_;
};

}  // namespace

Validation validate(const Schedule& s, ValidationScope scope) { return Checker(s, scope).run(); }

void require_valid(const Schedule& s, ValidationScope scope) {
  Validation v = validate(s, scope);
  if (!v.ok()) throw ScheduleError("schedule \"" + s.name + "\" is invalid:\n" + v.report(s));
}

std::string Validation::report(const Schedule& s) const {
  std::ostringstream os;
  std::vector<std::pair<int, int>> marked;
  for (const Diagnostic& d : diagnostics) {
    os << "  [" << d.rule << "] ";
    if (d.rank >= 0) os << "rank " << d.rank;
    if (d.position >= 0) os << " position " << d.position;
    if (d.rank >= 0) os << ": ";
    os << d.message << "\n";
    if (d.rank >= 0 && d.position >= 0) marked.emplace_back(d.rank, d.position);
  }
  if (omitted > 0) os << "  ... and " << omitted << " more problems (the first " << Validation::kMaxListed << " are listed)\n";
  if (static_cast<int>(s.ranks.size()) == s.shape.ranks && !s.ranks.empty()) os << format_order_grid(s, marked);
  return os.str();
}

std::string format_order_grid(const Schedule& s, const std::vector<std::pair<int, int>>& marked) {
  std::vector<std::vector<std::string>> cells = slot_texts(s.ranks);
  std::size_t longest = 0;
  for (const auto& row : cells) longest = std::max(longest, row.size());
  for (const auto& [r, p] : marked) {
    if (r >= 0 && r < static_cast<int>(cells.size()) && p >= 0 && p < static_cast<int>(cells[r].size())) {
      cells[r][p] = ">" + cells[r][p] + "<";
    }
  }
  // Long lists: a window of columns around the first marked cell.
  constexpr std::size_t kWindow = 12;
  std::size_t first = 0, last = longest;
  if (longest > 2 * kWindow + 1 && !marked.empty()) {
    const auto centre = static_cast<std::size_t>(std::max(0, marked.front().second));
    first = centre > kWindow ? centre - kWindow : 0;
    last = std::min(longest, first + 2 * kWindow + 1);
  }
  return render_text_grid("position", cells, first, last);
}

}  // namespace pipelab
