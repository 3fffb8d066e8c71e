"""The simulator's PromQL engine and a real Prometheus give the same answers on the same samples.

The samples (tests/integration/promql_corpus.py) are written as OpenMetrics,
backfilled with ``promtool tsdb create-blocks-from openmetrics``, and served by
a real ``prometheus`` on 127.0.0.1; every corpus query is asked of both at
every evaluation time. Equal means: the same label sets, values equal within
a relative 1e-9 (NaN equals NaN), or both refuse the query. Skipped with the
reason when prometheus/promtool are missing (``make prometheus`` installs
the Debian package, which ships both).
"""
from __future__ import annotations

import math
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from scalearena.harness.promql import TSDB, PromQLEngine, QueryExecutionError
from scalearena.harness.promql.values import Matrix, Scalar, Vector

from . import promql_corpus as corpus

pytestmark = [pytest.mark.local, pytest.mark.slow]
PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def prometheus_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not PROMETHEUS or not PROMTOOL:
        pytest.skip("prometheus and promtool not on PATH (run `make prometheus`: Debian package `prometheus`)")
    root = tmp_path_factory.mktemp("promql-diff")
    om = root / "samples.om"
    corpus.write_openmetrics(corpus.samples(), om)
    data = root / "tsdb"
    subprocess.run([PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", str(om), str(data)],
                   check=True, capture_output=True, timeout=60)
    config = root / "prometheus.yml"
    config.write_text("global:\n  evaluation_interval: 1m\n", encoding="utf-8")
    for _attempt in range(3):  # prometheus cannot bind port 0: pick one, retry if another process took it
        port = _free_port()
        proc = subprocess.Popen(
            [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={data}",
             f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=100y"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        url = f"http://127.0.0.1:{port}"
        if _wait_ready(proc, url):
            try:
                yield url
            finally:
                proc.terminate()
                proc.wait(timeout=10)
            return
        proc.kill()
        proc.wait(timeout=10)
    pytest.fail("prometheus did not become ready on 127.0.0.1 after 3 ports")


def _wait_ready(proc: subprocess.Popen[bytes], url: str) -> bool:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            if requests.get(f"{url}/-/ready", timeout=1).status_code == 200:
                return True
        except requests.RequestException:
            pass
        time.sleep(0.1)
    return False


@pytest.fixture(scope="module")
def engine() -> PromQLEngine:
    db = TSDB(retention_s=10_000)
    for (name, labels), points in sorted(corpus.samples().items(), key=lambda kv: kv[0]):
        key = tuple(sorted([*labels, ("__name__", name)]))
        for t, v in points:
            db.append_ms(key, t, v)
    return PromQLEngine(db)


def _ours(engine: PromQLEngine, query: str, t_ms: int) -> Any:
    try:
        value = engine.query(query, t_ms / 1000)
    except QueryExecutionError:
        return "error"
    if isinstance(value, Scalar):
        return ("scalar", value.value)
    if isinstance(value, Vector):
        return ("vector", {s.labels: s.value for s in value})
    assert isinstance(value, Matrix)
    return ("matrix", {s.labels: [(t, v) for t, v in s.points] for s in value})


def _theirs(session: requests.Session, url: str, query: str, t_ms: int) -> Any:
    r = session.get(f"{url}/api/v1/query", params={"query": query, "time": f"{t_ms / 1000:.3f}"}, timeout=10)
    body = r.json()
    if body["status"] != "success":
        assert r.status_code == 422, body  # an evaluation error, not a bad request
        return "error"
    kind, result = body["data"]["resultType"], body["data"]["result"]

    def labels(metric: dict[str, str]) -> tuple[tuple[str, str], ...]:
        return tuple(sorted(metric.items()))

    if kind == "scalar":
        return ("scalar", float(result[1]))
    if kind == "vector":
        return ("vector", {labels(s["metric"]): float(s["value"][1]) for s in result})
    return ("matrix", {labels(s["metric"]): [(round(float(t) * 1000), float(v)) for t, v in s["values"]]
                       for s in result})


def _same(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _diff(ours: Any, theirs: Any) -> str | None:
    if ours == "error" or theirs == "error":
        return None if ours == theirs else f"ours {ours!r} theirs {theirs!r}"
    if ours[0] != theirs[0]:
        return f"result type {ours[0]} vs {theirs[0]}"
    if ours[0] == "scalar":
        return None if _same(ours[1], theirs[1]) else f"scalar {ours[1]!r} vs {theirs[1]!r}"
    if set(ours[1]) != set(theirs[1]):
        return f"label sets differ: only ours {set(ours[1]) - set(theirs[1])}, only theirs {set(theirs[1]) - set(ours[1])}"
    for key, mine in ours[1].items():
        other = theirs[1][key]
        if ours[0] == "vector":
            if not _same(mine, other):
                return f"{dict(key)}: {mine!r} vs {other!r}"
        elif len(mine) != len(other) or any(ta != tb or not _same(va, vb)
                                            for (ta, va), (tb, vb) in zip(mine, other, strict=False)):
            return f"{dict(key)}: points {mine} vs {other}"
    return None


def test_corpus_is_large_enough() -> None:
    assert len(corpus.queries()) >= 50 and len(corpus.eval_times_ms()) >= 20


def test_engine_answers_as_prometheus_does(engine: PromQLEngine, prometheus_url: str) -> None:
    failures = []
    session = requests.Session()
    for query in corpus.queries():
        for t_ms in corpus.eval_times_ms():
            problem = _diff(_ours(engine, query, t_ms), _theirs(session, prometheus_url, query, t_ms))
            if problem:
                failures.append(f"{query} @ +{(t_ms - corpus.BASE_MS) / 1000:g}s: {problem}")
                break  # one line per query
    assert not failures, f"{len(failures)} queries differ:\n" + "\n".join(failures)


def test_the_corpus_has_data_in_both(engine: PromQLEngine, prometheus_url: str) -> None:
    """Guards against a vacuous pass: most answers are non-empty vectors."""
    t_ms = corpus.eval_times_ms()[12]
    theirs = _theirs(requests.Session(), prometheus_url, "count({__name__=~\".+\"})", t_ms)
    assert theirs[0] == "vector" and next(iter(theirs[1].values())) > 50
    nonempty = sum(1 for q in corpus.queries() if (r := _ours(engine, q, t_ms)) != "error" and r[1])
    assert nonempty >= 0.8 * len(corpus.queries())


def test_range_queries_match(engine: PromQLEngine, prometheus_url: str) -> None:
    """query_range: the same series with the same points at every step (Prometheus /api/v1/query_range)."""
    start, end, step = corpus.BASE_MS + 30_000, corpus.BASE_MS + 1_100_000, 45_000
    session = requests.Session()
    failures = []
    for query in corpus.queries()[::5]:
        if query.rstrip().endswith("]"):  # range selectors and bare subqueries are instant-only
            continue
        try:
            mine = engine.query_range(query, start / 1000, end / 1000, step / 1000)
            ours: Any = ("matrix", {s.labels: list(s.points) for s in mine})
        except QueryExecutionError:
            ours = "error"
        r = session.get(f"{prometheus_url}/api/v1/query_range", timeout=10, params={
            "query": query, "start": f"{start / 1000:.3f}", "end": f"{end / 1000:.3f}", "step": f"{step / 1000:g}"})
        body = r.json()
        theirs: Any = "error" if body["status"] != "success" else ("matrix", {
            tuple(sorted(s["metric"].items())): [(round(float(t) * 1000), float(v)) for t, v in s["values"]]
            for s in body["data"]["result"]})
        problem = _diff(ours, theirs)
        if problem:
            failures.append(f"{query}: {problem}")
    assert not failures, "\n".join(failures)
