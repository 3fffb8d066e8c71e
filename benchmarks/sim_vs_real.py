"""Simulated vs real: each autoscaler's dynamics on the simulator and on the upstream control plane.

One scenario (workloads/scenarios/sim-vs-real.yaml: one llm-d-inference-sim variant, a staircase of load)
runs on ``--cluster kwok`` (kube-apiserver, kube-controller-manager's HPA, KEDA, prometheus-adapter,
Prometheus and llm-d-inference-sim built from source: docs/kubernetes.md), for every autoscaler of
workloads/suites/sim-vs-real.yaml and three seeds, then on ``--cluster sim`` with the same seed (the same
request stream) and the conditions each real run measured that are not the autoscaler's doing: the phases of
its loops against the load (its controllers' lead from the apply of their objects to the load: the event
``control_lead``; the offsets of its Prometheus' scrapes and rule evaluations, read from the run's own
Prometheus data; the HPA controller's lag per sync and the WVA controller's own lead, from their logs:
harness/kube/phases.py; given as the scenario's ``phases``), its pods' start after each rescale (added to
``startup_s``) and its engines' mean inter-token latency (llm-d-inference-sim overshoots its sleeps). Two diagnostic sides show what each condition
accounts for: the simulator in the real phases but at the nominal ITL (``sim-at-phases/``), and as a user's
comparison runs it, with neither (``sim-nominal/``). Per autoscaler it compares
the replica trajectory (ready replica-seconds over the run's window, the maximum, every change of the
Deployment's desired replicas: its time, direction and size), goodput, failures by cause and TTFT / ITL
p50 / p99, and checks the targets of docs/fidelity.md:

* replica-seconds within 10 % (mean over seeds);
* the same maximum of ready replicas in every seed;
* every scale step of the simulator matched by one of the real controller in the same direction within
  one sync period plus one scrape interval (15 s HPA sync + the scrape interval; WVA adds its own
  period), and no step of the real controller left unmatched;
* goodput within 5 % (mean over seeds).

Runs on kwok take real time: each run lasts its window (220 s) divided by the time scale, plus ~40 s of
set-up. Autoscalers written as Kubernetes objects with their own PromQL (a user's HPA, the llm-d recipes)
cannot be time-scaled (harness/kube/timescale.py) and run at time scale 1; the others at
``--time-scale`` (default 2). A full run (7 autoscalers x 3 seeds) takes about 70 minutes here (68 measured, 2026-12-05).

Usage::

    python benchmarks/sim_vs_real.py [--autoscalers hpa,keda] [--seeds 1,2,3] [--time-scale 2]
        [--out results/sim-vs-real] [--reuse] [--real-from JSON] [--repeat DIR] [--json PATH] [--update-docs]
        [--check] [--check-goodput]

``--reuse`` keeps every complete kwok run already under ``--out`` (a group whose runs are all there is not run
again; the simulator, deterministic and a second a run, always runs); ``--real-from`` takes the kwok side from an
earlier run's raw figures (benchmarks/data/sim_vs_real.json) and runs the simulator only, for a change on the
simulator's side; ``--repeat DIR`` (repeatable) reads another kwok run of the same seeds from an earlier ``--out``
and judges it against the first by the same targets, next to the simulator run in that repeat's own measured
conditions (``sim-repeat-<n>/``): the real stack's own noise floor; ``--update-docs``
writes the table into docs/fidelity.md and its summary line into README.md (between their ``sim-vs-real`` markers), so no figure there is typed by hand; ``--check`` exits 1 when an
autoscaler misses a trajectory target (replica-seconds, maximum, moves; the CI's short version,
tests/e2e/test_kwok_fidelity.py, `make fidelity-check`), ``--check-goodput`` also when it misses the goodput target, which this host's runs do
for reasons docs/fidelity.md shows (the real engine's per-token overshoot, the control loops' phase).

Written here rather than taken from a library: no tool compares autoscaler trajectories across two
backends; the figures themselves all come from the runs' own summary.json and timeseries.parquet.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import mean
from typing import Any

import numpy as np
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "workloads" / "suites" / "sim-vs-real.yaml"
HPA_SYNC_S = 15.0  # kube-controller-manager --horizontal-pod-autoscaler-sync-period default (every HPA here)
TARGETS = {"replica_s_pct": 10.0, "goodput_pct": 5.0}
SPEED_BAND = 0.01  # the sensitivity diagnostic: the measured time per output token, 1 % longer and 1 % shorter
MARK = ("<!-- sim-vs-real:begin (benchmarks/sim_vs_real.py --update-docs) -->", "<!-- sim-vs-real:end -->")


@dataclass
class Run:
    """One run's figures: what the comparison reads from its folder."""

    seed: int
    time_scale: float
    window_s: float
    replica_s: float  # ready replica-seconds over the run's window
    max_ready: int
    steps: list[tuple[float, int]]  # (time, change) of the desired replicas, within the window
    goodput: float
    failures: dict[str, int]
    ttft: dict[str, float | None]
    itl: dict[str, float | None]  # per request (e2e - TTFT) / (tokens - 1): engine_times
    complete: bool
    control_lead_s: float | None = None  # a kube run's lead from applying the objects to the load (its loops' phase)
    phases: dict[str, Any] | None = None  # a kwok run's scrape and rule offsets (harness/kube/phases.py)
    ttft_floor_ms: float | None = None  # the TTFT of a request that waited for nothing: engine_times
    start_lag_s: float | None = None  # a kwok run's rescale -> engine container start, mean (kube/phases.py)
    first_take: int | None = None  # requests held when the first scale-up's pods turned ready that they served

    def measured_phases(self) -> dict[str, Any]:
        """The scenario's ``phases`` that put the simulator's loops where this (real) run's were."""
        return {**(self.phases or {}), **({"control_lead_s": self.control_lead_s} if self.control_lead_s else {})}


@dataclass
class Row:
    """One autoscaler: both sides over the seeds, and the targets met."""

    autoscaler: str
    tolerance_s: float
    sim: list[Run] = field(default_factory=list)
    real: list[Run] = field(default_factory=list)
    matched: int = 0  # simulator steps in a move seen on both sides
    real_matched: int = 0  # real steps in one
    moves: int = 0  # moves seen on both sides (a step, or steps of one side within the tolerance)
    censored: int = 0  # unmatched steps within the tolerance of the window's end: the other side's may lie past it
    sim_steps: int = 0
    real_steps: int = 0
    size_equal: int = 0
    lag_s: list[float] = field(default_factory=list)  # real step time - sim step time, per matched pair
    misses: list[str] = field(default_factory=list)  # trajectory targets missed (and runs missing)
    goodput_miss: str | None = None  # the goodput target, reported apart (docs/fidelity.md: why)
    at_phases: list[Run] = field(default_factory=list)  # diagnostic: the simulator in the real phases, the nominal ITL
    nominal: list[Run] = field(default_factory=list)  # diagnostic: the simulator as a user runs it (default phases)
    slower: list[Run] = field(default_factory=list)  # diagnostic: measured conditions, engines SPEED_BAND slower
    faster: list[Run] = field(default_factory=list)  # ... and SPEED_BAND faster
    repeats: list[list[Run]] = field(default_factory=list)  # the noise floor: the seeds again on kwok, per --repeat
    repeat_sims: list[list[Run]] = field(default_factory=list)  # the simulator in each repeat's measured conditions


def scenario_and_labels(labels: list[str] | None) -> tuple[Path, Any, list[str]]:
    """The suite's scenario (its path and the loaded scenario) and the autoscalers to compare (default: the
    suite's), read with the project's suite loader."""
    from scalearena.harness.config.suite import load_suite

    spec, plans = load_suite(SUITE)
    sc_path = (SUITE.parent / spec.runs[0].scenario).resolve()
    sc = plans[0].scenario
    chosen = labels or list(spec.autoscalers)
    unknown = [a for a in chosen if a not in {c.label for c in sc.autoscalers}]
    if unknown:
        raise SystemExit(f"error: unknown autoscaler(s) {unknown}: the scenario has {[c.label for c in sc.autoscalers]}")
    return sc_path, sc, chosen


def time_scale_of(cfg: Any, scale: float) -> float:
    """Kubernetes objects with their own PromQL run at 1 (timescale.refuse_scaled_promql), the rest at ``scale``."""
    from scalearena.controllers.kubernetes import KubernetesConfig

    return 1.0 if isinstance(cfg, KubernetesConfig) else scale


def tolerance_s(cfg: Any, scrape_s: float) -> float:
    """One sync period plus one scrape interval: the HPA's sync, plus WVA's own period before its HPA acts."""
    own = float(getattr(cfg, "period_s", 0.0) or 0.0) if cfg.kind == "wva" else 0.0
    return own + HPA_SYNC_S + scrape_s


def write_suite(path: Path, scenario: Path, labels: list[str], seeds: list[int]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"name: sim-vs-real\nautoscalers: [{', '.join(labels)}]\nseeds: [{', '.join(map(str, seeds))}]\n"
                    f"frontier: {{enabled: false}}\nruns:\n  - scenario: {scenario}\n")
    return path


def complete(folder: Path, sc_name: str, labels: list[str], seeds: list[int]) -> bool:
    for a in labels:
        for s in seeds:
            f = folder / sc_name / a / f"seed-{s}" / "summary.json"
            if not f.is_file() or not json.loads(f.read_text()).get("complete"):
                return False
    return True


def cli(*args: str) -> None:
    cmd = [sys.executable, "-m", "scalearena", *args]
    print("$ scalearena " + " ".join(args), flush=True)
    subprocess.run(cmd, check=True, cwd=ROOT)


def run_real(scenario: Path, sc: Any, labels: list[str], seeds: list[int], scale: float, out: Path,
             reuse: bool) -> None:
    """The kwok side: one control plane per time scale and per KEDA, the suite's runs on it."""
    from scalearena.harness.kube.byo import uses_keda

    # one cluster per time scale and per KEDA: KEDA's metrics server takes v1beta1.external.metrics.k8s.io, so a
    # user's HPA reading External metrics through prometheus-adapter runs where `kwok up` installs no KEDA
    groups: dict[tuple[float, bool], list[str]] = {}
    for a in labels:
        cfg = sc.autoscaler(a)
        groups.setdefault((time_scale_of(cfg, scale), uses_keda(cfg)), []).append(a)
    for (ts, keda), group in sorted(groups.items()):
        name = f"kwok-ts{ts:g}" + ("-keda" if keda else "")
        folder = out / name
        if reuse and complete(folder, sc.name, group, seeds):
            continue
        suite = write_suite(out / "suites" / f"{name}.yaml", scenario, group, seeds)
        cli("kwok", "up", "--suite", str(suite), "--time-scale", f"{ts:g}")
        try:
            cli("suite", str(suite), "--cluster", "kwok", "--out", str(folder), "--backend-option", f"time_scale={ts:g}")
        finally:
            cli("kwok", "down")


def run_sim(sc_path: Path, labels: list[str], seeds: list[int], real: dict[tuple[str, int], Run | None], out: Path,
            folder: str, phases: bool = True, itl: bool = False, itl_factor: float = 1.0,
            extra: tuple[str, ...] = ()) -> None:
    """The simulator's side, one run per autoscaler and seed into ``out/folder``: with the same seed (the same
    request stream) and, with ``phases``, the real run's measured phases (its controllers' lead:
    harness.control.loop.first_tick; its scrape and rule offsets); with ``itl``, also at the engine step times the
    real engines delivered (engine_times: the mean ITL and the TTFT of a request that did not wait); ``extra``: more
    ``--set``s (a staircase's rates: ``scan``). The simulator is deterministic and takes a second a run, so it always
    runs again."""
    from scalearena.harness.config.scenario import load_scenario
    from scalearena.harness.config.suite import RunPlan
    from scalearena.harness.run.runner import execute

    startup = load_scenario(sc_path).cluster.variants[0].startup_s  # the scenario's, before a start lag
    for a in labels:
        for s in seeds:
            r = real.get((a, s))
            sets = [f"phases={json.dumps(r.measured_phases())}"] if phases and r else []
            if phases and r is not None and r.start_lag_s:  # the pods start that much after their rescale
                sets.append(f"cluster.variants.0.startup_s={startup + r.start_lag_s:.3f}")
            if itl and r is not None and (tpot := r.itl.get("mean")) is not None:
                sets.append(f"cluster.variants.0.engine.latency.itl_ms={tpot * itl_factor:.3f}")
                if r.ttft_floor_ms is not None:
                    sets.append(f"cluster.variants.0.engine.latency.ttft_ms={r.ttft_floor_ms:.3f}")
            sets += extra
            sc = load_scenario(sc_path, sets, seed=s)
            print(f"$ sim {a} seed {s} {' '.join(sets)}".rstrip(), flush=True)
            execute(RunPlan(sc, sc.autoscaler(a), f"{sc.name}/{a}/seed-{s}"), out / folder, "sim")


def real_runs(sc: Any, labels: list[str], seeds: list[int], out: Path,
              stored: dict[tuple[str, int], Run] | None) -> dict[tuple[str, int], Run | None]:
    """The real run of every autoscaler and seed: from ``--real-from``'s raw figures, else from the kwok folders
    under ``out`` (``kwok-ts<scale>[-keda]/``, as run_real writes them; a ``--repeat`` folder has the same layout)."""
    if stored is not None:
        return {(a, s): stored.get((a, s)) for a in labels for s in seeds}
    return {(a, s): next((r for d in sorted(out.glob("kwok-ts*"))
                          if (r := load_run(d / sc.name / a / f"seed-{s}", float(d.name.split("-")[1][2:])))
                          is not None), None) for a in labels for s in seeds}


def steps_of(t: list[float], spec: list[float], window: float) -> list[tuple[float, int]]:
    """Changes of the desired replicas between consecutive samples inside [0, window]: (time seen, change)."""
    out: list[tuple[float, int]] = []
    prev: float | None = None
    for ti, n in zip(t, spec, strict=True):
        if prev is not None and n != prev and 0.0 <= ti <= window:
            out.append((round(ti, 3), int(n - prev)))
        prev = n
    return out


def engine_times(folder: Path) -> tuple[dict[str, float | None], float | None]:
    """The engine step times a run's requests show: per request the time per output token after the first,
    (e2e - TTFT) / (tokens - 1) (vLLM's TPOT), its mean, p50 and p99; and the TTFT floor, the median TTFT of
    the requests within 10 % of the fastest (those that waited for no slot: a queued request waits for one to
    free, about a third of a second here). From the records rather than the summary's ``itl_ms``, which the
    Locust user of runs before 2026-12-05 took over n + 1 chunks of an n-token llm-d-inference-sim stream (its
    finish-only chunk; workloads/load_handoff.py read_stream): 0.8 % short, and the engine that much too fast."""
    t = pq.read_table(folder / "requests.parquet", columns=["status", "ttft_ms", "e2e_ms", "output_tokens"]).to_pydict()
    ok = [(f, e, n) for st, f, e, n in zip(t["status"], t["ttft_ms"], t["e2e_ms"], t["output_tokens"], strict=True)
          if st == "ok" and f is not None and e is not None and n is not None]
    tpot = [(e - f) / (n - 1) for f, e, n in ok if n >= 2]
    if not tpot:
        return {"mean": None, "p50": None, "p99": None}, None
    q = np.percentile(tpot, [50, 99])
    fastest = min(f for f, _, _ in ok)
    floor = float(np.median([f for f, _, _ in ok if f <= 1.1 * fastest]))
    return {"mean": float(np.mean(tpot)), "p50": float(q[0]), "p99": float(q[1])}, floor


def load_run(folder: Path, scale: float = 1.0) -> Run | None:
    """A run's figures from its folder. Replica-seconds and the maximum are integrated here over the run's window
    (reports/usage.py, as the summary does), so runs written by any version compare alike."""
    from scalearena.harness.kube.phases import from_run_folder, start_lag_of
    from scalearena.reports.usage import integrate

    f = folder / "summary.json"
    if not f.is_file():
        return None
    s = json.loads(f.read_text())
    lead = next((float(e["control_lead_s"]) for e in s.get("events") or []  # objects_applied: its first name
                 if e.get("kind") in ("control_lead", "objects_applied")), None)
    scen = json.loads((folder / "scenario.json").read_text())
    window = float(scen["duration_s"]) + float(scen.get("drain_s") or 0.0)
    table = pq.read_table(folder / "timeseries.parquet")
    use = integrate(table, {"sample_interval_s": scen["metrics"]["sample_interval_s"], "window_s": window})
    # desired replicas as the variant's max_replicas caps them: the simulator applies the cap (the cluster has room
    # for no more), a real HPA object whose maxReplicas is above it writes its own count and the rest stay Pending
    cap = {v["name"]: v["max_replicas"] for v in scen["cluster"]["variants"]}
    tab = table.select(["t_s", "variant", "spec_replicas"]).to_pydict()
    per_t: dict[float, float] = {}
    for t, v, n in zip(tab["t_s"], tab["variant"], tab["spec_replicas"], strict=True):
        if t is not None and n is not None:
            per_t[t] = per_t.get(t, 0.0) + min(n, cap.get(v, n))
    times = sorted(per_t)
    itl, floor = engine_times(folder)
    return Run(seed=int(s["seed"]), time_scale=scale, window_s=window, replica_s=use.ready_mean * use.covered_s,
               max_ready=use.ready_max, steps=steps_of(times, [per_t[t] for t in times], window),
               goodput=float(s["goodput_rps"]), failures={k: int(v) for k, v in s["failures"].items() if v},
               ttft={k: s["ttft_ms"].get(k) for k in ("p50", "p99")}, itl=itl, ttft_floor_ms=floor,
               complete=bool(s.get("complete")), control_lead_s=lead,
               phases=from_run_folder(folder, scale, float(scen["metrics"]["scrape_interval_s"]), lead),
               start_lag_s=start_lag_of(folder, scale), first_take=first_take_of(folder))


def first_take_of(folder: Path) -> int | None:
    """How many of the requests held when the run's first scale-up's pods turned ready those pods went on to serve:
    the requests they served that had arrived before they were ready (pods ready within a second of the first such
    pod count as one scale-up). Whether the gateway's flow control hands a new pod its share of the held requests or the whole queue
    in one refresh slot depends on whether the old pods' last snapshot read one waiting request below the saturation
    threshold (harness/sim/router.py), so this is where a run's trajectory can part from another's of the same seed.
    None when no pod was added."""
    pods = [json.loads(x) for x in (folder / "pods.jsonl").read_text().splitlines() if x.strip()] \
        if (folder / "pods.jsonl").is_file() else []
    added = sorted((float(p["ready_s"]), p["pod"]) for p in pods
                   if p.get("ready_s") is not None and float(p.get("created_s") or 0.0) > 0.0)
    if not added:
        return None
    first = {pod: ready for ready, pod in added if ready <= added[0][0] + 1.0}
    t = pq.read_table(folder / "requests.parquet", columns=["pod", "arrival_s"]).to_pydict()
    return sum(1 for pod, arrival in zip(t["pod"], t["arrival_s"], strict=True)
               if pod in first and arrival is not None and arrival < first[pod])


Group = tuple[list[int], list[int]]  # indices of simulator steps, of real steps: one scaling move on both sides


def match(sim: list[tuple[float, int]], real: list[tuple[float, int]], tol: float) -> list[Group]:
    """Scaling moves seen on both sides. First each simulator step takes the nearest unpaired real step in the same
    direction within ``tol`` seconds (in time order). Then a step left over on either side joins the move of the
    other side's nearest step in the same direction within ``tol`` while its side's sum stays within the other's
    (a +4 taken as +2 and +2 fifteen seconds apart is one move). What joins no move is unmatched."""
    used: set[int] = set()
    groups: list[Group] = []
    for i, (ts, d) in enumerate(sim):
        cands = [(abs(tr - ts), j) for j, (tr, dr) in enumerate(real) if j not in used and (dr > 0) == (d > 0)
                 and abs(tr - ts) <= tol]
        if cands:
            used.add(min(cands)[1])
            groups.append(([i], [min(cands)[1]]))
    for mine, other, side in ((sim, real, 0), (real, sim, 1)):
        taken = {k for g in groups for k in g[side]}
        for k, (t, d) in enumerate(mine):
            if k in taken:
                continue
            near = [(min(abs(other[o][0] - t) for o in g[1 - side]), n) for n, g in enumerate(groups)
                    if (mine[g[side][0]][1] > 0) == (d > 0)
                    and min(abs(other[o][0] - t) for o in g[1 - side]) <= tol
                    and abs(sum(mine[x][1] for x in g[side]) + d) <= abs(sum(other[o][1] for o in g[1 - side]))]
            if near:
                groups[min(near)[1]][side].append(k)
    return groups


def censored(sim: list[tuple[float, int]], real: list[tuple[float, int]], groups: list[Group], late: float) -> int:
    """Unmatched steps (either side) after ``late`` (the window's end less the tolerance): the other side's step
    may lie past the window, where nothing is sampled, so they are reported apart, not counted as misses."""
    in_move = ({i for g in groups for i in g[0]}, {j for g in groups for j in g[1]})
    return sum(1 for side, steps in enumerate((sim, real)) for k, (t, _) in enumerate(steps)
               if k not in in_move[side] and t > late)


def pct(a: float, b: float) -> float | None:
    return None if not a else 100.0 * (b - a) / a


def stored_real(path: Path) -> dict[tuple[str, int], Run]:
    """The real runs of an earlier raw-figures file (``--real-from``), by (autoscaler, seed): the kwok side
    measured once, compared again with a changed simulator without its hour of real time."""
    raw = json.loads(path.read_text())
    return {(row["autoscaler"], int(r["seed"])): Run(**{**r, "steps": [tuple(x) for x in r["steps"]]})
            for row in raw["rows"] for r in row["real"]}


def stored_repeats(path: Path) -> dict[str, list[list[Run]]]:
    """The repeated real runs an earlier raw-figures file holds (each row's ``repeats``), by autoscaler."""
    raw = json.loads(path.read_text())
    return {row["autoscaler"]: [[Run(**{**r, "steps": [tuple(x) for x in r["steps"]]}) for r in runs]
                                for runs in row.get("repeats") or []] for row in raw["rows"]}


def add_repeat(rows: list[Row], repeat: Mapping[tuple[str, int], Run | None]) -> None:
    """One more repetition of the real runs into each row that has any of its seeds (complete), in the order of
    its real runs."""
    for row in rows:
        runs = [r for x in row.real if (r := repeat.get((row.autoscaler, x.seed))) is not None and r.complete]
        if runs:
            row.repeats.append(runs)


def simulate_repeats(sc_path: Path, sc: Any, rows: list[Row], out: Path, run: bool) -> None:
    """The simulator in each repeat's own measured conditions (as ``sim/`` is in the first real runs'), into
    ``out/sim-repeat-<n>``; ``run`` False reads what is there."""
    for i in range(max((len(r.repeats) for r in rows), default=0)):
        folder = f"sim-repeat-{i + 1}"
        real: dict[tuple[str, int], Run | None] = {
            (r.autoscaler, x.seed): x for r in rows if len(r.repeats) > i for x in r.repeats[i]}
        if run:
            for a in sorted({a for a, _ in real}):
                run_sim(sc_path, [a], sorted(s for b, s in real if b == a), real, out, folder, phases=True, itl=True)
        for r in rows:
            if len(r.repeats) > i:
                sims = [load_run(out / folder / sc.name / r.autoscaler / f"seed-{x.seed}") for x in r.repeats[i]]
                r.repeat_sims.append([x for x in sims if x is not None])


def against(row: Row, runs: list[Run], real_runs: list[Run] | None = None) -> Row:
    """The trajectory targets of ``runs`` (other runs of some of the row's seeds) against the row's real runs of
    the same seeds (or ``real_runs``: a repeat's), judged as the simulator's are."""
    again = Row(row.autoscaler, row.tolerance_s)
    by_seed = {r.seed: r for r in runs}
    for real in row.real if real_runs is None else real_runs:
        if real.seed in by_seed:
            add_pair(again, by_seed[real.seed], real)
    judge(again)
    return again


def compare(sc: Any, labels: list[str], seeds: list[int], out: Path, real: dict[tuple[str, int], Run | None],
            folder: str = "sim") -> list[Row]:
    rows = []
    for a in labels:
        cfg = sc.autoscaler(a)
        row = Row(a, tolerance_s(cfg, sc.metrics.scrape_interval_s))
        for s in seeds:
            sim = load_run(out / folder / sc.name / a / f"seed-{s}")
            r = real.get((a, s))
            if sim is None or r is None or not r.complete:
                row.misses.append(f"seed {s}: {'no sim run' if sim is None else 'no complete kwok run'}")
                continue
            add_pair(row, sim, r)
        judge(row)
        rows.append(row)
    return rows


def add_pair(row: Row, sim: Run, real: Run) -> None:
    """One seed's simulator run and real run into the row: steps paired into moves, maxima compared."""
    row.sim.append(sim)
    row.real.append(real)
    groups = match(sim.steps, real.steps, row.tolerance_s)
    row.sim_steps += len(sim.steps)
    row.real_steps += len(real.steps)
    row.matched += sum(len(g[0]) for g in groups)
    row.real_matched += sum(len(g[1]) for g in groups)
    row.size_equal += sum(sum(sim.steps[i][1] for i in g[0]) == sum(real.steps[j][1] for j in g[1]) for g in groups)
    row.moves += len(groups)
    row.censored += censored(sim.steps, real.steps, groups, sim.window_s - row.tolerance_s)
    row.lag_s += [min(real.steps[j][0] for j in g[1]) - min(sim.steps[i][0] for i in g[0]) for g in groups]
    if sim.max_ready != real.max_ready:
        row.misses.append(f"seed {sim.seed}: max {sim.max_ready} vs {real.max_ready}")


def verdict_of(row: Row, runs: list[Run], real_runs: list[Run] | None = None) -> str:
    """The trajectory targets again, with other runs (a diagnostic's simulator runs, a repeat's real runs) in
    place of the row's simulator runs (and a repeat's real runs in place of its real ones)."""
    again = against(row, runs, real_runs)
    return "met" if not again.misses else "missed: " + "; ".join(again.misses)


def judge(row: Row) -> None:
    if not row.sim:
        return
    d = pct(mean(r.replica_s for r in row.sim), mean(r.replica_s for r in row.real))
    if d is not None and abs(d) > TARGETS["replica_s_pct"]:
        row.misses.append(f"replica-s {d:+.1f} %")
    unmatched = row.sim_steps - row.matched + row.real_steps - row.real_matched - row.censored
    if unmatched:
        row.misses.append(f"{unmatched} step(s) unmatched")
    g = pct(mean(r.goodput for r in row.sim), mean(r.goodput for r in row.real))
    if g is not None and abs(g) > TARGETS["goodput_pct"]:
        row.goodput_miss = f"goodput {g:+.1f} %"


def _f(x: float | None, fmt: str = "{:.0f}") -> str:
    return "n/a" if x is None else fmt.format(x)


def _m(runs: list[Run], key: str, q: str) -> float | None:
    vals = [getattr(r, key)[q] for r in runs if getattr(r, key)[q] is not None]
    return mean(vals) if vals else None


def _fails(runs: list[Run]) -> str:
    total: dict[str, int] = {}
    for r in runs:
        for k, v in r.failures.items():
            total[k] = total.get(k, 0) + v
    return ", ".join(f"{v} {k}" for k, v in sorted(total.items())) or "0"


DIAGNOSTICS = (  # (folder, Row attribute, the real phases, the real ITL, what the table says)
    ("sim-at-phases", "at_phases", True, False, "The simulator in each real run's phases but at the nominal 20 ms ITL"),
    ("sim-nominal", "nominal", False, False, "The simulator as a user's comparison runs it (every control loop starting "
     "with the load, the nominal 20 ms ITL)"),
)


def diagnostics(sc_path: Path, sc: Any, rows: list[Row], real: dict[tuple[str, int], Run | None], out: Path) -> None:
    """Diagnostics, not calibration: the simulator again without one or both of the real run's measured conditions
    (its loops' phases, its engines' ITL), everything else unchanged, so the table shows what each accounts for."""
    for folder, attr, phases, itl, _ in DIAGNOSTICS:
        simulate_side(sc_path, sc, rows, real, out, folder, attr, phases=phases, itl=itl)


def sensitivity(sc_path: Path, sc: Any, rows: list[Row], real: dict[tuple[str, int], Run | None], out: Path) -> None:
    """The simulator in each real run's measured conditions with its engines SPEED_BAND slower and faster: how far
    a difference in engine speed the size of the measurement's own drift over a run (the real time per output
    token moves by about 0.5 % between the first 40 s and the rest of a run) moves goodput and the trajectory,
    where a step of the staircase sits at a replica's capacity."""
    for folder, attr, factor in (("sim-slower", "slower", 1 + SPEED_BAND), ("sim-faster", "faster", 1 - SPEED_BAND)):
        simulate_side(sc_path, sc, rows, real, out, folder, attr, phases=True, itl=True, itl_factor=factor)


def simulate_side(sc_path: Path, sc: Any, rows: list[Row], real: dict[tuple[str, int], Run | None], out: Path,
                  folder: str, attr: str, **conditions: Any) -> None:
    """One more simulator side (run_sim's ``conditions``) into ``out/folder``, kept in each row's ``attr`` when
    every seed of the row ran."""
    labels = [r.autoscaler for r in rows]
    seeds = sorted({x.seed for r in rows for x in r.real})
    run_sim(sc_path, labels, seeds, real, out, folder, **conditions)
    for row in rows:
        runs = [load_run(out / folder / sc.name / row.autoscaler / f"seed-{x.seed}") for x in row.real]
        if runs and all(r is not None for r in runs):
            setattr(row, attr, runs)


def in_band(row: Row, key: str) -> bool | None:
    """Whether the real runs' mean of ``key`` lies between the slower and the faster simulator's (inclusive)."""
    if not (row.slower and row.faster and row.sim):
        return None
    band = [mean(getattr(x, key) for x in runs) for runs in (row.slower, row.sim, row.faster)]
    return min(band) <= mean(getattr(x, key) for x in row.real) <= max(band)


def band_table(rows: list[Row]) -> str:
    yes = {True: "yes", False: "no", None: "n/a"}
    lines = ["| autoscaler | goodput rps: sim 1 % slower / as measured / 1 % faster | real | real within | "
             "replica-s: sim 1 % slower / as measured / 1 % faster | real | real within | max ready: 1 % slower / "
             "1 % faster |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if not (r.slower and r.faster and r.sim):
            continue
        g = [mean(x.goodput for x in runs) for runs in (r.slower, r.sim, r.faster)]
        rs = [mean(x.replica_s for x in runs) for runs in (r.slower, r.sim, r.faster)]
        lines.append(
            f"| {r.autoscaler} | {' / '.join(f'{x:.2f}' for x in g)} | {mean(x.goodput for x in r.real):.2f} | "
            f"{yes[in_band(r, 'goodput')]} | {' / '.join(f'{x:.0f}' for x in rs)} | "
            f"{mean(x.replica_s for x in r.real):.0f} | {yes[in_band(r, 'replica_s')]} | "
            f"{'/'.join(str(x.max_ready) for x in r.slower)} / {'/'.join(str(x.max_ready) for x in r.faster)} |")
    return "\n".join(lines)


def diagnostic_table(rows: list[Row], attr: str) -> str:
    lines = ["| autoscaler | real lead s | real ITL mean ms | max ready: this sim / real | replica-s: this sim / real (Δ) "
             "| goodput rps: this sim / real (Δ) | trajectory targets |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        cf: list[Run] = getattr(r, attr)
        if not cf:
            continue
        rc, rr = mean(x.replica_s for x in cf), mean(x.replica_s for x in r.real)
        gc, gr = mean(x.goodput for x in cf), mean(x.goodput for x in r.real)
        lines.append(
            f"| {r.autoscaler} | {'/'.join(_f(x.control_lead_s, '{:.1f}') for x in r.real)} | "
            f"{'/'.join(_f(x.itl['mean'], '{:.1f}') for x in r.real)} | {'/'.join(str(x.max_ready) for x in cf)} / "
            f"{'/'.join(str(x.max_ready) for x in r.real)} | {rc:.0f} / {rr:.0f} ({_f(pct(rc, rr), '{:+.1f} %')}) | "
            f"{gc:.2f} / {gr:.2f} ({_f(pct(gc, gr), '{:+.1f} %')}) | {verdict_of(r, cf)} |")
    return "\n".join(lines)


def max_off(runs: list[Run], real: list[Run]) -> tuple[int, int]:
    """(seeds whose maximum differs, seeds compared): ``runs`` against the real runs of the same seeds."""
    by_seed = {x.seed: x.max_ready for x in real}
    pairs = [(x.max_ready, by_seed[x.seed]) for x in runs if x.seed in by_seed]
    return sum(a != b for a, b in pairs), len(pairs)


def own(row: Row, i: int) -> str:
    """The verdict of the simulator in repeat ``i``'s measured conditions against that repeat ('n/a' without)."""
    if len(row.repeat_sims) <= i or len(row.repeat_sims[i]) != len(row.repeats[i]):
        return "n/a"
    return verdict_of(row, row.repeat_sims[i], row.repeats[i])


def repeat_table(rows: list[Row]) -> str:
    """The real stack against itself: each repeated seed's second kwok run judged against its first by the targets
    the simulator is judged by, next to the simulator's verdict on the same seeds."""
    lines = ["| autoscaler | repeat | seeds | max ready: repeat / real / sim | replica-s: repeat / real (Δ) | "
             "goodput rps: repeat / real (Δ) | held requests the first new pods took: repeat / real / sim | "
             "repeat against real | sim against real | sim in the repeat's conditions against the repeat |",
             "|---|---|---|---|---|---|---|---|---|---|"]

    def col(runs: list[Run], key: str) -> str:
        return "/".join(_f(getattr(x, key), "{}") for x in runs)
    for r in rows:
        for i, rep in enumerate(r.repeats, 1):
            seeds = {x.seed for x in rep}
            real = [x for x in r.real if x.seed in seeds]
            sim = {x.seed: x for x in r.sim}
            sims = [sim[x.seed] for x in real if x.seed in sim]
            rp, rr = mean(x.replica_s for x in rep), mean(x.replica_s for x in real)
            gp, gr = mean(x.goodput for x in rep), mean(x.goodput for x in real)
            lines.append(
                f"| {r.autoscaler} | {i} | {len(rep)} | {col(rep, 'max_ready')} / {col(real, 'max_ready')} / "
                f"{col(sims, 'max_ready')} | {rp:.0f} / {rr:.0f} ({_f(pct(rp, rr), '{:+.1f} %')}) | "
                f"{gp:.2f} / {gr:.2f} ({_f(pct(gp, gr), '{:+.1f} %')}) | {col(rep, 'first_take')} / "
                f"{col(real, 'first_take')} / {col(sims, 'first_take')} | {verdict_of(r, rep)} | "
                f"{verdict_of(r, sims) if len(sims) == len(real) else 'n/a'} | {own(r, i - 1)} |")
    return "\n".join(lines)


def table(rows: list[Row]) -> str:
    head = ("| autoscaler | seeds | replica-s sim / real (Δ) | max sim / real | scale steps matched: sim, real "
            "(tolerance) | goodput rps sim / real (Δ) | TTFT p50 / p99 ms sim | real | ITL p50 / p99 ms sim | real | "
            "failures sim / real | targets |\n|---|---|---|---|---|---|---|---|---|---|---|---|")
    lines = [head]
    for r in rows:
        if not r.sim:
            lines.append(f"| {r.autoscaler} | 0 | | | | | | | | | | missing: {'; '.join(r.misses)} |")
            continue
        rs, rr = mean(x.replica_s for x in r.sim), mean(x.replica_s for x in r.real)
        gs, gr = mean(x.goodput for x in r.sim), mean(x.goodput for x in r.real)
        lag = f", real later by {mean(r.lag_s):+.1f} s" if r.lag_s else ""
        lines.append(
            f"| {r.autoscaler} | {len(r.sim)} | {rs:.0f} / {rr:.0f} ({_f(pct(rs, rr), '{:+.1f} %')}) | "
            f"{'/'.join(str(x.max_ready) for x in r.sim)} / {'/'.join(str(x.max_ready) for x in r.real)} | "
            f"{r.matched} of {r.sim_steps}, {r.real_matched} of {r.real_steps} in {r.moves} moves (±{r.tolerance_s:.0f} s"
            f"{lag}; {r.size_equal} same size{f'; {r.censored} unmatched at the end' if r.censored else ''}) | "
            f"{gs:.2f} / {gr:.2f} ({_f(pct(gs, gr), '{:+.1f} %')}) | "
            f"{_f(_m(r.sim, 'ttft', 'p50'))} / {_f(_m(r.sim, 'ttft', 'p99'))} | "
            f"{_f(_m(r.real, 'ttft', 'p50'))} / {_f(_m(r.real, 'ttft', 'p99'))} | "
            f"{_f(_m(r.sim, 'itl', 'p50'), '{:.1f}')} / {_f(_m(r.sim, 'itl', 'p99'), '{:.1f}')} | "
            f"{_f(_m(r.real, 'itl', 'p50'), '{:.1f}')} / {_f(_m(r.real, 'itl', 'p99'), '{:.1f}')} | "
            f"{_fails(r.sim)} / {_fails(r.real)} | {verdict(r)} |")
    return "\n".join(lines)


def verdict(r: Row) -> str:
    trajectory = "trajectory met" if not r.misses else "trajectory missed: " + "; ".join(r.misses)
    return f"{trajectory}; {'goodput met' if r.goodput_miss is None else r.goodput_miss + ' (missed)'}"


def summary_line(rows: list[Row]) -> str:
    done = [r for r in rows if r.sim]
    met = [r.autoscaler for r in done if not r.misses]
    good = [r.autoscaler for r in done if r.goodput_miss is None]
    seeds = max((len(r.sim) for r in done), default=0)
    within = [abs(d) for r in done if (d := pct(mean(x.replica_s for x in r.sim), mean(x.replica_s for x in r.real)))
              is not None]
    worst = f" (replica-seconds within {max(within):.1f} % at worst)" if within else ""
    nominal = [r.autoscaler for r in done if r.nominal and verdict_of(r, r.nominal) == "met"]
    missed = [r for r in done if r.goodput_miss is not None]
    band = [r.autoscaler for r in missed if in_band(r, "goodput")]
    banded = (f" Of the goodput misses, {len(band)} lie within the simulator's goodput with its engines 1 % slower "
              f"or faster: {', '.join(band) or 'none'}." if missed and any(r.slower for r in done) else "")
    off = [r for r in done if r.misses]
    moved = [r.autoscaler for r in off if any(runs and verdict_of(r, runs) == "met" for runs in (r.slower, r.faster))]
    banded += (f" Of the trajectory misses, {len(moved)} meet every trajectory target with the simulator's engines "
               f"1 % slower or faster: {', '.join(moved) or 'none'}." if off and any(r.slower for r in done) else "")
    phased = [r.autoscaler for r in done if r.at_phases and verdict_of(r, r.at_phases) == "met"]
    banded += (f" In the real phases at the nominal ITL: {len(phased)} of {len(done)}."
               if off and any(r.at_phases for r in done) else "")
    again = [(r, i) for r in done for i in range(len(r.repeats))]
    steady = sum(verdict_of(r, r.repeats[i]) == "met" for r, i in again)
    tracked = sum(own(r, i) == "met" for r, i in again)
    real_off = [max_off(r.repeats[i], r.real) for r, i in again]
    sim_off = [max_off(r.sim, r.real) for r in done if r.repeats] + \
        [max_off(r.repeat_sims[i], r.repeats[i]) for r, i in again if len(r.repeat_sims) > i]
    names = ", ".join(sorted({r.autoscaler for r, _ in again}))
    banded += (f" Run again on kwok ({len(again)} repetition{'' if len(again) == 1 else 's'} of {names}), the real "
               f"stack met every trajectory target against its own first runs in {steady} of {len(again)} (another "
               f"maximum in {sum(a for a, _ in real_off)} of {sum(b for _, b in real_off)} seeds); the simulator, in "
               f"each repetition's measured conditions, met them against that repetition in {tracked} of "
               f"{len(again)} (another maximum than the real run's, the first runs included, in "
               f"{sum(a for a, _ in sim_off)} of {sum(b for _, b in sim_off)} seeds)." if again else "")
    plain = (f" As a user's comparison runs the simulator (every loop starting with the load, the nominal ITL): "
             f"{len(nominal)} of {len(done)}: {', '.join(nominal) or 'none'}." if any(r.nominal for r in done) else "")
    return (f"Simulated vs real (CLUSTER=kwok, {seeds} seeds; the simulator in each real run's measured loop phase "
            f"and engine step times): {len(met)} of {len(done)} autoscalers meet every trajectory target{worst}: "
            f"{', '.join(met) or 'none'}; {len(good)} of {len(done)} meet the goodput target: "
            f"{', '.join(good) or 'none'}.{banded}{plain}")


SCAN_FACTORS = (0.98, 0.99, 1.0, 1.01, 1.02)  # the measured time per output token 2 % and 1 % slower and faster


def parse_staircases(text: str, steps: int) -> list[tuple[float, ...]]:
    """``--scan`` candidates: staircases separated by ``;``, each ``steps`` comma-separated rates (req/s > 0)."""
    out = []
    for part in text.split(";"):
        try:
            rates = tuple(float(x) for x in part.split(","))
        except ValueError:
            rates = ()
        if len(rates) != steps or not all(r > 0 for r in rates):
            raise ValueError(f"--scan {part.strip()!r}: expected {steps} comma-separated rates above 0 (the "
                             f"scenario's {steps} steps), candidates separated by ';', e.g. 1,1.5,5,1;1,2,4,1")
        out.append(rates)
    return out


def parse_factors(text: str) -> tuple[float, ...]:
    """``--scan-factors``: two or more comma-separated factors on the ITL, each in (0.5, 2)."""
    try:
        out = tuple(float(x) for x in text.split(","))
    except ValueError:
        out = ()
    if len(out) < 2 or not all(0.5 < f < 2.0 for f in out):
        raise ValueError(f"--scan-factors {text!r}: expected two or more comma-separated factors between 0.5 and 2, "
                         "e.g. 0.98,0.99,1,1.01,1.02")
    return out


def scan(sc_path: Path, labels: list[str], seeds: list[int], staircases: list[tuple[float, ...]], engine: Run,
         out: Path, factors: tuple[float, ...] = SCAN_FACTORS) -> list[dict[str, Any]]:
    """How the scenario's staircase was chosen, on the simulator alone: for each candidate staircase, every
    autoscaler and seed at the engine step times ``engine`` holds (the real engines' measured ITL and TTFT floor)
    times each of ``factors``, and which autoscaler-seeds change their maximum of ready replicas or their number of
    moves from one speed to another. A staircase whose steps sit at a replica's capacity changes many: there a
    1 % difference in engine speed decides whether a queue grows, and so a whole move (docs/fidelity.md)."""
    result = []
    for rates in staircases:
        name = "-".join(f"{r:g}" for r in rates)
        extra = tuple(f"workload.arrivals.steps.{i}.rate_rps={r:g}" for i, r in enumerate(rates))
        seen: dict[tuple[str, int], list[tuple[int, int]]] = {}
        for f in factors:
            folder = f"scan/{name}/x{f:g}"
            run_sim(sc_path, labels, seeds, {(a, s): engine for a in labels for s in seeds}, out, folder,
                    phases=False, itl=True, itl_factor=f, extra=extra)
            for a in labels:
                for s in seeds:
                    r = load_run(out / folder / "sim-vs-real" / a / f"seed-{s}")
                    assert r is not None, f"the simulator wrote no run for {a} seed {s}"
                    seen.setdefault((a, s), []).append((r.max_ready, len(r.steps)))
        changed = sorted(f"{a} seed {s}" for (a, s), v in seen.items() if len(set(v)) > 1)
        result.append({"staircase": list(rates), "changed": changed, "of": len(seen),
                       "outcomes": {f"{a}/{s}": v for (a, s), v in seen.items()}})
    return result


def scan_table(result: list[dict[str, Any]], factors: tuple[float, ...] = SCAN_FACTORS) -> str:
    head = ("| staircase req/s | autoscaler-seeds whose maximum or number of moves changes at ITL x "
            + ", ".join(f"{f:g}" for f in factors) + " | which |\n|---|---|---|")
    rows = [f"| {' → '.join(f'{r:g}' for r in x['staircase'])} | {len(x['changed'])} of {x['of']} | "
            f"{', '.join(x['changed']) or 'none'} |" for x in result]
    return "\n".join([head, *rows])


def engine_of(path: Path) -> Run:
    """The engine step times a scan runs at: the mean over an earlier raw-figures file's real runs of their
    measured ITL and TTFT floor (measurements of llm-d-inference-sim, not fitted to any result)."""
    runs = list(stored_real(path).values())
    itl = [r.itl["mean"] for r in runs if r.itl.get("mean") is not None]
    floor = [r.ttft_floor_ms for r in runs if r.ttft_floor_ms is not None]
    if not itl or not floor:
        raise ValueError(f"{path}: no real run with a measured ITL and TTFT floor (expected a sim_vs_real.json)")
    return Run(seed=0, time_scale=1.0, window_s=0.0, replica_s=0.0, max_ready=0, steps=[], goodput=0.0, failures={},
               ttft={}, itl={"mean": mean(itl)}, complete=True, ttft_floor_ms=mean(floor))


def update_docs(text: str, line: str) -> None:
    for path, body in ((ROOT / "docs" / "fidelity.md", text), (ROOT / "README.md", line)):
        doc = path.read_text()
        a, b = doc.find(MARK[0]), doc.find(MARK[1])
        if a < 0 or b < a:
            raise SystemExit(f"error: {path} has no {MARK[0]} ... {MARK[1]} markers")
        path.write_text(doc[:a + len(MARK[0])] + "\n" + body + "\n" + doc[b:])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--autoscalers", default=None, help="comma-separated labels (default: the suite's)")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--time-scale", type=float, default=2.0)
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "sim-vs-real")
    ap.add_argument("--reuse", action="store_true", help="keep complete runs already under --out")
    ap.add_argument("--compare-only", action="store_true", help="run nothing: compare what --out holds")
    ap.add_argument("--real-from", type=Path, default=None,
                    help="take the kwok side from this earlier raw-figures JSON; run the simulator side only")
    ap.add_argument("--repeat", type=Path, action="append", default=[], metavar="DIR",
                    help="another kwok run of the same seeds (an earlier --out, its kwok-ts* folders; repeatable): "
                         "each judged against the first by the same targets, the real stack's noise floor")
    ap.add_argument("--json", type=Path, default=None, help="raw figures (default: OUT/sim_vs_real.json)")
    ap.add_argument("--update-docs", action="store_true")
    ap.add_argument("--no-diagnostic", action="store_true",
                    help="skip the diagnostic simulator runs (without the measured conditions; engines 1 % off)")
    ap.add_argument("--check", action="store_true", help="exit 1 when an autoscaler misses a trajectory target")
    ap.add_argument("--check-goodput", action="store_true", help="... or the goodput target")
    ap.add_argument("--scan", default=None, metavar="RATES[;RATES...]",
                    help="run no comparison: scan candidate staircases on the simulator alone (how the scenario's "
                         "was chosen), e.g. '1,1.5,5,1;1,3,6,1.5'")
    ap.add_argument("--scan-engine", type=Path, default=ROOT / "benchmarks" / "data" / "sim_vs_real.json",
                    help="the raw figures whose real runs' measured ITL and TTFT the scan runs at")
    ap.add_argument("--scan-factors", default=",".join(f"{f:g}" for f in SCAN_FACTORS),
                    help="the engine speeds of the scan, as factors on the ITL")
    ap.add_argument("--scan-itl-ms", type=float, default=None, help="... or this ITL (ms), measured elsewhere")
    ap.add_argument("--scan-ttft-ms", type=float, default=None, help="... and this TTFT floor (ms)")
    args = ap.parse_args()
    args.out = args.out.resolve()  # the runs' commands start in the repository root
    sc_path, sc, labels = scenario_and_labels(args.autoscalers.split(",") if args.autoscalers else None)
    seeds = [int(s) for s in args.seeds.split(",")]
    if args.scan is not None:
        try:
            staircases = parse_staircases(args.scan, len(sc.workload[0].arrivals.steps))
            factors = parse_factors(args.scan_factors)
            engine = engine_of(args.scan_engine) if args.scan_engine.is_file() else None
            if engine is not None and (args.scan_itl_ms or args.scan_ttft_ms):
                if not (args.scan_itl_ms and args.scan_ttft_ms and args.scan_itl_ms > 0 and args.scan_ttft_ms > 0):
                    raise ValueError("--scan-itl-ms and --scan-ttft-ms: expected both, each above 0")
                engine.itl, engine.ttft_floor_ms = {"mean": args.scan_itl_ms}, args.scan_ttft_ms
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        if engine is None:
            print(f"error: --scan-engine {args.scan_engine}: no such file (expected an earlier sim_vs_real.json)",
                  file=sys.stderr)
            return 2
        print(f"engine: ITL {engine.itl['mean']:.2f} ms, TTFT {engine.ttft_floor_ms:.1f} ms", flush=True)
        result = scan(sc_path, labels, seeds, staircases, engine, args.out, factors)
        print(scan_table(result, factors))
        (args.out / "scan.json").write_text(json.dumps(result, indent=1))
        return 0
    stored = None
    if args.real_from is not None:
        if not args.real_from.is_file():
            print(f"error: --real-from {args.real_from}: no such file (expected an earlier sim_vs_real.json)",
                  file=sys.stderr)
            return 2
        stored = stored_real(args.real_from)
    for folder in args.repeat:
        if not folder.is_dir():
            print(f"error: --repeat {folder}: no such folder (expected an earlier --out holding kwok-ts* runs)",
                  file=sys.stderr)
            return 2
    if not args.compare_only and stored is None:
        run_real(sc_path, sc, labels, seeds, args.time_scale, args.out, args.reuse)
    real = real_runs(sc, labels, seeds, args.out, stored)
    if not args.compare_only:
        run_sim(sc_path, labels, seeds, real, args.out, "sim", phases=True, itl=True)
    rows = compare(sc, labels, seeds, args.out, real)
    for folder in args.repeat:
        add_repeat(rows, real_runs(sc, labels, seeds, folder.resolve(), None))
    if not args.repeat and args.real_from is not None:
        stored_rep = stored_repeats(args.real_from)
        for row in rows:
            row.repeats = stored_rep.get(row.autoscaler, [])
    simulate_repeats(sc_path, sc, rows, args.out, run=not args.compare_only)
    if not args.no_diagnostic:
        diagnostics(sc_path, sc, rows, real, args.out)
        sensitivity(sc_path, sc, rows, real, args.out)
    text, line = table(rows), summary_line(rows)
    for _, attr, _, _, title in DIAGNOSTICS:
        if any(getattr(r, attr) for r in rows):
            text += f"\n\n{title}; against the same real runs (a diagnostic, not part of the targets):\n\n" + \
                diagnostic_table(rows, attr)
    if any(r.slower for r in rows):
        text += ("\n\nHow far the engines' speed moves the outcome: the simulator in each real run's measured "
                 "conditions with the time per output token 1 % longer and 1 % shorter (a diagnostic, not part of "
                 "the targets):\n\n" + band_table(rows))
    if any(r.repeats for r in rows):
        text += ("\n\nThe real stack against itself: the same seeds run again on kwok (`--repeat`), each "
                 "judged against the first by the targets above (the noise floor of a per-seed comparison; "
                 "not part of the targets):\n\n" + repeat_table(rows))
    print(text + "\n\n" + line)
    raw = {"scenario": sc.name, "targets": TARGETS, "rows": [asdict(r) for r in rows], "summary": line}
    out_json = args.json or args.out / "sim_vs_real.json"
    out_json.parent.mkdir(parents=True, exist_ok=True)
    out_json.write_text(json.dumps(raw, indent=1))
    if args.update_docs:
        update_docs(text, line)
    missed = any(r.misses for r in rows) or (args.check_goodput and any(r.goodput_miss for r in rows))
    return 1 if (args.check or args.check_goodput) and missed else 0


if __name__ == "__main__":
    sys.exit(main())
