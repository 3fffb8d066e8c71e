"""RayExecutor against a stand-in for the ``ray`` module (no cluster): how many runs a study keeps in
flight, how a lost worker is retried and marked, and that a run failing as a run is not retried.
tests/integration/test_ray.py runs the real thing on a local Ray instance."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from scalearena.harness.config.suite import RunPlan
from scalearena.harness.run import executor_ray
from scalearena.harness.run.executor import make_executor
from scalearena.harness.run.outcome import RunOutcome


class WorkerCrashed(Exception):
    pass


class _Ref:
    def __init__(self, plan: Any, attempt: int) -> None:
        self.plan, self.attempt = plan, attempt


class FakeRay:
    """``init``, ``cluster_resources``, ``remote``, ``wait``, ``get``: what RayExecutor calls. A plan whose
    ``rel_dir`` is in ``crash`` loses its worker on the first ``crash[dir]`` attempts."""

    def __init__(self, cpus: int, crash: dict[str, int] | None = None) -> None:
        self.cpus, self.crash, self.inits, self.attempts = cpus, dict(crash or {}), [], {}  # type: ignore[var-annotated]
        self.exceptions = type("exceptions", (), {"WorkerCrashedError": WorkerCrashed, "NodeDiedError": WorkerCrashed,
                                                  "ObjectLostError": WorkerCrashed, "RaySystemError": WorkerCrashed})

    def init(self, **kwargs: Any) -> None:
        self.inits.append(kwargs)

    def shutdown(self) -> None:
        pass

    def cluster_resources(self) -> dict[str, float]:
        return {"CPU": float(self.cpus)}

    def remote(self, **_options: Any) -> Any:
        fake = self

        def wrap(fn: Any) -> Any:
            class Task:
                @staticmethod
                def remote(plan: Any, cluster: str, options: dict[str, Any]) -> _Ref:
                    fake.attempts[plan.rel_dir] = fake.attempts.get(plan.rel_dir, 0) + 1
                    return _Ref(plan, fake.attempts[plan.rel_dir])
            return Task
        return wrap

    def wait(self, refs: list[_Ref], num_returns: int) -> tuple[list[_Ref], list[_Ref]]:
        return refs[:num_returns], refs[num_returns:]

    def get(self, ref: _Ref) -> tuple[RunOutcome, dict[str, bytes]]:
        if ref.attempt <= self.crash.get(ref.plan.rel_dir, 0):
            raise WorkerCrashed("worker died")
        status = "failed" if ref.plan.rel_dir == "bad" else "ok"
        return RunOutcome(ref.plan.rel_dir, status), {f"{ref.plan.rel_dir}/summary.json": b"{}"}


def _executor(monkeypatch: pytest.MonkeyPatch, fake: FakeRay, jobs: int | None, address: str | None) -> Any:
    monkeypatch.setattr(executor_ray, "_import_ray", lambda: fake)
    return make_executor("ray", jobs, "sim", address)


@pytest.mark.parametrize(("jobs", "address", "expected"), [
    (None, "auto", 16),  # no --jobs: every CPU of the cluster (16)
    (3, "auto", 3),  # --jobs 3 on a 16-CPU cluster: a study keeps 3 trials in flight
    (2, None, 2),  # a local instance started with num_cpus=2
])
def test_jobs_is_the_batch_in_flight(monkeypatch: pytest.MonkeyPatch, jobs: int | None, address: str | None,
                                     expected: int) -> None:
    fake = FakeRay(cpus=16 if address else 2)
    ex = _executor(monkeypatch, fake, jobs, address)
    assert ex.jobs == expected
    assert fake.inits[0].get("address") == address and fake.inits[0].get("num_cpus") == (jobs if not address else None)
    temp = fake.inits[0].get("_temp_dir")  # a local instance's session folder is the executor's own ...
    assert (temp is None) == (address is not None) and (temp is None or Path(temp).is_dir())
    ex.close()
    assert temp is None or not Path(temp).exists()  # ... and gone once it closes (not left in /tmp/ray)


def _plan(rel_dir: str) -> RunPlan:
    return RunPlan(None, None, rel_dir)  # type: ignore[arg-type]  # the fake task reads rel_dir only


def test_a_lost_worker_is_retried_and_marked_a_failed_run_is_not(monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    # "a" loses its worker once (ok on attempt 2), "b" three times (ATTEMPTS = 3: given up), "bad" fails as a run
    fake = FakeRay(cpus=2, crash={"a": 1, "b": 3})
    rows = {r.dir: r for r in _executor(monkeypatch, fake, 2, "auto").run(
        [_plan("a"), _plan("b"), _plan("bad")], tmp_path, lambda r: None)}
    assert rows["a"] == RunOutcome("a", "ok", attempts=2)
    assert rows["b"] == RunOutcome("b", "failed", error="worker lost 3 times: WorkerCrashed", attempts=3)
    assert rows["bad"] == RunOutcome("bad", "failed")  # a result, run once
    assert fake.attempts == {"a": 2, "b": 3, "bad": 1}
    assert (tmp_path / "a" / "summary.json").read_bytes() == b"{}" and not (tmp_path / "b").exists()
