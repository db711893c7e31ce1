// Text form of actions, compatible with PyTorch's `_Action.__repr__` / `_Action.from_str`.
#include "pipelab/schedules/action.h"

#include <array>
#include <charconv>

namespace pipelab {
namespace {

constexpr std::array<std::string_view, kNumOps> kOpNames = {
    "F", "B", "I", "W", "SEND_F", "RECV_F", "SEND_B", "RECV_B", "OVERLAP_F_B", "REDUCE_GRAD"};

// Ops whose names PyTorch accepts but pipelab does not model (FSDP parameter sharding).
constexpr std::array<std::string_view, 2> kUnsupported = {"UNSHARD", "RESHARD"};

struct Cursor {
  std::string_view text;
  std::size_t pos = 0;
  bool done() const { return pos >= text.size(); }
  bool digit() const { return !done() && text[pos] >= '0' && text[pos] <= '9'; }
};

ParseError error_at(const Cursor& c, std::string message) {
  return ParseError{std::move(message) + " in \"" + std::string(c.text) + "\"", 0, static_cast<int>(c.pos) + 1};
}

// Reads a non-negative decimal; returns -1 when there are no digits.
long read_number(Cursor& c) {
  std::size_t start = c.pos;
  while (c.digit()) ++c.pos;
  if (c.pos == start) return -1;
  if (c.pos - start > 9) return -2;  // would overflow int32: reject rather than wrap
  long value = 0;
  std::from_chars(c.text.data() + start, c.text.data() + c.pos, value);
  return value;
}

// Reads "<stage><OP><mb>" starting at the cursor (no container).
Result<Action> parse_simple(Cursor& c) {
  long stage = read_number(c);
  if (stage == -1) return error_at(c, "expected a stage number");
  if (stage == -2) return error_at(c, "stage number too large");
  std::string_view rest = c.text.substr(c.pos);
  // Longest match first, so SEND_F is not read as S...
  int best = -1;
  std::size_t best_len = 0;
  for (int i = 0; i < kNumOps; ++i) {
    if (kOpNames[i] == "OVERLAP_F_B") continue;  // only valid as a container suffix
    if (rest.substr(0, kOpNames[i].size()) == kOpNames[i] && kOpNames[i].size() > best_len) {
      best = i;
      best_len = kOpNames[i].size();
    }
  }
  if (best < 0) {
    for (auto name : kUnsupported) {
      if (rest.substr(0, name.size()) == name) {
        return error_at(c, "op " + std::string(name) + " is not supported by pipelab (FSDP hooks)");
      }
    }
    return error_at(c, "expected an op (F, B, I, W, SEND_F, RECV_F, SEND_B, RECV_B, REDUCE_GRAD)");
  }
  c.pos += best_len;
  if (static_cast<Op>(best) == Op::ReduceGrad) {
    if (c.digit()) return error_at(c, "REDUCE_GRAD takes no microbatch number");
    return Action::make(Op::ReduceGrad, static_cast<int>(stage), 0);
  }
  long mb = read_number(c);
  if (mb == -1) return error_at(c, "expected a microbatch number after " + std::string(kOpNames[best]));
  if (mb == -2) return error_at(c, "microbatch number too large");
  return Action::make(static_cast<Op>(best), static_cast<int>(stage), static_cast<int>(mb));
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r' || s.front() == '\n')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string_view op_name(Op op) { return kOpNames[static_cast<int>(op)]; }

std::string to_string(const Action& a) {
  if (a.op == Op::OverlapFB) {
    return "(" + to_string(a.forward_half()) + ";" + to_string(a.backward_half()) + ")OVERLAP_F_B";
  }
  std::string s = std::to_string(a.stage);
  s += op_name(a.op);
  if (a.op != Op::ReduceGrad) s += std::to_string(a.mb);
  return s;
}

Result<Action> parse_action(std::string_view text) {
  Cursor c{trim(text)};
  if (c.text.empty()) return ParseError{"empty action", 0, 1};
  if (c.text.front() == '(') {
    ++c.pos;
    auto f = parse_simple(c);
    if (!f) return f;
    if (c.done() || c.text[c.pos] != ';') return error_at(c, "expected ';' between the halves of an overlapped unit");
    ++c.pos;
    auto b = parse_simple(c);
    if (!b) return b;
    if (c.done() || c.text[c.pos] != ')') return error_at(c, "expected ')' closing an overlapped unit");
    ++c.pos;
    if (c.text.substr(c.pos) != "OVERLAP_F_B") return error_at(c, "expected OVERLAP_F_B after ')'");
    if (f.value().op != Op::F || b.value().op != Op::B) {
      return error_at(c, "an OVERLAP_F_B unit pairs one F with one full backward B, as (0F3;3B1)");
    }
    return Action::overlap(f.value().stage, f.value().mb, b.value().stage, b.value().mb);
  }
  auto a = parse_simple(c);
  if (!a) return a;
  if (!c.done()) return error_at(c, "unexpected trailing characters");
  return a;
}

}  // namespace pipelab
