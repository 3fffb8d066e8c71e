"""Each claim of the WVA paper, evaluated on our results.

A claim evaluation returns the paper's statement, what we measured (numbers
read from the result folders, means with 95 % CIs over seeds) and whether the
claim holds. Where it does not, ``explanation`` gives the modelling reason we
know of — we do not tune parameters until it matches.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scalearena.paper.results import Run, select
from scalearena.paper.stats import Estimate, estimate

KV_THRESHOLD = 0.8


@dataclass
class Claim:
    id: str
    experiment: str
    paper: str
    measured: str
    holds: bool | None  # None: not enough data
    explanation: str = ""
    table: list[list[str]] = field(default_factory=list)  # first row is the header


def _steps(run: Run) -> list[tuple[float, float, float]]:
    """(start, end, rate) of each stepped-arrival step from the run's scenario.json."""
    wl = run.scenario_config.get("workload", [{}])
    arr = (wl[0] if isinstance(wl, list) else wl).get("arrivals", {})
    out, t = [], 0.0
    for s in arr.get("steps", []):
        out.append((t, t + s["duration_s"], s["rate_rps"]))
        t += s["duration_s"]
    return out


def exp1_claims(runs: list[Run]) -> list[Claim]:
    wva = select(runs, "exp1-staircase", "wva")
    if not wva:
        return [Claim("exp1", "Exp. 1", "", "no wva runs found", None)]
    steps = _steps(wva[0])
    per_step: list[list[float]] = [[] for _ in steps]
    kv_tail: list[list[float]] = [[] for _ in steps]
    for r in wva:
        ts = r.timeseries
        ready = r.total_replicas()
        kv = ts.groupby("t_s")["kv_usage_mean"].mean()
        for i, (a, b, _rate) in enumerate(steps):
            half = a + (b - a) / 2
            per_step[i].append(float(ready[(ready.index >= half) & (ready.index < b)].mean()))
            kv_tail[i].append(float(kv[(kv.index >= b - 60) & (kv.index < b)].mean()))
    rep = [estimate(x) for x in per_step]
    kvs = [estimate(x) for x in kv_tail]
    rising = all(rep[i + 1].mean > rep[i].mean for i in range(len(rep) - 1))
    kv_ok = all(k.mean < KV_THRESHOLD for k in kvs)
    table = [["step", "offered RPS", "wva ready replicas (2nd half of step)", "mean KV, last 60 s of step"]]
    for i, (a, b, rate) in enumerate(steps):
        table.append([f"{a:.0f}-{b:.0f} s", f"{rate:g}", rep[i].fmt(".2f"), kvs[i].fmt(".3f")])
    c1 = Claim(
        "exp1-replicas", "Exp. 1 (staircase)",
        "Replicas step up almost in lock-step with the traffic steps (~2 -> ~5 -> ~10 RPS).",
        "WVA mean ready replicas per step: " + " -> ".join(e.fmt(".2f") for e in rep) + f" (n={rep[0].n} seeds)",
        rising, "" if rising else
        "Replicas did not rise at every step: with +1 replica per 30 s decision and transition blocking "
        "while the new pod cold-starts, a large step needs several cycles; see the replicas-over-time figure.",
        table,
    )
    c2 = Claim(
        "exp1-kv", "Exp. 1 (staircase)",
        "After each step, mean KV-cache utilisation falls back below the 0.8 threshold.",
        "mean KV in the last 60 s of each step: " + ", ".join(k.fmt(".3f") for k in kvs),
        kv_ok, "" if kv_ok else
        "Mean KV stayed above 0.8 at the end of a step: the step was too short for WVA's +1-per-cycle "
        "scale-up to add the replicas the new rate needs before the next step.",
    )
    return [c1, c2]


def _first_time(ts: Any, variant: str, column: str, above: float) -> float | None:
    v = ts[(ts["variant"] == variant) & (ts[column] > above)]
    return None if v.empty else float(v["t_s"].min())


def exp2_claims(runs: list[Run]) -> list[Claim]:
    table = [["autoscaler", "first A100 scale-up (s)", "first H100 replica (s)", "A100 replicas then", "holds"]]
    holds_by = {}
    for name in sorted({r.autoscaler for r in runs if r.scenario == "exp2-cost-aware"}):
        ok_all, cells = True, []
        for r in select(runs, "exp2-cost-aware", name):
            ts = r.timeseries
            variants = {v["name"]: v for v in r.scenario_config["cluster"]["variants"]}
            a100, h100 = "va-a100", "va-h100"
            start_a = variants[a100].get("initial_replicas") or variants[a100]["min_replicas"]
            ta = _first_time(ts, a100, "spec_replicas", start_a)
            th = _first_time(ts, h100, "spec_replicas", 0)
            a_then = None
            if th is not None:
                row = ts[(ts["variant"] == a100) & (ts["t_s"] <= th)].sort_values("t_s")
                a_then = int(row["spec_replicas"].iloc[-1]) if not row.empty else None
            ok = th is None or (ta is not None and ta < th and a_then == variants[a100]["max_replicas"])
            ok_all &= ok
            cells.append((ta, th, a_then, ok))
        holds_by[name] = ok_all
        ta_e = estimate([c[0] for c in cells if c[0] is not None])
        th_e = estimate([c[1] for c in cells if c[1] is not None])
        a_e = estimate([c[2] for c in cells if c[2] is not None])
        table.append([name, ta_e.fmt(".0f"), th_e.fmt(".0f") if th_e.n else "never", a_e.fmt(".1f") if a_e.n else "-",
                      f"{sum(c[3] for c in cells)}/{len(cells)} seeds"])
    wva_ok = holds_by.get("wva")
    return [Claim(
        "exp2-order", "Exp. 2 (cost-aware)",
        "A100 (cost 1.0) replicas scale up first; H100 (cost 2.5) replicas start only once the A100 pool is "
        "saturated or cannot absorb the arrival rate.",
        "WVA: " + ("holds on every seed" if wva_ok else "does not hold on every seed")
        + "; other autoscalers scale each variant on its own signal (table).",
        wva_ok, "" if wva_ok or wva_ok is None else
        "H100 replicas started before the A100 pool reached its maximum: see the per-variant replicas figure.",
        table,
    )]


def _sum(runs: list[Run], key: str) -> list[float]:
    out = []
    for r in runs:
        v: Any = r.summary
        for k in key.split("."):
            v = v.get(k) if isinstance(v, dict) else None
        if isinstance(v, dict):
            v = sum(x for x in v.values() if isinstance(x, int | float))
        out.append(math.nan if v is None else float(v))
    return out


def pair_ratio(a: list[Run], b: list[Run], key: str) -> Estimate:
    """Per-seed ratio a/b of a summary value (runs matched by seed)."""
    bs = {r.seed: r for r in b}
    vals = []
    for r in a:
        if r.seed in bs:
            x, y = _sum([r], key)[0], _sum([bs[r.seed]], key)[0]
            vals.append(x / y if y else math.nan)
    return estimate(vals)


def scale_up_steps(runs: list[Run]) -> tuple[Estimate, Estimate]:
    """Mean seconds between consecutive scale-ups and mean replicas added per scale-up (decisions.jsonl)."""
    gaps: list[float] = []
    steps: list[float] = []
    for r in runs:
        p = r.dir / "decisions.jsonl"
        if not p.exists():
            continue
        ups = [d for d in map(json.loads, p.read_text().splitlines()) if d["action"] == "scale_up"]
        ts = [d["t_s"] for d in ups]
        gaps += [b - a for a, b in zip(ts, ts[1:], strict=False)]
        steps += [d["desired_replicas"] - d["current_replicas"] for d in ups]
    return estimate(gaps), estimate(steps)


def _wva_lag(w: list[Run]) -> str:
    cadence, step = scale_up_steps(w)
    label = w[0].autoscaler if w else "wva"
    startup = (w[0].scenario_config.get("cluster", {}).get("variants") or [{}])[0].get("startup_s") if w else None
    head = (f"{label} scaled up once every {cadence.fmt('.0f')} s, by {step.fmt('.1f')} replicas on average "
            f"(cold start {startup} s). ")
    if step.n and step.mean > 1.05:
        return head + "HPA proposes ceil(N x usage/target) and may add 4 pods or 100 % per 15 s."
    return head + ("Upstream WVA adds +1 replica per 30 s cycle, holds the model while the new pod starts "
                   "(transition blocking), and a freshly ready replica — KV near 0, not saturated — lifts the "
                   "average spare over non-saturated replicas above gamma, so the next +1 waits for it to fill. "
                   "HPA proposes ceil(N x usage/target) and may add 4 pods or 100 % per 15 s. The paper's headroom "
                   "actuation (target capacity = load + delta) is run as `wva-headroom` for comparison.")


def physical_claims(runs: list[Run], scenario: str = "physical-validation", wva: str = "wva") -> list[Claim]:
    """The physical-validation claims for one WVA configuration (label ``wva``) against ``hpa``."""
    rates = sorted({int(float(r.sweep["rate"])) for r in runs if r.scenario == scenario and "rate" in r.sweep})
    if not rates:
        return [Claim("physical", "Physical validation", "", "no runs found", None)]
    table = [["rate (RPS)", "autoscaler", "throughput (rps)", "failures", "rejected", "killed", "TTFT mean (ms)",
              "ITL mean (ms)", "replicas mean", "replicas max"]]
    gains, fail_ratio = {}, {}
    for rate in rates:
        for name in sorted({r.autoscaler for r in runs if r.scenario == scenario}):
            rs = select(runs, scenario, name, rate=rate)
            if not rs:
                continue
            table.append([str(rate), name] + [estimate(_sum(rs, k)).fmt(f) for k, f in (
                ("throughput_rps", ".3f"), ("failures", ".1f"), ("failures.rejected", ".1f"),
                ("failures.killed", ".1f"), ("ttft_ms.mean", ".0f"), ("itl_ms.mean", ".1f"),
                ("replicas.mean", ".2f"), ("replicas.max", ".1f"))])
        w, h = select(runs, scenario, wva, rate=rate), select(runs, scenario, "hpa", rate=rate)
        gains[rate] = pair_ratio(w, h, "throughput_rps")
        fw, fh = sum(_sum(w, "failures")), sum(_sum(h, "failures"))
        fail_ratio[rate] = (fw / fh) if fh else (math.nan if fw == 0 else math.inf)
    claims = []
    sfx = "" if wva == "wva" else f" ({wva})"
    if wva != "wva":
        table = []  # the per-rate table of every autoscaler is shown once, with the upstream wva claims
    best = max(gains, key=lambda r: gains[r].mean if not math.isnan(gains[r].mean) else -1)
    gain_txt = ", ".join(f"{r} RPS: {(g.mean - 1) * 100:+.1f} % (95 % CI {(g.low - 1) * 100:+.1f}..{(g.high - 1) * 100:+.1f})"
                         if g.n > 1 else f"{r} RPS: {(g.mean - 1) * 100:+.1f} %" for r, g in gains.items())
    below_cap = [r for r in rates if r < 6]
    p1 = all(gains[r].mean >= 1.0 for r in below_cap) if below_cap else None
    claims.append(Claim(
        f"phys-throughput{sfx}", "Physical validation",
        "WVA reaches up to 37 % more throughput than HPA, the largest gap at 5 RPS.",
        f"{wva}/hpa throughput: {gain_txt}; largest gap at {best} RPS.",
        p1, "" if p1 else _wva_lag(select(runs, scenario, wva, rate=best)),
        table,
    ))
    if 5 in fail_ratio:
        fr = fail_ratio[5]
        p2 = fr <= 0.5
        h5 = select(runs, scenario, "hpa", rate=5)
        killed, rejected = sum(_sum(h5, "failures.killed")), sum(_sum(h5, "failures.rejected"))
        claims.append(Claim(
            f"phys-failures{sfx}", "Physical validation",
            "At 5 RPS WVA has about a tenth of HPA's failures (HPA's from 429/503 saturation rejections and "
            "scale-down instability).",
            f"{wva}/hpa failures at 5 RPS (summed over seeds): {fr:.2f}; by rate: "
            + ", ".join(f"{r}: {v:.2f}" for r, v in fail_ratio.items()),
            p2, "" if p2 else
            f"HPA's failures at 5 RPS here are {rejected:.0f} rejections (429) and {killed:.0f} killed by "
            "scale-down over all seeds: under steady or rising load its 300 s scale-down stabilisation keeps it "
            "from scaling down within a 600 s run, so the paper's second failure source does not appear. "
            + (f"{wva} has fewer failures than HPA, but both fail only by rejection, so the gap is the capacity "
               "gap, not a tenfold one. " if fr < 1 else f"{wva} rejects more because it has fewer replicas. ")
            + _wva_lag(select(runs, scenario, wva, rate=5)),
        ))
    if 6 in rates:
        w6, h6 = select(runs, scenario, wva, rate=6), select(runs, scenario, "hpa", rate=6)
        wmax, hmean = estimate(_sum(w6, "replicas.max")), estimate(_sum(h6, "replicas.mean"))
        wmean = estimate(_sum(w6, "replicas.mean"))
        p3 = wmax.mean >= 10 - 1e-9
        claims.append(Claim(
            f"phys-cap{sfx}", "Physical validation",
            "At 6 RPS the 10-replica cap binds: WVA goes to 10 replicas while HPA settles near 9.3.",
            f"{wva} max replicas {wmax.fmt('.1f')} (mean {wmean.fmt('.2f')}); HPA mean replicas {hmean.fmt('.2f')}.",
            p3, "" if p3 else "WVA did not reach the cap within the 600 s run. " + _wva_lag(w6),
        ))
        wf, hf = estimate(_sum(w6, "failures")), estimate(_sum(h6, "failures"))
        wt, ht = estimate(_sum(w6, "ttft_ms.mean")), estimate(_sum(h6, "ttft_ms.mean"))
        p4 = bool(wf.mean > hf.mean or wt.mean > ht.mean)
        claims.append(Claim(
            f"phys-inversion{sfx}", "Physical validation",
            "At 6 RPS (cap binding) WVA's failures and latencies overtake HPA's — the paper's own inversion.",
            f"failures {wva} {wf.fmt('.1f')} vs HPA {hf.fmt('.1f')}; mean TTFT {wva} {wt.fmt('.0f')} ms vs "
            f"HPA {ht.fmt('.0f')} ms.",
            p4, ("WVA's failures and latency exceed HPA's at 6 RPS as the paper reports, but here because WVA is "
                 "under-provisioned (see phys-cap), not because the cap binds." if p4 and not p3 else "") if p4 else
            f"No inversion: at 6 RPS {wva} held {wmean.fmt('.2f')} replicas on average against HPA's "
            f"{hmean.fmt('.2f')}, so it still had more capacity than HPA while the cap bound.",
        ))
    return claims


def hetero_table(runs: list[Run], scenario: str = "hetero-roofline") -> list[list[str]]:
    names = sorted({r.autoscaler for r in runs if r.scenario == scenario})
    if "oracle" not in names:
        return []
    oracle = select(runs, scenario, "oracle")
    # cost in the paper's unit (each variant's cost weight x replica-hours), labelled: the pages show USD
    table = [["autoscaler", "cost (variantCost·h)", "cost / oracle", "SLO attainment", "goodput (rps)", "failures",
              "GPU-hours"]]
    for name in names:
        rs = select(runs, scenario, name)
        att = estimate([g * r.summary["duration_s"] / r.summary["requests_total"] if r.summary["requests_total"]
                        else math.nan for r, g in zip(rs, _sum(rs, "goodput_rps"), strict=True)])
        table.append([name, estimate(_sum(rs, "cost")).fmt(".2f"), pair_ratio(rs, oracle, "cost").fmt(".2f"),
                      att.fmt(".3f"), estimate(_sum(rs, "goodput_rps")).fmt(".2f"),
                      estimate(_sum(rs, "failures")).fmt(".1f"), estimate(_sum(rs, "gpu_hours")).fmt(".2f")])
    return table


def oracle_note(runs: list[Run], scenario: str = "hetero-roofline") -> str:
    """Say so when the oracle itself fell short of full service (its capacity model is an estimate)."""
    rs = select(runs, scenario, "oracle")
    if not rs:
        return ""
    att = estimate([r.summary["goodput_rps"] * r.summary["duration_s"] / r.summary["requests_total"]
                    for r in rs if r.summary.get("requests_total")])
    if math.isnan(att.mean) or att.mean >= 0.99:
        return ""
    return (f"The oracle itself met both SLOs for {att.mean * 100:.1f} % of requests here, not 100 %: it sizes "
            "replicas by Little's law from the latency model's service time and a KV-occupancy bound, which is "
            "optimistic when queueing and batch slow-down under load matter. Read `cost / oracle` as distance "
            "from that estimate, and compare autoscalers at similar attainment.\n")


def sensitivity_rows(runs: list[Run], sweeps: Any, wvas: tuple[str, ...] = ("wva", "wva-headroom")) -> list[list[str]]:
    """Per sweep value, rate and WVA configuration: WVA/HPA throughput ratio and failures. A side the sweep
    does not vary (HPA in a WVA sweep and the other way round) comes from the main physical runs."""
    rows = [["parameter", "value", "rate", "WVA config", "WVA/HPA throughput", "WVA failures", "HPA failures",
             "WVA >= HPA throughput", "WVA fewer failures"]]
    for sw in sweeps:
        for v in sw.values:
            scen = f"sens-{sw.param}-{str(v).replace('.', 'p')}"
            for rate in sorted({int(float(r.sweep.get('rate', 0))) for r in runs if r.scenario == scen}):
                h = select(runs, scen, "hpa", rate=rate) or select(runs, "physical-validation", "hpa", rate=rate)
                for label in wvas:
                    w = select(runs, scen, label, rate=rate) or select(runs, "physical-validation", label, rate=rate)
                    if not w or not h:
                        continue
                    g = pair_ratio(w, h, "throughput_rps")
                    wf, hf = float(np.nanmean(_sum(w, "failures"))), float(np.nanmean(_sum(h, "failures")))
                    rows.append([sw.title, f"{v:g}", str(rate), label, g.fmt(".3f"), f"{wf:.1f}", f"{hf:.1f}",
                                 "yes" if g.mean >= 1 else "no", "yes" if wf < hf else "no"])
    return rows
