"""In-cluster distributed Locust (SCALEARENA_LOAD), checked against a recording shell.

No cluster: ``kubectl`` is a recorder that answers the pod list with Ready
Locust pods and, for ``kubectl cp`` out of a worker, writes the records file
that worker would have written. Checked: when the in-cluster load is chosen
and with how many workers, that the Jobs render and validate, the command
sequence (pods Ready -> each worker's schedule share -> start time -> run ->
records and logs back), that no port-forward carries the load, and that the
copied records land in the run's requests exactly once each.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from scalearena.contracts.errors import UserError
from scalearena.harness.config.scenario import load_scenario
from scalearena.harness.kube.cluster import Kubectl
from scalearena.harness.kube.load import (
    INDEX_ANNOTATION,
    RATE_PER_WORKER,
    InClusterLoad,
    choose_load,
    locust_objects,
    peak_rps,
)
from scalearena.harness.kube.sampling import Sampler
from scalearena.harness.run.registry import resolve_options
from scalearena.workloads import load_handoff as load
from scalearena.workloads.base import RequestSpec
from scalearena.workloads.locust_incluster import wait_for_go, worker_env

from .test_kube_backend import EXP2, RecordingShell, backend, writer
from .test_manifests import K8S_VERSION

ROOT = Path(__file__).resolve().parents[4]
MANIFESTS = ROOT / "manifests"


def specs(arrivals: list[float]) -> list[RequestSpec]:
    return [RequestSpec(i, "llama3-70b", a, 10, 5) for i, a in enumerate(arrivals)]


class LocustShell(RecordingShell):
    """Answers the Locust pod list (all Ready) and plays the workers for `kubectl cp` out."""

    def __init__(self, workers: int) -> None:
        super().__init__()
        self.workers = workers

    def run(self, argv: list[str], *, input: str | None = None, timeout: float | None = None,
            check: bool = True) -> subprocess.CompletedProcess[str]:
        if "get" in argv and "pods" in argv:
            self.commands.append(list(argv))
            label = argv[argv.index("-l") + 1]
            ready = {"conditions": [{"type": "Ready", "status": "True"}]}
            if label.endswith("locust-master"):
                items = [{"metadata": {"name": "locust-master-x1"}, "status": ready}]
            else:
                items = [{"metadata": {"name": f"locust-worker-{i}-p", "annotations": {INDEX_ANNOTATION: str(i)}},
                          "status": ready} for i in range(self.workers)]
            return subprocess.CompletedProcess(argv, 0, json.dumps({"items": items}), "")
        if "cp" in argv and ":/work/records-" in argv[argv.index("cp") + 1]:
            src, dest = argv[argv.index("cp") + 1], Path(argv[argv.index("cp") + 2])
            i = int(src.rsplit("records-", 1)[1].split(".")[0])
            # worker i reports the first request of its share (request_id == i) as ok
            dest.write_text(json.dumps({"request_id": i, "model": "llama3-70b", "arrival_s": 0.5, "first_token_s": 0.7,
                                        "end_s": 1.0, "input_tokens": 10, "output_tokens": 5, "status": "ok",
                                        "http_status": 200, "variant": "va-a100", "pod": "p", "ttft_ms": 200.0,
                                        "itl_ms": 10.0, "e2e_ms": 500.0}) + "\n")
        return super().run(argv, input=input, timeout=timeout, check=check)


def test_peak_rate_is_the_busiest_one_second_bin() -> None:
    # bins [0,1): 0.1 0.5 0.9 -> 3; [1,2): 1.0 -> 1; [2,3): 2.5 -> 1
    assert peak_rps([0.1, 0.5, 0.9, 1.0, 2.5]) == 3
    assert peak_rps([]) == 0


def test_auto_goes_in_cluster_only_above_one_workers_rate() -> None:
    assert RATE_PER_WORKER == 400.0  # 80 % of the ~500 req/s one Locust process sustains (docs/local.md)
    at_limit = specs([i / 400 for i in range(400)])  # 400 in [0, 1)
    assert choose_load(None, at_limit) == ("port-forward", 0)
    above = specs([i / 401 for i in range(401)])  # 401 in [0, 1): ceil(401 / 400) = 2 workers
    assert choose_load(None, above) == ("in-cluster", 2)
    slow = specs([0.0, 1.0, 2.0])
    assert choose_load("in-cluster", slow) == ("in-cluster", 1)
    assert choose_load("port-forward", above) == ("port-forward", 0)
    assert choose_load("in-cluster", slow, 3) == ("in-cluster", 3)
    with pytest.raises(UserError, match="load_workers"):
        choose_load("in-cluster", slow, 0)
    with pytest.raises(UserError, match="unknown load mode"):
        choose_load("k6", slow)


def test_load_environment_overrides_resolve_in_the_registry() -> None:
    # $SCALEARENA_LOAD / _LOAD_WORKERS are read once, by the backend registry; the option wins over them
    env = {"SCALEARENA_LOAD": "in-cluster", "SCALEARENA_LOAD_WORKERS": "3"}
    o = resolve_options("kind", env=env)
    assert (o.load, o.load_workers) == ("in-cluster", 3)
    assert resolve_options("kind", {"load": "port-forward"}, env=env).load == "port-forward"
    with pytest.raises(UserError, match="SCALEARENA_LOAD_WORKERS"):
        resolve_options("kind", env={"SCALEARENA_LOAD_WORKERS": "0"})
    with pytest.raises(UserError, match="k6"):
        resolve_options("kind", env={"SCALEARENA_LOAD": "k6"})


def test_locust_jobs_render_and_validate() -> None:
    objs = locust_objects(MANIFESTS, workers=3, end_s=630.0, image=lambda s: "ghcr.io/me/serve-router:dev")
    for o in objs:
        kubernetes_validate.validate(o, K8S_VERSION, strict=True)
    jobs = {o["metadata"]["name"]: o for o in objs if o["kind"] == "Job"}
    worker, master = jobs["locust-worker"]["spec"], jobs["locust-master"]["spec"]
    assert worker["completionMode"] == "Indexed" and worker["completions"] == worker["parallelism"] == 3
    assert worker["activeDeadlineSeconds"] == master["activeDeadlineSeconds"] == 630 + 1800 + 900
    m = master["template"]["spec"]["containers"][0]
    assert m["args"] == ["--workers=3", "--host=http://gateway.scalearena.svc:8080", "--run-time-s=750",
                         "--dir=/work"]  # run time: 630 s + 120 s
    w = worker["template"]["spec"]["containers"][0]
    assert m["image"] == w["image"] == "ghcr.io/me/serve-router:dev"
    index_env = next(e for e in w["env"] if e["name"] == load.ENV_WORKER_INDEX)
    assert index_env["valueFrom"]["fieldRef"]["fieldPath"] == f"metadata.annotations['{INDEX_ANNOTATION}']"
    for spec in (worker, master):
        assert spec["template"]["spec"]["automountServiceAccountToken"] is False  # no API access
    svc = next(o for o in objs if o["kind"] == "Service")
    assert svc["spec"]["selector"].items() <= master["template"]["metadata"]["labels"].items()
    assert "--master-host=locust-master" in w["args"] and svc["metadata"]["name"] == "locust-master"


def test_in_cluster_load_ships_shares_then_start_time_and_collects(tmp_path: Path) -> None:
    shell = LocustShell(workers=2)
    now = [1000.0]
    runner = InClusterLoad(Kubectl(shell, "kind-scalearena"), 2, tmp_path, clock=lambda: now[0],
                           sleep=lambda s: None)
    t0 = runner.start(specs([0.0, 0.5, 1.0, 1.5, 2.0]), end_s=30.0, timeout_s=120.0)
    assert t0 == 1000.0 + 10.0 + 0.5 * 2  # margin 10 s + 0.5 s per worker's go copy
    assert [json.loads(x)["request_id"] for x in (tmp_path / "schedule-0.jsonl").read_text().splitlines()] == [0, 2, 4]
    assert [json.loads(x)["request_id"] for x in (tmp_path / "schedule-1.jsonl").read_text().splitlines()] == [1, 3]
    go = json.loads((tmp_path / "go.json").read_text())
    assert go == {"t0": 1011.0, "end_s": 30.0, "timeout_s": 120.0, "worker_count": 2}
    cmds = [" ".join(c[3:]) for c in shell.commands]  # without `kubectl --context kind-scalearena`
    cps = [c for c in cmds if c.startswith("cp ")]
    assert cps == [f"cp {tmp_path}/schedule-0.jsonl scalearena/locust-worker-0-p:/work/schedule.jsonl -c locust",
                   f"cp {tmp_path}/schedule-1.jsonl scalearena/locust-worker-1-p:/work/schedule.jsonl -c locust",
                   f"cp {tmp_path}/go.json scalearena/locust-worker-0-p:/work/go.json -c locust",
                   f"cp {tmp_path}/go.json scalearena/locust-worker-1-p:/work/go.json -c locust"]
    files = runner.collect()
    assert files == [tmp_path / "records-0.jsonl", tmp_path / "records-1.jsonl"]
    cmds = [" ".join(c[3:]) for c in shell.commands]
    assert "cp scalearena/locust-worker-1-p:/work/records-1.jsonl " + str(tmp_path / "records-1.jsonl") + \
        " -c locust" in cmds
    assert "-n scalearena logs locust-master-x1 -c locust" in cmds
    assert (tmp_path / "logs" / "locust-worker-0.log").exists()


def test_worker_side_reads_the_go_file_into_the_users_environment(tmp_path: Path) -> None:
    (tmp_path / "go.json").write_text('{"t0": 1011.0, "end_s": 30')  # half copied: read again
    ticks = iter(range(100))

    def sleep(_: float) -> None:
        if next(ticks) == 2:
            (tmp_path / "go.json").write_text('{"t0": 1011.0, "end_s": 30.0, "timeout_s": 120.0, "worker_count": 2}')

    go = wait_for_go(tmp_path, 60.0, clock=lambda: 0.0, sleep=sleep)
    env = worker_env(tmp_path, go, 1)
    assert env[load.ENV_T0] == "1011.0" and env[load.ENV_WORKER_INDEX] == "1" and env[load.ENV_WORKER_COUNT] == "2"
    assert env[load.ENV_SCHEDULE] == str(tmp_path / "schedule.jsonl")
    assert env[load.ENV_RECORDS] == str(tmp_path / "records-{worker}.jsonl")
    with pytest.raises(SystemExit):
        wait_for_go(tmp_path / "nowhere", 1.0, clock=iter([0.0, 0.5, 2.0]).__next__, sleep=lambda s: None)


def test_backend_in_cluster_run_applies_jobs_skips_the_gateway_forward_and_accounts_every_request(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Sampler, "loop", lambda self, alive, progress: None)  # no wall-clock run
    shell = LocustShell(workers=2)
    sc = load_scenario(EXP2, overrides=["duration_s=20", "drain_s=0"])
    w = writer(tmp_path)
    backend("kind", shell, load="in-cluster", load_workers=2).run(sc, sc.autoscaler("hpa"), w)
    cmds = shell.joined()
    applies = [i for i, c in enumerate(cmds) if "apply --server-side --force-conflicts" in c]
    first_pod_list = next(i for i, c in enumerate(cmds) if "get pods" in c and "locust-worker" in c)
    assert applies[-1] < first_pod_list  # the Jobs are applied before the backend waits for their pods
    assert not any("port-forward svc/gateway" in c for c in cmds)  # the load does not cross a port-forward
    assert any("port-forward svc/prometheus" in c for c in cmds)
    assert cmds[-1] == "kind delete cluster --name scalearena"
    assert w.meta["kube_load"] == "in-cluster"
    from scalearena.workloads.generate import build_requests

    n = len(build_requests(sc))
    assert n > 2
    assert sorted(r.request_id for r in w.requests_written()) == list(range(n))  # every scheduled request exactly once
    assert sorted(r.request_id for r in w.requests_written() if r.status == "ok") == [0, 1]  # what the workers reported


def test_default_run_keeps_the_port_forward(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SCALEARENA_LOAD", raising=False)

    def interrupted(self: Sampler, *a: Any, **k: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(Sampler, "drive", interrupted)
    shell = RecordingShell()
    sc = load_scenario(EXP2)
    with pytest.raises(KeyboardInterrupt):
        backend("kind", shell).run(sc, sc.autoscaler("hpa"), writer(tmp_path))
    cmds = shell.joined()
    assert any("port-forward svc/gateway" in c for c in cmds)
    # no Locust Job or pod (paths are cut out first: a checkout may live under a folder named locust)
    assert not any("locust" in c.replace(str(ROOT), "").replace(str(tmp_path), "") for c in cmds)
