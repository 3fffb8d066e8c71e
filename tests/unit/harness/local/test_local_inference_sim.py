"""``--backend-option engine=llm-d-inference-sim`` on --cluster local (harness/local/inference_sim.py).

No process and no socket here: the option's validation, the argv each pod gets (worked out by hand from
kube/scenario.py ``engine_args`` and the pod launcher), what is refused before anything starts, the pod label
the metrics relay adds, and the PodSet holding a sim pod pending for its cold start. The real binary behind
the local router and Prometheus: tests/integration/test_local_inference_sim.py.
"""
from __future__ import annotations

import copy
import itertools
import types
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from scalearena.contracts.errors import UserError
from scalearena.harness.config.scenario import scenario_from_data
from scalearena.harness.local import inference_sim as S, pods as local_pods
from scalearena.harness.run.registry import LocalOptions, build_backend, resolve_options

ROOT = Path(__file__).resolve().parents[4]
BIN = Path("/opt/sim/llm-d-inference-sim")  # never run: the argv only names it
SCENARIO: dict[str, Any] = {
    "name": "sim-engine", "duration_s": 10, "seed": 1,
    "cluster": {"variants": [{
        "name": "va", "model": "m", "gpu": "A100-80GB", "cost": 1.0, "min_replicas": 1, "max_replicas": 2,
        "startup_s": 20, "termination_grace_s": 5,
        "engine": {"max_num_seqs": 8, "kv_cache_blocks": 512, "block_size": 16, "max_waiting_queue": 50,
                   "latency": {"kind": "constant", "ttft_ms": 300, "itl_ms": 20, "time_factor_under_load": 1.5}}}]},
    "workload": {"arrivals": {"kind": "constant", "rate_rps": 1},
                 "input_tokens": {"kind": "fixed", "value": 100}, "output_tokens": {"kind": "fixed", "value": 40}},
    "autoscalers": [{"kind": "static"}],
}


def _scenario(**latency: Any) -> Any:
    data = copy.deepcopy(SCENARIO)
    data["cluster"]["variants"][0]["engine"]["latency"].update(latency)
    return scenario_from_data(data, "sim-engine")


def test_the_engine_option_is_validated_and_reaches_the_backend() -> None:
    assert resolve_options("local", {}, env={}) == LocalOptions(engine="serve-engine")
    assert resolve_options("local", {"engine": "llm-d-inference-sim"}, env={}).engine == "llm-d-inference-sim"  # type: ignore[attr-defined]
    with pytest.raises(UserError, match="engine='vllm'") as e:
        resolve_options("local", {"engine": "vllm"}, env={})
    assert "--backend-option engine" in e.value.render()
    assert build_backend("local", {"engine": "llm-d-inference-sim"}).engine == "llm-d-inference-sim"
    assert build_backend("local").engine == "serve-engine"
    with pytest.raises(UserError, match="prompt=field"):  # the sim would read a 1-word prompt
        build_backend("local", {"engine": "llm-d-inference-sim", "prompt": "field"})


def test_argv_is_the_kubernetes_paths_flags_with_the_pods_port_and_scaled_latencies() -> None:
    # By hand, at time scale 4: the kind overlay's template names --model=Qwen/Qwen3-0.6B, served as the
    # variant's model m; --port 8000 becomes the pod's port 41000 (the sim listens on :<port> only);
    # max-model-len = longest request (100 + 40 = 140 tokens) rounded up to whole 16-token blocks = 144;
    # the latencies divided by 4: TTFT 300 -> 75 ms, ITL 20 -> 5 ms, the prefill terms 0 -> 0 ms;
    # the load factor and the sizes are not durations and stay as they are.
    eng = S.SimEngine(_scenario(), 4.0, binary=BIN, network="port")  # the host's namespace (not root)
    argv, env = eng.command("va", "va-3", 41000)
    assert argv == [str(BIN), "--model=Qwen/Qwen3-0.6B", "--served-model-name=m", "--port=41000",
                    "--max-num-seqs=8", "--block-size=16", "--max-model-len=144", "--max-waiting-queue-length=50",
                    "--enable-kvcache", "--force-dummy-tokenizer", "--kv-cache-size=512",
                    "--time-to-first-token=75ms", "--inter-token-latency=5ms", "--prefill-overhead=0ms",
                    "--prefill-time-per-token=0ms", "--time-factor-under-load=1.5"]
    # the rendered container's downward-API env, as the kubelet resolves it (--enable-kvcache reads POD_IP)
    assert env == {"POD_NAME": "va-3", "POD_NAMESPACE": "scalearena", "POD_IP": "127.0.0.1"}
    assert eng.ready_path("va") == "/health"  # the rendered readinessProbe's path
    at1, _ = S.SimEngine(_scenario(), 1.0, binary=BIN, network="port").command("va", "va-0", 41001)
    assert "--time-to-first-token=300ms" in at1 and "--inter-token-latency=20ms" in at1


def test_as_root_each_sim_gets_a_network_namespace_and_a_loopback_relay() -> None:
    # netns mode (root): the sim keeps the rendered --port=8000 inside a namespace of its own, started through
    # the relay module's NETNS_EXEC; `started` relays 127.0.0.1:<slot port> to 8000 in that namespace
    from scalearena.harness.kube.relay import NETNS_EXEC

    eng = S.SimEngine(_scenario(), 1.0, binary=BIN, network="netns")
    argv, _ = eng.command("va", "va-0", 41002)
    assert argv[1:4] == ["-I", "-c", NETNS_EXEC] and argv[4] == str(BIN) and "--port=8000" in argv
    assert eng._forwards == {"va-0": {41002: 8000}}


class _FakeRelay:
    def __init__(self) -> None:
        self.added: list[tuple[str, str, dict[int, int], int]] = []
        self.removed: list[str] = []

    def add(self, key: str, host: str, forwards: dict[int, int], pid: int) -> None:
        self.added.append((key, host, forwards, pid))

    def remove(self, key: str) -> None:
        self.removed.append(key)


def test_the_relay_follows_the_pod() -> None:
    eng = S.SimEngine(_scenario(), 1.0, binary=BIN, network="netns")
    eng._relay = relay = _FakeRelay()
    eng.command("va", "va-0", 41003)
    eng.started("va-0", 4242)
    eng.gone("va-0")
    assert relay.added == [("va-0", "127.0.0.1", {41003: 8000}, 4242)] and relay.removed == ["va-0"]


def test_fractional_milliseconds_are_refused_before_and_after_the_time_scale() -> None:
    # 300 / 3 = 100 ms is whole but 20 / 3 = 6.67 ms is not; the scales keeping both whole divide gcd(300, 20) = 20
    with pytest.raises(UserError, match=r"--inter-token-latency=20ms would be 6\.66667 ms") as e:
        S.SimEngine(_scenario(), 3.0, binary=BIN)
    assert "1, 2, 4, 5, 10, 20" in e.value.render()
    # at scale 1 too: the rendered container refuses it (kube/scenario.py engine_args), on kind/kwok as here
    with pytest.raises(UserError, match=r"latency\.itl_ms 2\.5 is not whole milliseconds"):
        S.SimEngine(_scenario(itl_ms=2.5), 1.0, binary=BIN)


def test_roofline_and_pd_variants_are_refused_naming_the_variant() -> None:
    roofline = {"kind": "roofline", "model_shape": "qwen3-0.6b"}
    data = copy.deepcopy(SCENARIO)
    data["cluster"]["variants"][0]["engine"]["latency"] = roofline
    with pytest.raises(UserError) as e:
        S.SimEngine(scenario_from_data(data, "x"), 1.0, binary=BIN)
    text = e.value.render()
    assert "variant va: latency.kind roofline cannot run on llm-d-inference-sim" in text
    assert "cluster.variants[0].engine.latency" in text and "latency.kind: constant" in text


def test_a_missing_binary_is_one_line_naming_make_kwok_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCALEARENA_TOOLS_DIR", str(tmp_path / "empty"))
    with pytest.raises(UserError) as e:
        build_backend("local", {"engine": "llm-d-inference-sim"}).check(_scenario())
    text = e.value.render()
    assert "\n" not in text and "`make kwok-tools`" in text and "llm-d-inference-sim-v0.10.2" in text
    build_backend("local").check(_scenario())  # serve-engine needs no tool


def test_cli_refuses_a_missing_binary_before_the_out_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from scalearena.harness.cli.main import main
    from scalearena.harness.local import backend

    monkeypatch.setenv("SCALEARENA_TOOLS_DIR", str(tmp_path / "empty"))
    monkeypatch.setattr(backend, "find_prometheus", lambda: "prometheus")  # prometheus need not be installed
    scenario = tmp_path / "s.yaml"
    scenario.write_text(__import__("yaml").safe_dump(SCENARIO))
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["run", str(scenario), "--cluster", "local", "--out", str(out),
                                  "--backend-option", "engine=llm-d-inference-sim"])
    assert r.exit_code == 2, r.output
    assert "make kwok-tools" in r.output
    assert not out.exists()


def test_the_relay_adds_the_pod_label_to_every_sample() -> None:
    page = (b'# HELP vllm:num_requests_running Number of requests.\n# TYPE vllm:num_requests_running gauge\n'
            b'vllm:num_requests_running{model_name="m"} 3\nvllm:cache_config_info{block_size="16"} 1\n'
            b'process_open_fds 9\nempty{} 0\n')
    assert S.add_pod_label(page, "va-0").split(b"\n") == [
        b"# HELP vllm:num_requests_running Number of requests.", b"# TYPE vllm:num_requests_running gauge",
        b'vllm:num_requests_running{pod="va-0",model_name="m"} 3',
        b'vllm:cache_config_info{pod="va-0",block_size="16"} 1', b'process_open_fds{pod="va-0"} 9',
        b'empty{pod="va-0"} 0', b""]
    relay = S.MetricsRelay(lambda port: None)
    assert relay.page("/slot/4000/metrics")[0] == 503  # no pod on the slot: the scrape fails
    assert relay.page("/metrics")[0] == 503


class _Processes:
    """The Supervisor as PodSet uses it: records what it starts; every process is alive."""

    def __init__(self) -> None:
        self.started: list[tuple[str, list[str], dict[str, str] | None]] = []

    def start(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> Any:
        self.started.append((name, argv, env))
        return types.SimpleNamespace(proc=types.SimpleNamespace(pid=1000 + len(self.started)))

    def get(self, name: str) -> Any:
        return self

    def alive(self) -> bool:
        return True


def test_a_sim_pod_is_held_pending_for_its_cold_start(monkeypatch: pytest.MonkeyPatch) -> None:
    ports = itertools.count(30000)
    monkeypatch.setattr(local_pods, "free_port", lambda: next(ports))  # no socket in a unit test
    polled: list[str] = []

    class _Ok:
        status_code = 200

    def get(url: str, timeout: float) -> _Ok:
        polled.append(url)
        return _Ok()

    monkeypatch.setattr(local_pods.requests, "get", get)
    now = [1000.0]
    monkeypatch.setattr(local_pods.time, "time", lambda: now[0])
    sc = _scenario()
    procs = _Processes()
    pods = local_pods.PodSet(procs, list(sc.cluster.variants), 2.0, lambda: None, lambda k, d: None)  # type: ignore[arg-type]
    pods.sim = S.SimEngine(sc, 2.0, binary=BIN, network="port")
    pod = pods.spawn("va")  # cold: startup_s 20 at time scale 2 is 10 s of wall time
    name, argv, env = procs.started[0]
    assert argv[0] == str(BIN) and f"--port={pod.port}" in argv and env is not None and env["POD_NAME"] == name
    assert pods.owners == {pod.port: name}
    now[0] = 1009.9
    pods.poll()
    assert pod.state == local_pods.PENDING and polled == []  # held: not even asked
    now[0] = 1010.0
    pods.poll()
    assert pod.state == local_pods.READY and polled == [f"http://127.0.0.1:{pod.port}/health"]
    warm = pods.spawn("va", warm=True)  # the run's initial replicas: no hold
    assert warm.hold_until == 1010.0 and pods.owners == {pod.port: name, warm.port: warm.name}
