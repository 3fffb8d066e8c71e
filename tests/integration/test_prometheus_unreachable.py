"""A Prometheus nobody listens for: the reader raises MetricsUnavailable and never leaks its token.

Moved out of tests/unit because it opens a real TCP connection (refused) on 127.0.0.1.
"""
from __future__ import annotations

import pytest

from scalearena.contracts.errors import MetricsUnavailable
from scalearena.contracts.series import KV_USAGE
from scalearena.harness.local.supervisor import free_port
from scalearena.harness.metrics.prometheus import PrometheusAuth, PrometheusMetrics

SECRET = "s3cr3t-token-value"


def test_unreachable_prometheus_raises_metrics_unavailable_without_the_token() -> None:
    port = free_port()  # nothing listens there
    r = PrometheusMetrics(
        f"http://127.0.0.1:{port}", {"v": "m"}, auth=PrometheusAuth(bearer_token=SECRET), timeout_s=0.5
    )
    with pytest.raises(MetricsUnavailable) as exc:
        r.pod_max_over_time("v", KV_USAGE, 60)
    assert SECRET not in str(exc.value)
    assert SECRET not in repr(r)
    assert SECRET not in repr(PrometheusAuth(bearer_token=SECRET, client_key="/k"))
