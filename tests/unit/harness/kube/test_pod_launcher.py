"""The pod launcher of CLUSTER=kwok (harness/kube/launcher.py) and its KWOK Stages (manifests/kwok/).

No API server here: a fake records the status patches and deletions the launcher makes, the tests call
``step()`` themselves on a fake clock, and a probe function stands in for the HTTP probe. No socket either
(tests/unit/conftest.py); the probes, the relay and a real engine on its pod IP are in
tests/integration/test_pod_launcher_local.py. The processes are real (short Python children): a crash is a
real child's exit code and log, and stop() is checked against the process table.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml

from scalearena.contracts.errors import RunFailed
from scalearena.harness.config.scenario import load_scenario
from scalearena.harness.kube import launcher as L
from scalearena.harness.kube.render import render
from scalearena.harness.kube.scenario import variant_objects
from scalearena.harness.kube.wva.endpoints import VARIANT_SELECTOR

ROOT = Path(__file__).resolve().parents[4]
POD_IP = "127.9.0.5"
PYTHON = L.Program((), (), lambda name: sys.executable if name == "python" else None)  # argv as written


class FakeAPI:
    def __init__(self, config_maps: dict[str, dict[str, str]] | None = None) -> None:
        self.patches: list[tuple[str, dict[str, Any]]] = []
        self.deleted: list[tuple[str, str]] = []
        self.config_maps = config_maps or {}

    def list_pods(self, namespace: str, selector: str) -> tuple[list[dict[str, Any]], str]:
        return [], "1"

    def watch_pods(self, namespace: str, selector: str, rv: str) -> Iterator[tuple[str, dict[str, Any]]]:
        return iter(())

    def patch_status(self, namespace: str, name: str, body: dict[str, Any]) -> None:
        self.patches.append((name, body))

    def delete_pod(self, namespace: str, name: str, uid: str) -> None:
        self.deleted.append((name, uid))

    def config_map(self, namespace: str, name: str) -> dict[str, str] | None:
        return self.config_maps.get(name)


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def make_pod(name: str, containers: list[dict[str, Any]], ip: str = POD_IP, grace: int = 30) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                         "labels": {"scalearena.io/component": "variant", "scalearena.io/variant": "va"}},
            "spec": {"nodeName": "kwok-a100-0", "terminationGracePeriodSeconds": grace, "containers": containers},
            "status": {"phase": "Running", "podIP": ip, "hostIP": "127.0.0.1"}}


def python_container(code: str, **extra: Any) -> dict[str, Any]:
    return {"name": "engine", "image": "test/proc:1", "command": ["python", "-c", code], **extra}


def launcher(tmp_path: Path, **kw: Any) -> tuple[L.PodLauncher, FakeAPI]:
    api = FakeAPI()
    kw.setdefault("programs", {"test/proc": PYTHON})
    return L.PodLauncher(None, "ns", tmp_path / "logs", api=api, network="port", **kw), api


def add(pl: L.PodLauncher, obj: dict[str, Any]) -> None:
    pl._event("ADDED", obj)


def only_child(pl: L.PodLauncher) -> Any:
    (pod,) = pl.pods.values()
    (ct,) = pod.containers
    assert ct.child is not None
    return pod, ct, ct.child


def wait_for(cond: Any, timeout_s: float = 30.0) -> None:
    """Polls a condition (a process coming up); fails the test if it never holds."""
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


def last_status(api: FakeAPI) -> dict[str, Any]:
    return api.patches[-1][1]["status"]


def condition(status: dict[str, Any], kind: str) -> str:
    return next(c["status"] for c in status["conditions"] if c["type"] == kind)


# -- $(VAR) expansion and the environment ----------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "want"), [
    ("--pod=$(POD_NAME)", "--pod=va-1"),
    ("$(POD_IP):8000", "127.9.0.5:8000"),
    ("$$(POD_NAME)", "$(POD_NAME)"),          # $$ is an escaped $
    ("$(MISSING)", "$(MISSING)"),             # undefined: left as written
    ("$(POD_NAME", "$(POD_NAME"),             # unclosed
    ("a$b", "a$b"),                           # $ not followed by ( or $
    ("cost$", "cost$"),                       # trailing $
    ("$$", "$"),
    ("$$$(POD_NAME)", "$va-1"),
    ("$(POD_NAME)-$(POD_IP)", "va-1-127.9.0.5"),
    ("$()", "$()"),                           # empty name: not defined
])
def test_expand_as_the_kubelet(text: str, want: str) -> None:
    assert L.expand(text, {"POD_NAME": "va-1", "POD_IP": "127.9.0.5"}) == want


def test_container_env_literals_field_refs_and_config_maps() -> None:
    pod = make_pod("va-1", [])
    c = {"envFrom": [{"configMapRef": {"name": "cfg"}, "prefix": "CFG_"}],
         "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                 {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                 {"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                 {"name": "VARIANT", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['scalearena.io/variant']"}}},
                 {"name": "URL", "value": "http://$(POD_IP):8000/$(LATER)"},
                 {"name": "LATER", "value": "x"},
                 {"name": "KEY", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "A"}}},
                 {"name": "OPT", "valueFrom": {"configMapKeyRef": {"name": "none", "key": "A", "optional": True}}}]}
    env = L.container_env(pod, c, lambda ns, name: {"A": "1"} if (ns, name) == ("ns", "cfg") else None)
    assert env == {"CFG_A": "1", "POD_IP": "127.9.0.5", "POD_NAME": "va-1", "NS": "ns", "VARIANT": "va",
                   "URL": "http://127.9.0.5:8000/$(LATER)", "LATER": "x", "KEY": "1"}


@pytest.mark.parametrize("var", [
    {"name": "S", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
    {"name": "R", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
    {"name": "F", "valueFrom": {"fieldRef": {"fieldPath": "spec.priority"}}},
    {"name": "C", "valueFrom": {"configMapKeyRef": {"name": "missing", "key": "k"}}},
])
def test_env_the_launcher_cannot_honour_is_refused(var: dict[str, Any]) -> None:
    with pytest.raises(L.LaunchError):
        L.container_env(make_pod("p", []), {"env": [var]}, lambda ns, name: None)


# -- argv: what each image runs here ---------------------------------------------------------------------------------
def variant_pod(scenario: str, name: str = "va-1") -> dict[str, Any]:
    """A pod as the ReplicaSet makes it from the first variant Deployment rendered for the scenario."""
    sc = load_scenario(ROOT / "workloads/scenarios" / scenario)
    dep = next(o for o in variant_objects(sc, render(ROOT / "manifests/overlays/kind"))
               if o["kind"] == "Deployment" and o["metadata"]["labels"].get("scalearena.io/component") == "variant")
    tpl = dep["spec"]["template"]
    return {"metadata": {**tpl["metadata"], "name": name, "namespace": "scalearena", "uid": f"uid-{name}"},
            "spec": {**tpl["spec"], "nodeName": "kwok-a100-0"},
            "status": {"phase": "Running", "podIP": POD_IP, "hostIP": "127.0.0.1"}}


def test_repository_drops_tag_and_digest_only() -> None:
    assert L.repository("ghcr.io/llm-d/llm-d-inference-sim:v0.10.2") == "ghcr.io/llm-d/llm-d-inference-sim"
    assert L.repository("scalearena/serve-engine:dev") == "scalearena/serve-engine"
    assert L.repository("localhost:5000/engine") == "localhost:5000/engine"
    assert L.repository("localhost:5000/engine:v1@sha256:abc") == "localhost:5000/engine"


def test_sim_argv_is_the_built_binary_with_the_rendered_args() -> None:
    pod = variant_pod("exp2-cost-aware.yaml")
    c = pod["spec"]["containers"][0]
    assert c["image"] == "ghcr.io/llm-d/llm-d-inference-sim:v0.10.2"
    programs = L.default_programs(sim_binary=lambda: "/cache/bin/llm-d-inference-sim-v0.10.2")
    program = programs[L.repository(c["image"])]
    env = L.container_env(pod, c, lambda ns, name: None)
    own = L.plan_container(pod, c, program, env, network="netns")
    # own network namespace: the manifest's args unchanged, podIP:8000 relayed to its 8000
    assert own.argv == ["/cache/bin/llm-d-inference-sim-v0.10.2", *c["args"]]
    assert own.netns and own.forwards == {8000: 8000}
    shared = L.plan_container(pod, c, program, env, network="port", port=lambda: 41234)
    assert shared.argv == ["/cache/bin/llm-d-inference-sim-v0.10.2",
                           *["--port=41234" if a == "--port=8000" else a for a in c["args"]]]
    assert not shared.netns and shared.forwards == {8000: 41234}
    assert env["POD_IP"] == POD_IP and env["POD_NAME"] == "va-1" and env["POD_NAMESPACE"] == "scalearena"


def test_serve_engine_argv_binds_the_pod_ip_and_takes_the_time_scale() -> None:
    pod = variant_pod("hetero-roofline.yaml", name="va-7")
    c = pod["spec"]["containers"][0]
    assert c["image"] == "scalearena/serve-engine:dev"
    program = L.default_programs(sim_binary=lambda: "unused")[L.repository(c["image"])]
    env = L.container_env(pod, c, lambda ns, name: None)
    plan = L.plan_container(pod, c, program, env, network="port", time_scale=4.0)
    want = [sys.executable, "-m", "scalearena.harness.local.cli", "engine"]
    for a in c["args"]:
        want.append({"--host=0.0.0.0": f"--host={POD_IP}", "--pod=$(POD_NAME)": "--pod=va-7"}.get(a, a))
    assert plan.argv == [*want, "--time-scale=4.0"]
    assert plan.forwards == {} and not plan.netns
    assert L.plan_container(pod, c, program, env, network="port").argv == want  # no --time-scale at 1


def test_image_entrypoint_and_cmd_follow_the_kubelet_rule() -> None:
    program = L.engine_program()
    pod = make_pod("p", [])
    argv = L.plan_container(pod, {"image": "scalearena/serve-engine:dev"}, program, {}, network="port").argv
    assert argv == [sys.executable, "-m", "scalearena.harness.local.cli", "engine",
                    f"--host={POD_IP}", "--port=8000", "--model=model"]  # ENTRYPOINT + CMD, host on the pod IP
    argv = L.plan_container(pod, {"image": "x", "args": ["--model=m"]}, program, {}, network="port").argv
    assert argv == [sys.executable, "-m", "scalearena.harness.local.cli", "engine", "--model=m",
                    f"--host={POD_IP}"]  # args replace CMD; no --host: the pod IP, not 127.0.0.1
    with pytest.raises(L.LaunchError, match="no program 'bash'"):
        L.plan_container(pod, {"image": "x", "command": ["bash", "-c", "true"]}, program, {}, network="port")


# -- readiness -------------------------------------------------------------------------------------------------------
def test_readiness_ticks_initial_delay_and_thresholds() -> None:
    r = L.Readiness(L.ProbeSpec("http", "h", 1, initial_delay_s=5.0, period_s=2.0), started=100.0)
    assert [r.due(t) for t in (100.0, 101.0, 103.9, 104.0, 105.0)] == [False, False, False, False, False]
    assert r.due(106.0)   # ticks 100, 102, 104 fell inside the delay; 106 is the first probe
    assert not r.due(107.9)
    assert r.record(False) is None  # not ready to begin with
    assert r.due(108.0)
    assert r.record(True) is True   # success threshold 1
    assert r.record(False) is None and r.record(False) is None
    assert r.record(True) is None   # a success breaks the run of failures
    assert [r.record(False) for _ in range(3)] == [None, None, False]  # failure threshold 3
    assert r.due(117.0) and r.next_at == 118.0  # ticks 110..114 were missed: one probe, then on the grid again


def test_readiness_success_threshold() -> None:
    r = L.Readiness(L.ProbeSpec("http", "h", 1, period_s=1.0, success_threshold=2), started=0.0)
    assert r.due(0.0)  # no initial delay: the first tick probes
    assert [r.record(True), r.record(True)] == [None, True]


def test_probe_spec_resolves_named_port_defaults_and_time_scale() -> None:
    pod = variant_pod("exp2-cost-aware.yaml")
    c = pod["spec"]["containers"][0]
    startup = load_scenario(ROOT / "workloads/scenarios/exp2-cost-aware.yaml").cluster.variants[0].startup_s
    spec = L.probe_spec(pod, c, time_scale=2.0)
    assert spec is not None
    assert (spec.kind, spec.host, spec.port, spec.path) == ("http", POD_IP, 8000, "/health")
    assert spec.period_s == 1.0 and spec.timeout_s == 1.0  # periodSeconds 2 at time scale 2; timeout unscaled
    assert spec.initial_delay_s == pytest.approx(c["readinessProbe"].get("initialDelaySeconds", 0) / 2.0)
    assert c["readinessProbe"].get("initialDelaySeconds", 0) == round(startup)  # the variant's cold start
    assert (spec.success_threshold, spec.failure_threshold) == (1, 3)
    assert L.probe_spec(pod, {"name": "x"}) is None


# -- the launcher, with real processes --------------------------------------------------------------------------------
def test_ready_only_after_the_probe_passes_and_deletion_stops_the_process(tmp_path: Path) -> None:
    clock, answers, seen = Clock(100.0), {"ok": False}, []

    def probe(spec: L.ProbeSpec) -> bool:
        seen.append(spec)
        return answers["ok"]

    pl, api = launcher(tmp_path, probe=probe, clock=clock, time_scale=2.0, wall=lambda: 1_700_000_000.0)
    probe_def = {"httpGet": {"path": "/health", "port": "http"}, "initialDelaySeconds": 10, "periodSeconds": 2}
    obj = make_pod("va-1", [python_container("import time; time.sleep(600)", readinessProbe=probe_def,
                                             ports=[{"name": "http", "containerPort": 8000}])])
    kwok_ready = {"type": "Ready", "status": "False", "lastTransitionTime": "2023-11-14T22:00:00Z"}
    obj["status"]["conditions"] = [kwok_ready]  # what the Stage wrote
    add(pl, obj)
    pl.step()
    pod, ct, child = only_child(pl)
    assert child.alive()
    first = last_status(api)  # the container runs, not ready
    assert condition(first, "Ready") == "False" and first["containerStatuses"][0]["started"] is True
    assert first["containerStatuses"][0]["ready"] is False
    assert first["containerStatuses"][0]["state"]["running"]["startedAt"] == "2023-11-14T22:13:20Z"  # 1.7e9 s
    assert next(c for c in first["conditions"] if c["type"] == "Ready")["lastTransitionTime"] == "2023-11-14T22:00:00Z"
    for t in (101.0, 104.9):  # initial delay 10 s / time scale 2 = 5 s: no probe before 105
        clock.t = t
        pl.step()
    assert seen == []
    clock.t = 105.0
    pl.step()
    ct.in_flight.result()
    pl.step()
    assert len(seen) == 1 and seen[0].host == POD_IP and seen[0].port == 8000 and seen[0].path == "/health"
    assert condition(last_status(api), "Ready") == "False"
    answers["ok"] = True
    clock.t = 106.0  # next tick: period 2 s / 2
    pl.step()
    ct.in_flight.result()
    pl.step()
    status = last_status(api)
    assert condition(status, "Ready") == "True" and condition(status, "ContainersReady") == "True"
    assert next(c for c in status["conditions"] if c["type"] == "Ready")["lastTransitionTime"] == "2023-11-14T22:13:20Z"
    assert status["containerStatuses"][0]["ready"] is True
    assert "running" in status["containerStatuses"][0]["state"]

    pl._event("MODIFIED", {**obj, "metadata": {**obj["metadata"], "deletionTimestamp": "2025-01-01T00:00:00Z",
                                                 "deletionGracePeriodSeconds": 30}})
    pl.step()  # SIGTERM: python's default action ends it
    child.proc.wait(timeout=10)
    assert api.deleted == []
    pl.step()
    assert api.deleted == [("va-1", "uid-va-1")] and pl.pods == {}
    pl.check()  # a stop we asked for is no failure
    pl.stop()


def test_grace_period_then_sigkill_then_delete(tmp_path: Path) -> None:
    clock = Clock(200.0)
    pl, api = launcher(tmp_path, clock=clock, time_scale=2.0)
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(600)"
    obj = make_pod("stubborn", [python_container(code)], grace=30)
    add(pl, obj)
    pl.step()
    _, _, child = only_child(pl)
    wait_for(lambda: "up" in child.log_path.read_text())  # SIGTERM is ignored from here on
    pl._event("MODIFIED", {**obj, "metadata": {**obj["metadata"], "deletionTimestamp": "2025-01-01T00:00:00Z",
                                                 "deletionGracePeriodSeconds": 30}})
    pl.step()
    clock.t = 214.9  # grace 30 s / time scale 2 = 15 s
    pl.step()
    assert child.alive() and api.deleted == []
    clock.t = 215.0
    pl.step()
    assert not child.alive() and child.returncode() == -signal.SIGKILL
    assert api.deleted == [("stubborn", "uid-stubborn")]
    pl.check()
    pl.stop()


def test_a_container_that_exits_fails_the_run_with_its_log_tail(tmp_path: Path) -> None:
    pl, api = launcher(tmp_path)
    code = "import sys\nfor i in range(30): print(f'line {i}')\nprint('boom'); sys.exit(3)"
    add(pl, make_pod("crash", [python_container(code)]))
    pl.step()
    _, ct, child = only_child(pl)
    child.proc.wait(timeout=30)
    pl.step()
    (f,) = pl.failures
    assert (f.pod, f.container, f.exit_code) == ("ns/crash", "engine", 3)
    assert f.log_tail.splitlines() == [f"line {i}" for i in range(11, 30)] + ["boom"]  # the last 20 lines
    state = last_status(api)["containerStatuses"][0]["state"]["terminated"]
    assert state["exitCode"] == 3 and state["reason"] == "Error"
    assert condition(last_status(api), "Ready") == "False"
    with pytest.raises(RunFailed) as e:
        pl.check()
    msg = str(e.value)
    assert "container engine of pod ns/crash exited with code 3" in msg and "boom" in msg and "sys.exit(3)" in msg
    assert (tmp_path / "logs" / "ns_crash_engine.log").read_text().endswith("boom\n")
    pl.stop()


def test_an_unknown_flag_is_a_crash(tmp_path: Path) -> None:
    obj = variant_pod("hetero-roofline.yaml", name="va-bad")
    obj["spec"]["containers"][0]["args"].append("--no-such-flag")
    pl, api = launcher(tmp_path, programs=L.default_programs(sim_binary=lambda: "unused"))
    add(pl, obj)
    pl.step()
    _, _, child = only_child(pl)
    child.proc.wait(timeout=60)
    pl.step()
    (f,) = pl.failures
    assert f.exit_code == 2 and "No such option '--no-such-flag'" in f.log_tail
    with pytest.raises(RunFailed, match="--no-such-flag"):
        pl.check()
    pl.stop()


def test_unknown_image_of_an_engine_pod_fails_the_run(tmp_path: Path) -> None:
    pl, api = launcher(tmp_path)
    add(pl, make_pod("vllm", [{"name": "engine", "image": "vllm/vllm-openai:v0.9.0"}]))
    pl.step()
    (f,) = pl.failures
    assert f.exit_code is None and "no program for image 'vllm/vllm-openai:v0.9.0'" in f.command
    with pytest.raises(RunFailed, match="could not be started"):
        pl.check()
    pl.stop()


def test_pods_not_yet_running_are_left_alone(tmp_path: Path) -> None:
    pl, api = launcher(tmp_path)
    pending = make_pod("p", [python_container("pass")])
    pending["status"] = {"phase": "Pending"}
    unbound = make_pod("u", [python_container("pass")])
    del unbound["spec"]["nodeName"]
    for obj in (pending, unbound):
        add(pl, obj)
    pl.step()
    assert all(not p.containers for p in pl.pods.values()) and api.patches == [] and pl.failures == []
    pl.stop()


def test_stop_leaves_no_process(tmp_path: Path) -> None:
    pl, _ = launcher(tmp_path, stop_grace_s=0.5)
    stubborn = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(600)"
    add(pl, make_pod("a", [python_container("import time; time.sleep(600)")]))
    add(pl, make_pod("b", [python_container(stubborn)], ip="127.9.0.6"))
    pl.step()
    children = [ct.child for p in pl.pods.values() for ct in p.containers]
    wait_for(lambda: "up" in children[1].log_path.read_text())
    pids = [c.pid for c in children]
    pl.stop()
    assert not any(psutil.pid_exists(pid) for pid in pids)
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.killpg(pid, 0)
    assert pl.failures == []  # stopped, not crashed


# -- the KWOK Stages -------------------------------------------------------------------------------------------------
def test_stages_leave_engine_pods_to_the_launcher() -> None:
    stages = list(yaml.safe_load_all((ROOT / "manifests/kwok/stages.yaml").read_text()))
    assert all(s["apiVersion"] == "kwok.x-k8s.io/v1alpha1" and s["kind"] == "Stage" for s in stages)
    assert all(s["spec"]["resourceRef"] == {"apiGroup": "v1", "kind": "Pod"} for s in stages)
    by_name = {s["metadata"]["name"]: s for s in stages}
    assert set(by_name) == {"scalearena-engine-running", "pod-ready", "pod-complete", "pod-delete"}
    key, value = VARIANT_SELECTOR.split("=")
    assert L.VARIANT_SELECTOR == VARIANT_SELECTOR
    engine = by_name.pop("scalearena-engine-running")
    assert engine["spec"]["selector"]["matchLabels"] == {key: value}
    assert {"key": ".status.podIP", "operator": "DoesNotExist"} in engine["spec"]["selector"]["matchExpressions"]
    assert not engine["spec"]["next"].get("delete")
    template = engine["spec"]["next"]["statusTemplate"]
    assert "phase: Running" in template and 'type: Ready' in template and "ready: true" not in template
    for s in by_name.values():  # KWOK's defaults, for every other pod only
        assert {"key": f'.metadata.labels["{key}"]', "operator": "NotIn", "values": [value]} in \
            s["spec"]["selector"]["matchExpressions"]


def test_status_patch_is_json_and_strategic_merge_shaped(tmp_path: Path) -> None:
    pl, api = launcher(tmp_path)
    add(pl, make_pod("s", [python_container("import time; time.sleep(600)")]))
    pl.step()  # no readinessProbe: ready once running
    pl.step()
    status = last_status(api)
    json.dumps(api.patches)  # what goes over the wire
    assert condition(status, "Ready") == "True"
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert ready["reason"] is None and ready["message"] is None  # null removes KWOK's ContainersNotReady
    pl.stop()
