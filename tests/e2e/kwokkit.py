"""What the kwok tier's files share (tests/e2e/test_kwok*.py): the Go check, a process census by folder, one
short run on a given control plane, and a hook that reads the stack while it is still up."""
from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REQUIRED = os.environ.get("SCALEARENA_REQUIRE_KWOK") == "1"
# A plumbing run: 30 s of load and 10 s of drain; the engines' cold start (exp2: 20 s before the first pod is
# Ready) cut to 2 s, and a 5 s scrape (exp2: 15 s), so the run's readiness (Prometheus has every engine's
# series) and the autoscalers' first reads come sooner. What the kwok tier checks is that each stack runs and
# serves; the autoscalers' dynamics are the fidelity benchmark's (test_kwok_fidelity.py, benchmarks/sim_vs_real.py).
SHORT = ("duration_s=30", "drain_s=10", "cluster.variants.0.startup_s=2", "cluster.variants.1.startup_s=2",
         "metrics.scrape_interval_s=5")


def need_go() -> None:
    from scalearena.harness.kube import tools

    try:
        tools.preflight()
    except Exception as e:  # noqa: BLE001 - the reason is the skip message
        if REQUIRED:
            pytest.fail(f"SCALEARENA_REQUIRE_KWOK=1 but the kwok tier cannot run: {e}")
        pytest.skip(f"CLUSTER=kwok needs the Go toolchain to build the control plane: {e}")


def ours(folder: Path) -> list[str]:
    """Processes whose command line names ``folder`` (every component's flags do)."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if str(folder) in cmd and state != "Z":
            out.append(f"{pid}: {cmd[:120]}")
    return out


def run_on(cluster, folder: Path, autoscaler: str, scenario: str = "exp2-cost-aware.yaml",  # noqa: ANN001
           overrides: tuple[str, ...] = SHORT, time_scale: float = 1.0) -> dict:
    """One run of ``autoscaler`` on ``cluster`` into ``folder/autoscaler``; its summary and meta."""
    from scalearena.harness.config.scenario import load_scenario
    from scalearena.harness.kube.backend import KubeBackend
    from scalearena.reports.results import RunWriter

    sc = load_scenario(ROOT / "workloads/scenarios" / scenario, overrides=list(overrides))
    w = RunWriter(folder / autoscaler, {"scenario": sc.name, "autoscaler": autoscaler, "cluster": "kwok",
                                        "seed": sc.seed, "duration_s": sc.duration_s, "slo": sc.slo.model_dump(),
                                        "variants": []})
    backend = KubeBackend("kwok", ready_timeout_s=240, time_scale=time_scale)
    backend._kwok_cluster = lambda: cluster  # type: ignore[method-assign]  # the module's control plane
    backend.run(sc, sc.autoscaler(autoscaler), w)
    s = w.finish()
    # every request accounted for exactly once, and some served for real
    assert s["requests_total"] == s["requests_ok"] + sum(s["failures"].values())
    assert s["requests_ok"] > 0
    # teardown left an empty cluster: no namespace, no APIService of ours (kubernetes#75788 would leave it
    # Terminating); the next run starts clean
    assert not cluster.kubectl.exists("namespace", "scalearena")
    return {**s, "meta": w.meta}


@contextlib.contextmanager
def while_up(check: Callable[[object], None]) -> Iterator[None]:
    """Run ``check(sampler)`` once the load is over and before teardown (on kwok the stack's processes stop with
    the run, so what kind's e2e tests read afterwards is read here, while it still runs)."""
    from scalearena.harness.kube.sampling import Sampler

    finish = Sampler.finish

    def checked(self, *a, **k):  # noqa: ANN001, ANN002, ANN003, ANN202
        check(self)
        return finish(self, *a, **k)

    Sampler.finish = checked  # type: ignore[method-assign]
    try:
        yield
    finally:
        Sampler.finish = finish  # type: ignore[method-assign]
