"""The real servers' exporters of native series, without a socket: serve-router's EPP series
(router_metrics.py) and the local backend's kube-state-metrics (kube_state.py), parsed back from
the text exposition format with prometheus-client's parser."""
from __future__ import annotations

from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from scalearena.contracts import series as S
from scalearena.harness.control.ports import ReplicaStatus
from scalearena.harness.local.kube_state import DeploymentCollector, KubeStateExporter
from scalearena.harness.local.router_metrics import InFlight, RouterMetrics
from scalearena.harness.sim.router import Booking, RoutedPod


def samples(text: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for fam in text_string_to_metric_families(text.decode()):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def types(text: bytes) -> dict[str, str]:
    return {fam.name: fam.type for fam in text_string_to_metric_families(text.decode())}


POOL = (("inference_pool", "m"), ("model_name", "m"), ("service", "m-epp"))


def test_sse_events_are_counted_across_chunk_boundaries_and_usage_gives_the_tokens() -> None:
    r = InFlight("p", "m", received=1.0)
    # three token events, the second split inside its "\n\n"; then the usage chunk and [DONE]
    r.feed(b'data: {"choices":[{"text":"a"}]}\n\ndata: {"choices":[{"text":"b"}]}\n', 1.25)
    r.feed(b'\ndata: {"choices":[{"text":"c"}]}\n\n', 1.5)
    assert (r.streamed, r.first_byte) == (3, 1.25)
    r.feed(b'data: {"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3}}\n\ndata: [DONE]\n\n', 1.75)
    assert r.streamed == 5 and r.output_tokens() == 3  # the usage's count, not the 5 events
    bare = InFlight("p", "m", 0.0)
    bare.feed(b"data: {}\n\ndata: {}\n\ndata: [DONE]\n\n", 0.5)
    assert bare.output_tokens() == 2  # no usage chunk: events less [DONE]
    assert bare.output_tokens(b'{"usage":{"completion_tokens":9}}') == 9  # a unary body


def test_epp_series_from_the_router_state() -> None:
    held = {"m": 2}
    # pod a ready with 3 waiting, KV 0.25, 154 tokens booked; pod b ready with 0 waiting, KV 0.4375;
    # pod c draining (not in the saturation, its booking gone)
    endpoints = [("a", "m", True, 3, 0.25, 154), ("b", "m", True, 0, 0.4375, 0), ("c", "m", False, 9, 0.99, 0)]
    rm = RouterMetrics(lambda: (["m", "n"], held, endpoints, (4.0, 0.5)))
    rm.started(1, "a", "va", "m", received=10.0)
    rm.started(2, "a", "va", "m", received=10.5)
    text = rm.text()
    got = samples(text)
    assert got[(S.EPP_QUEUE_SIZE, POOL)] == 2.0
    # saturation = max over ready pods of max(waiting / 4, kv / 0.5): a max(0.75, 0.5), b max(0, 0.875) -> 0.875
    assert got[(S.EPP_POOL_SATURATION, POOL)] == 0.875
    assert got[(S.EPP_REQUEST_RUNNING, POOL)] == 2.0
    tok = {dict(k[1])["endpoint_name"]: v for k, v in got.items() if k[0] == S.EPP_INFLIGHT_TOKENS}
    assert tok == {"a": 154.0, "b": 0.0, "c": 0.0}
    # model n has no engine: saturation fails closed at 1; its histograms exist with zero counts
    n_pool = (("inference_pool", "n"), ("model_name", "n"), ("service", "n-epp"))
    assert got[(S.EPP_POOL_SATURATION, n_pool)] == 1.0
    assert got[(f"{S.EPP_TTFT_HIST}_count", (*n_pool, ("target_model_name", "n")))] == 0.0
    assert got[(S.OBJECTIVE_REQUESTS, (("model_name", "n"), ("service", "n-epp"), ("target_model_name", "n")))] == 0.0
    assert got[(S.ROUTER_QUEUE, (("model_name", "n"),))] == 0.0
    ty = types(text)
    assert (ty[S.EPP_TTFT_HIST], ty[S.EPP_TPOT_HIST], ty[S.EPP_INFLIGHT_TOKENS]) == ("histogram", "histogram", "gauge")
    assert not any(name.endswith("_created") for name, _ in got)  # the Go client writes none


def test_a_finished_request_observes_ttft_and_ntpot_an_error_nothing() -> None:
    rm = RouterMetrics(lambda: (["m"], {}, [], (5.0, 0.8)))
    pod = RoutedPod("a", engine=None)
    pod.inflight_tokens = 30  # the picker booked 10 uncached prompt tokens of each of three requests
    rm.arrived("m", 10)
    rm.arrived("m", 10)
    r = rm.started(1, "a", "va", "m", received=2.0, booked=Booking(((pod, 10),)))
    assert pod.inflight_tokens == 30
    r.feed(b'data: {"choices":[{}]}\n\n', 2.25)  # first byte 0.25 s after it came in: its 10 tokens released
    assert pod.inflight_tokens == 20
    r.feed(b'data: {"choices":[],"usage":{"completion_tokens":4}}\n\ndata: [DONE]\n\n', 3.0)
    rm.finished(1, "va", now=3.0, ok=True)
    assert pod.inflight_tokens == 20  # released once only
    rm.started(2, "a", "va", "m", received=2.0, booked=Booking(((pod, 10),)))
    rm.finished(2, "va", now=2.5, ok=False)  # a 429 or a cut stream: not a latency sample, booking released
    assert pod.inflight_tokens == 10
    got = samples(rm.text())
    obj = (("model_name", "m"), ("service", "m-epp"), ("target_model_name", "m"))
    # both arrivals counted with their 10 prompt tokens; the one answered 200 gave 4 output tokens
    assert got[(S.OBJECTIVE_REQUESTS, obj)] == 2.0 and got[(f"{S.OBJECTIVE_INPUT_TOKENS}_sum", obj)] == 20.0
    assert got[(f"{S.OBJECTIVE_OUTPUT_TOKENS}_sum", obj)] == 4.0 and got[(f"{S.OBJECTIVE_OUTPUT_TOKENS}_count", obj)] == 1.0
    h = (*POOL, ("target_model_name", "m"))
    assert got[(f"{S.EPP_TTFT_HIST}_count", h)] == 1.0 and got[(f"{S.EPP_TTFT_HIST}_sum", h)] == 0.25
    # TTFT 0.25 s falls in the le=0.4 bucket, not le=0.2
    assert got[(f"{S.EPP_TTFT_HIST}_bucket", tuple(sorted((*h, ("le", "0.2")))))] == 0.0
    assert got[(f"{S.EPP_TTFT_HIST}_bucket", tuple(sorted((*h, ("le", "0.4")))))] == 1.0
    # NTPOT = e2e 1.0 s / 4 tokens = 0.25 s
    assert got[(f"{S.EPP_TPOT_HIST}_sum", h)] == 0.25 and got[(f"{S.EPP_TPOT_HIST}_count", h)] == 1.0
    assert not rm.inflight


def test_kube_state_metrics_follow_the_replica_status() -> None:
    c = DeploymentCollector(["va", "vb"])
    # va: 3 desired, 2 ready, 1 pending (of which 1 starting), 1 terminating; vb: no status yet
    c.update({"va": ReplicaStatus(3, ("va-0", "va-1"), 1, 1, starting=1)})
    exporter = KubeStateExporter(c)
    from prometheus_client import generate_latest

    got: dict[Any, float] = samples(generate_latest(exporter.registry))
    lab = (("deployment", "va"), ("namespace", "scalearena"))
    # status.replicas = ready 2 + pending 1 (terminating left out); unavailable = 3 - 2 = 1
    assert got[(S.KSM_SPEC_REPLICAS, lab)] == 3.0 and got[(S.KSM_REPLICAS, lab)] == 3.0
    assert got[(S.KSM_REPLICAS_READY, lab)] == 2.0 and got[(S.KSM_REPLICAS_UNAVAILABLE, lab)] == 1.0
    assert not any(dict(k[1]).get("deployment") == "vb" for k in got)
    assert set(types(generate_latest(exporter.registry)).values()) == {"gauge"}
