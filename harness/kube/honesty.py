"""Honest kube runs: measure only once the pipeline serves, and fail (exit 1) when a run measured nothing.

Deployments rolled out is not "ready to measure": Prometheus may not have
scraped a pod yet, prometheus-adapter may not serve the metric an HPA reads,
KEDA may not have made its HPA, and the gateway may answer 500 for every
request while its ``/health`` stays 200 (llm-d-inference-sim without a
tokenizer). Each of those made a run that looked normal and measured nothing.
So before t0, ``Readiness.wait`` requires, until a deadline:

* Prometheus: at least one ``component=variant`` target with health ``up``
  (``/api/v1/targets``);
* ``hpa``: the custom metrics API serves ``vllm_num_requests_waiting`` for pods
  (``kubectl get --raw /apis/custom.metrics.k8s.io/...``); ``wva`` (HPA actuation):
  the external metrics API serves ``wva_desired_replicas``; ``keda``: every
  ScaledObject has condition Ready=True;
* an autoscaler whose queries read ``kube_deployment_*`` (llm-d's queue-guard and
  SLO-aware recipes): Prometheus holds ``kube_deployment_status_replicas`` from
  kube-state-metrics for every variant Deployment (before that, the SLO-aware
  formula reads n = 0 replicas and asks for 0);
* one probe completion through the gateway answers 200.

After the run, ``check_run`` fails it with the reason when no request
succeeded, a port-forward process exited during the run (kubectl port-forward
exits after a connection reset, kubernetes/kubectl#1169, and every later
request then errors), or no vLLM sample ever arrived.
"""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from scalearena.contracts.errors import RunFailed
from scalearena.contracts.series import KSM_REPLICAS
from scalearena.harness.kube.cluster import Kubectl
from scalearena.harness.kube.scenario import NAMESPACE
from scalearena.workloads.load_handoff import PROBE_HEADER

Http = Callable[[str, bytes | None], tuple[int, str]]


def http(url: str, body: bytes | None = None, timeout_s: float = 10.0) -> tuple[int, str]:
    """(status, text) of a GET (or a JSON POST when ``body`` is given); status 0 when nothing answered."""
    headers = {"Content-Type": "application/json"}
    if body is not None:  # a POST is the gateway probe: marked so serve-router leaves it out of the request metrics
        headers[PROBE_HEADER] = "1"
    req = urllib.request.Request(url, data=body, method="POST" if body is not None else "GET", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as r:  # noqa: S310 - loopback port-forward URL
            return int(r.status), r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return int(e.code), e.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError) as e:
        return 0, str(e)


class Readiness:
    def __init__(self, kubectl: Kubectl, get: Http = http, timeout_s: float = 300.0, poll_s: float = 2.0,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
        self.kubectl, self.get, self.timeout_s, self.poll_s = kubectl, get, timeout_s, poll_s
        self.clock, self.sleep = clock, sleep

    def _until(self, what: str, probe: Callable[[], str | None]) -> None:
        """Poll ``probe`` (None = ready, else why not) until ready or the deadline."""
        deadline = self.clock() + self.timeout_s
        why = "not checked"
        while True:
            why = probe() or ""
            if not why:
                return
            if self.clock() >= deadline:
                raise RunFailed(f"not ready after {self.timeout_s:g} s: {what}: {why}")
            self.sleep(self.poll_s)

    def prometheus_targets(self, prom_url: str) -> str | None:
        status, text = self.get(prom_url + "/api/v1/targets?state=active", None)
        if status != 200:
            return f"Prometheus answered {status}: {text[:200]}"
        targets = [t for t in json.loads(text)["data"]["activeTargets"]
                   if t.get("labels", {}).get("component") == "variant"]
        if any(t.get("health") == "up" for t in targets):
            return None
        errors = sorted({t.get("lastError", "") for t in targets if t.get("lastError")})[:2]
        return f"{len(targets)} variant targets, none up" + (f" ({'; '.join(errors)})" if errors else "")

    def raw_metric(self, path: str) -> str | None:
        r = self.kubectl.run("get", "--raw", path, check=False, timeout=30)
        if r.returncode != 0:
            return (r.stderr or r.stdout).strip()[-200:] or f"exit {r.returncode}"
        return None if json.loads(r.stdout or "{}").get("items") else f"{path} has no items yet"

    def scaledobjects(self) -> str | None:
        r = self.kubectl.run("-n", NAMESPACE, "get", "scaledobjects", "-o", "json", check=False, timeout=30)
        if r.returncode != 0:
            return (r.stderr or r.stdout).strip()[-200:]
        not_ready = [o["metadata"]["name"] for o in json.loads(r.stdout or "{}").get("items", [])
                     if not any(c.get("type") == "Ready" and c.get("status") == "True"
                                for c in o.get("status", {}).get("conditions", []))]
        return f"ScaledObjects not Ready: {', '.join(not_ready)}" if not_ready else None

    def kube_state(self, prom_url: str, deployments: Sequence[str]) -> str | None:
        query = urllib.parse.quote(f'{KSM_REPLICAS}{{namespace="{NAMESPACE}"}}')
        status, text = self.get(f"{prom_url}/api/v1/query?query={query}", None)
        if status != 200:
            return f"Prometheus answered {status}: {text[:200]}"
        seen = {r["metric"].get("deployment") for r in json.loads(text)["data"]["result"]}
        missing = [d for d in deployments if d not in seen]
        return f"no {KSM_REPLICAS} for {', '.join(missing)} yet" if missing else None

    def probe_gateway(self, gateway_url: str, model: str) -> str | None:
        body = json.dumps({"model": model, "prompt": "r0 w", "max_tokens": 1}).encode()
        status, text = self.get(gateway_url + "/v1/completions", body)
        return None if status == 200 else f"probe completion answered {status}: {text[:200]}"

    def wait(self, prom_url: str, gateway_url: str | None, autoscaler_kind: str, model: str,
             kube_state: Sequence[str] = ()) -> None:
        """``kube_state``: the Deployments whose kube-state-metrics series the autoscaler reads (none: no wait)."""
        self._until("Prometheus scrapes a variant pod", lambda: self.prometheus_targets(prom_url))
        if kube_state:
            self._until("Prometheus has kube-state-metrics' series", lambda: self.kube_state(prom_url, kube_state))
        if autoscaler_kind == "hpa":
            self._until("prometheus-adapter serves vllm_num_requests_waiting", lambda: self.raw_metric(
                f"/apis/custom.metrics.k8s.io/v1beta1/namespaces/{NAMESPACE}/pods/*/vllm_num_requests_waiting"))
        elif autoscaler_kind == "wva":
            self._until("prometheus-adapter serves wva_desired_replicas", lambda: self.raw_metric(
                f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{NAMESPACE}/wva_desired_replicas"))
        elif autoscaler_kind == "keda":
            self._until("KEDA ScaledObjects Ready", self.scaledobjects)
        if gateway_url is not None:
            self._until("a completion through the gateway", lambda: self.probe_gateway(gateway_url, model))


def _tail(path: Path, n: int = 3) -> str:
    try:
        return " | ".join(path.read_text(errors="replace").strip().splitlines()[-n:])
    except OSError:
        return "no log"


def check_run(tally: Any, forwards: list[tuple[str, Any, Path]]) -> None:
    """Raise RunFailed when the run measured nothing trustworthy (after the run, before finish).
    ``tally``: the writer's running counts of what it wrote (``reports.results.RunTally``)."""
    for name, proc, log in forwards:
        if proc.poll() is not None:
            raise RunFailed(f"kubectl port-forward to {name} exited during the run (exit {proc.returncode}; "
                            f"kubernetes/kubectl#1169): {_tail(log)}")
    if tally.requests and not tally.status.get("ok"):
        codes = {int(k): int(v) for k, v in tally.http_status.items()}
        raise RunFailed(f"0 of {tally.requests} requests succeeded (HTTP status: count {dict(sorted(codes.items()))})")
    if tally.timeseries and not tally.timeseries_with_kv:
        raise RunFailed(f"no engine metrics arrived from Prometheus in {tally.timeseries} samples")
