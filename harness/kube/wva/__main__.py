"""``python -m scalearena.harness.kube.wva``: run the WVA controller, in a pod or from a laptop.

In a pod it uses its service account; elsewhere a kubeconfig (``--kubeconfig``,
``$KUBECONFIG``, ``~/.kube/config``) — none found is exit 2 with one message
naming what was expected. Prometheus credentials (bearer token file, CA
bundle, client certificate) are read from files and never logged: the only
URL ever logged is the Prometheus base URL.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scalearena.contracts.errors import UserError

log = logging.getLogger("scalearena.wva")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    env = os.environ.get
    p = argparse.ArgumentParser(prog="python -m scalearena.harness.kube.wva", description=__doc__)
    p.add_argument("--namespace", default=env("POD_NAMESPACE", "scalearena"), help="namespace to watch")
    p.add_argument("--kubeconfig", default=None, help="kubeconfig path (default: in-cluster, $KUBECONFIG, ~/.kube)")
    p.add_argument("--context", default=None, help="kubeconfig context (default: current)")
    p.add_argument("--prometheus-url", default=env("PROMETHEUS_URL", "http://prometheus.scalearena.svc:9090"))
    p.add_argument("--prometheus-token-file", default=env("PROMETHEUS_TOKEN_FILE"),
                   help="file holding a bearer token (ignored when absent)")
    p.add_argument("--prometheus-ca-file", default=env("PROMETHEUS_CA_FILE"), help="CA bundle for TLS")
    p.add_argument("--prometheus-insecure-skip-verify", action="store_true",
                   default=env("PROMETHEUS_INSECURE_SKIP_VERIFY", "") == "true")
    p.add_argument("--actuator", choices=("hpa", "keda", "direct"), default=env("WVA_ACTUATOR", "hpa"))
    p.add_argument("--interval", type=float, default=float(env("WVA_INTERVAL_S", "30")))
    p.add_argument("--fast-interval", type=float, default=float(env("WVA_FAST_INTERVAL_S", "0.1")))
    p.add_argument("--time-scale", type=float, default=float(env("WVA_TIME_SCALE", "1")),
                   help="scenario seconds per wall second (CLUSTER=kwok's time scale, kube/timescale.py): the metric "
                        "window and the staleness bound are divided by it; intervals and retention are given in "
                        "wall seconds")
    p.add_argument("--metrics-port", type=int, default=8080)
    p.add_argument("--metrics-host", default="0.0.0.0",  # noqa: S104 - every interface of the pod, as in a cluster
                   help="address of the /metrics and /healthz listener (CLUSTER=kwok: the Service's loopback address)")
    p.add_argument("--once", action="store_true", help="run one cycle and exit (smoke test)")
    return p.parse_args(argv)


def build(args: argparse.Namespace):  # noqa: ANN201 - returns (controller, api)
    from scalearena.controllers.registry import REGISTRY
    from scalearena.harness.kube.wva.config import (
        SATURATION_CONFIGMAP,
        SCALE_TO_ZERO_CONFIGMAP,
        wva_config_from_configmaps,
    )
    from scalearena.harness.kube.wva.controller import WVAKubeController
    from scalearena.harness.kube.wva.kubeapi import ClientKubeAPI, NotFound, load_api_client
    from scalearena.harness.metrics.prometheus import PrometheusAuth, PrometheusMetrics, PromQL

    api = ClientKubeAPI(load_api_client(args.kubeconfig, args.context))
    token_file = args.prometheus_token_file if args.prometheus_token_file and Path(
        args.prometheus_token_file).is_file() else None
    auth = PrometheusAuth(bearer_token_file=token_file, ca_file=args.prometheus_ca_file,
                          insecure_skip_verify=args.prometheus_insecure_skip_verify)
    if not 0 < args.time_scale <= 1000:
        raise UserError(f"--time-scale {args.time_scale!r}", where="--time-scale / WVA_TIME_SCALE",
                        expected="a number > 0 and <= 1000")
    promql = PromQL(extra_labels={"namespace": args.namespace})

    def configmap(name: str) -> dict[str, str]:
        try:
            return api.get_config_map(args.namespace, name).get("data", {}) or {}
        except NotFound:
            return {}

    config = wva_config_from_configmaps(configmap(SATURATION_CONFIGMAP), configmap(SCALE_TO_ZERO_CONFIGMAP),
                                        period_s=args.interval, fast_period_s=args.fast_interval or None)
    if args.time_scale != 1:  # the policy runs on the wall clock: its windows in wall seconds (retention: ConfigMap)
        config = config.model_copy(update={"staleness_s": config.staleness_s / args.time_scale,
                                           "metric_window_s": config.metric_window_s / args.time_scale})
    policy = REGISTRY.build(config)
    controller = WVAKubeController(
        api, policy, lambda variants: PrometheusMetrics(args.prometheus_url, variants, promql=promql, auth=auth),
        args.namespace, actuator=args.actuator)
    return controller, api


def serve(args: argparse.Namespace) -> None:
    from prometheus_client import start_http_server

    controller, _ = build(args)
    log.info("WVA controller: namespace=%s prometheus=%s actuator=%s", args.namespace, args.prometheus_url,
             args.actuator)
    if args.once:
        controller.reconcile()
        return
    start_http_server(args.metrics_port, addr=args.metrics_host, registry=controller.publisher.registry)
    stop = threading.Event()
    run_cycles(controller, args.interval, args.fast_interval, time.monotonic, stop.wait, stop.is_set)


def run_cycles(controller: Any, interval_s: float, fast_interval_s: float | None, clock: Callable[[], float],
               wait: Callable[[float], Any], stopped: Callable[[], bool]) -> None:
    """The optimisation cycle every ``interval_s`` (upstream WVA's fixed 30 s loop), never on watch events.

    Reconciling on every VariantAutoscaling/Deployment change made the in-cluster WVA decide far more
    often than its period (each scale it made triggered the next decision), unlike the simulated WVA,
    which decides on its period. The scale-from-zero loop runs every ``fast_interval_s`` in between.
    """
    next_main = clock()
    while not stopped():
        now = clock()
        if now >= next_main:
            try:
                controller.reconcile()
            except Exception as e:  # noqa: BLE001 - one failed cycle must not end the controller
                log.warning("reconcile failed: %s: %s", type(e).__name__, e)
            next_main += interval_s * max(1, int((now - next_main) // interval_s) + 1)  # no catch-up burst
        if fast_interval_s:
            try:
                controller.reconcile_fast()
            except Exception as e:  # noqa: BLE001
                log.warning("fast loop failed: %s: %s", type(e).__name__, e)
            wait(fast_interval_s)
        else:
            wait(max(0.0, next_main - clock()))


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        serve(parse_args(argv))
    except UserError as e:
        print(f"error: {e.render()}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
