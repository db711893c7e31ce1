# Writes the small result fixtures of tests/data/reports (PP=2, uniform costs: F 10 ms, B 20 ms,
# I 12 ms, W 8 ms, P2P 0.2 ms): a simulate result, a compare result with one failed schedule and one
# out-of-memory schedule, and a run result (predicted + measured). Hand-sized on purpose; the
# renderers never recompute, so the numbers only need to be plausible and self-consistent.
# Run from this directory: python3 make_fixtures.py (then regenerate the goldens, see README.md).
import json, re, copy

def dump(obj, path):
    text = json.dumps(obj, indent=1)
    # One line per innermost object or [t, bytes] pair, to keep the files short and diffable.
    text = re.sub(r"\{[^{}\[\]]*\}", lambda m: re.sub(r"\s*\n\s*", " ", m[0]), text)
    text = re.sub(r"\[[^\[\]{}]*\]", lambda m: re.sub(r"\s*\n\s*", " ", m[0]), text)
    open(path, "w").write(text + "\n")
GIB = 1024**3
MS = 1_000_000
F, B, I, W, C, RG = 10 * MS, 20 * MS, 12 * MS, 8 * MS, MS // 5, 3 * MS
ACT = 2 * GIB          # activation bytes per microbatch per stage
STATIC = 10 * GIB

def parse(a):
    m = re.match(r"(\d+)([A-Z_]+)(\d+)$", a)
    return int(m[1]), m[2], int(m[3])

def simulate(orders, dur, reduce_grad=False):
    P = len(orders); S = P
    done = {}      # (stage, op, mb) -> end time
    arrive = {}    # ('F'|'B', stage, mb) -> arrival time at consumer
    pos = [0] * P; free = [0] * P
    ev = [[] for _ in range(P)]
    mem = [[[0, STATIC]] for _ in range(P)]
    level = [STATIC] * P
    while any(pos[r] < len(orders[r]) for r in range(P)):
        progress = False
        for r in range(P):
            if pos[r] >= len(orders[r]): continue
            s, op, mb = parse(orders[r][pos[r]])
            if op == "F":
                ready = 0 if s == 0 else arrive.get(("F", s, mb))
            elif op in ("B", "I"):
                ready = done.get((s, "F", mb)) if s == S - 1 else arrive.get(("B", s, mb))
                if s == S - 1 and ready is None: ready = None
            else:  # W
                ready = done.get((s, "I", mb))
            if ready is None: continue
            start = max(free[r], ready); end = start + dur[op]
            flops = {"F": 8e12, "B": 1.6e13, "I": 8e12, "W": 8e12}[op]
            ev[r].append(dict(rank=r, action=f"{s}{op}{mb}", stream="compute", start_ns=start, end_ns=end, bytes=ACT if op == "F" else 0, flops=flops))
            done[(s, op, mb)] = end; free[r] = end; pos[r] += 1; progress = True
            if op == "F":
                level[r] += ACT; mem[r].append([start, level[r]])
                if s < S - 1:
                    ev[r].append(dict(rank=r, action=f"{s}SEND_F{mb}", stream="send", start_ns=end, end_ns=end + C, bytes=64 << 20, flops=0))
                    ev[r + 1].append(dict(rank=r + 1, action=f"{s+1}RECV_F{mb}", stream="recv", start_ns=end, end_ns=end + C, bytes=64 << 20, flops=0))
                    arrive[("F", s + 1, mb)] = end + C
            if op in ("B", "I"):
                if op == "B": level[r] -= ACT; mem[r].append([end, level[r]])
                else: level[r] -= ACT // 2; mem[r].append([end, level[r]])
                if s > 0:
                    ev[r].append(dict(rank=r, action=f"{s}SEND_B{mb}", stream="send", start_ns=end, end_ns=end + C, bytes=64 << 20, flops=0))
                    ev[r - 1].append(dict(rank=r - 1, action=f"{s-1}RECV_B{mb}", stream="recv", start_ns=end, end_ns=end + C, bytes=64 << 20, flops=0))
                    arrive[("B", s - 1, mb)] = end + C
            if op == "W":
                level[r] -= ACT // 2; mem[r].append([end, level[r]])
        assert progress, "deadlock"
    if reduce_grad:
        for r in range(P):
            ev[r].append(dict(rank=r, action=f"{r}REDUCE_GRAD", stream="collective", start_ns=free[r], end_ns=free[r] + RG, bytes=GIB, flops=0))
    for r in range(P): ev[r].sort(key=lambda e: (e["start_ns"], e["stream"] != "compute"))
    return ev, mem

def merge(iv):
    iv = sorted(i for i in iv if i[1] > i[0]); out = []
    for a, b in iv:
        if out and a <= out[-1][1]: out[-1][1] = max(out[-1][1], b)
        else: out.append([a, b])
    return out

def outcome(ev, mem, capacity, gpus=8, peak=989.4):
    P = len(ev)
    T = max(e["end_ns"] for r in ev for e in r)
    ranks = []; idle = 0; exposed = 0
    for r in range(P):
        comp = merge([[e["start_ns"], e["end_ns"]] for e in ev[r] if e["stream"] == "compute"])
        comm = merge([[e["start_ns"], e["end_ns"]] for e in ev[r] if e["stream"] != "compute"])
        busy = sum(b - a for a, b in comp); cm = sum(b - a for a, b in comm)
        unc = 0
        for a, b in comm:
            cur = a
            for c, d in comp:
                if d <= cur or c >= b: continue
                if c > cur: unc += c - cur
                cur = max(cur, d)
            if cur < b: unc += b - cur
        peak_b = max(x[1] for x in mem[r])
        ranks.append(dict(rank=r, busy_ns=busy, idle_ns=T - busy, comm_ns=cm, exposed_comm_ns=unc,
                          static_memory_bytes=STATIC, peak_activation_bytes=peak_b - STATIC, peak_memory_bytes=peak_b))
        idle += T - busy; exposed += unc
    flops = 4.0e14; tokens = 32768
    tf = flops / (T * 1e-9 * gpus) / 1e12
    summary = dict(makespan_ns=T, bubble_ratio=idle / (P * T), tflops_per_gpu=tf, mfu=tf / peak,
                   tokens_per_s_per_gpu=tokens / (T * 1e-9 * gpus), peak_memory_bytes=[x["peak_memory_bytes"] for x in ranks],
                   exposed_comm_ns=exposed // P, memory_capacity_bytes=capacity,
                   oom=any(x["peak_memory_bytes"] > capacity for x in ranks), model_flops=flops, tokens_per_iteration=tokens)
    tl = [e for r in ev for e in r]
    return dict(summary=summary, ranks=ranks, timeline=tl, memory=[dict(rank=r, samples=mem[r]) for r in range(P)])

def config(schedule=None, schedules=None, m=4):
    c = {"model": {"name": "gpt-tiny", "num_layers": 4, "hidden_size": 1024},
         "gpu": {"name": "h100-sxm", "peak_bf16_tflops": 989.4, "peak_fp8_tflops": 1978.9, "hbm_bytes": 85899345920},
         "parallel": {"tp": 1, "pp": 2, "vp": 1, "cp": 1, "ep": 1, "dp": 4, "gpus": 8, "mbs": 1, "gbs": 4 * m,
                      "seq_length": 2048, "microbatches": m, "sequence_parallel": False, "recompute": "none",
                      "distributed_optimizer": True, "precision": "bf16", "stage_layers": [2, 2]},
         "cost_model": "uniform", "warnings": ["pp=2 with vp=1: interleaving (vp>1) divides the pipeline bubble (pp-1)/m by vp"]}
    if schedule: c["schedule"] = schedule
    if schedules: c["schedules"] = schedules
    return c

def orders(csv):
    return [row.split(",") for row in csv.strip().split("\n")]

D = {"F": F, "B": B, "I": I, "W": W}
CAP = 16 * GIB
o1f1b3 = orders("0F0,0F1,0B0,0F2,0B1,0B2\n1F0,1B0,1F1,1B1,1F2,1B2")
ev, mem = simulate(o1f1b3, D, reduce_grad=True)
sim = {"format": "pipelab.result", "version": 1, "kind": "simulate", "config": config("1f1b", m=3)}
sim.update(outcome(ev, mem, CAP))
dump(sim, "simulate_1f1b_2r_3mb.json")

cmp = {"format": "pipelab.result", "version": 1, "kind": "compare",
       "config": config(schedules=["gpipe", "1f1b", "zb-h1", "dualpipe"], m=4), "results": []}
for name, csv in [("gpipe", "0F0,0F1,0F2,0F3,0B0,0B1,0B2,0B3\n1F0,1F1,1F2,1F3,1B0,1B1,1B2,1B3"),
                  ("1f1b", "0F0,0F1,0B0,0F2,0B1,0F3,0B2,0B3\n1F0,1B0,1F1,1B1,1F2,1B2,1F3,1B3"),
                  ("zb-h1", "0F0,0F1,0I0,0W0,0F2,0I1,0W1,0F3,0I2,0W2,0I3,0W3\n1F0,1I0,1F1,1I1,1W0,1F2,1I2,1W1,1F3,1I3,1W2,1W3")]:
    ev, mem = simulate(orders(csv), D)
    r = {"schedule": name}; r.update(outcome(ev, mem, CAP))
    cmp["results"].append(r)
cmp["results"].append({"schedule": "dualpipe", "error": "dualpipe needs microbatches >= 2*pp = 4 per chain pair, got 2"})
dump(cmp, "compare_2r_4mb.json")

ev, mem = simulate(o1f1b3, D)
pred = outcome(ev, mem, CAP)
# Measured: each action a little slower, comm a little faster; no memory tracking.
Dm = {"F": 10_310_000, "B": 20_870_000, "I": 12_400_000, "W": 8_200_000}
ev2, mem2 = simulate(o1f1b3, Dm)
meas = outcome(ev2, mem2, CAP)
del meas["memory"]
for r in meas["ranks"]:
    for k in ("static_memory_bytes", "peak_activation_bytes", "peak_memory_bytes"): del r[k]
run = {"format": "pipelab.result", "version": 1, "kind": "run",
       "config": dict(config("1f1b", m=3), backend="cpu", transport="inproc"),
       "predicted": {k: pred[k] for k in ("summary", "ranks", "timeline", "memory")},
       "measured": {k: meas[k] for k in ("summary", "ranks", "timeline")},
       "comparison": {"makespan_error": pred["summary"]["makespan_ns"] / meas["summary"]["makespan_ns"] - 1,
                      "bubble_predicted": pred["summary"]["bubble_ratio"], "bubble_measured": meas["summary"]["bubble_ratio"],
                      "action_error_p50": -0.031, "action_error_p90": -0.045},
       "gradient_check": {"max_rel_error": 3.2e-07, "passed": True}}
dump(run, "run_1f1b_2r_3mb.json")
print(sim["summary"], cmp["results"][0]["summary"]["oom"], run["comparison"])
