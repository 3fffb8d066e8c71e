"""``--executor ray``: every run is a Ray task; the driver writes its results into OUT.

A task runs one plan with ``runner.run_plan`` into a scratch folder on whatever node it lands on and
returns the run's outcome with the bytes of every file it wrote; the driver writes them under
``OUT/<run>/`` atomically. So the results folder needs no storage shared with the workers (a KubeRay
cluster works with the driver's local disk), and a worker that dies loses nothing written: the driver
sees the task fail with a system error (worker crashed, node died, object lost), submits it again, up
to ``ATTEMPTS`` times in all, and records ``attempts`` in the run's outcome (suite.json's row) when it
took more than one. A run that fails as a run (bad input, a bug) is not retried: it is a result.

Ray is an optional extra (``pip install 'scalearena[ray]'``): without it ``--executor ray`` is one
``error:`` line, exit 2. ``--address`` is passed to ``ray.init`` (``ray://HOST:10001`` for a remote
cluster's client server, ``HOST:6379`` or ``auto`` from inside one); without it a local Ray instance
with ``--jobs`` CPUs starts and stops with the command. An address that cannot be reached is exit 2
with the address and Ray's reason. ``SCALEARENA_RAY_CRASH_ONCE=<path>`` (fault injection for the test
that shows a lost worker is retried): the first task to find no file at that path creates it and kills
its worker process.
"""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from scalearena.contracts.errors import UserError
from scalearena.harness.config.suite import RunPlan
from scalearena.harness.run.outcome import RunOutcome
from scalearena.reports.results import atomic_write_bytes

ATTEMPTS = 3
CRASH_ONCE = "SCALEARENA_RAY_CRASH_ONCE"


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise UserError("--executor ray: Ray is not installed",
                        expected="pip install 'scalearena[ray]' (or --executor local)") from None
    return ray


def run_remote(plan: RunPlan, cluster: str, backend_options: dict[str, Any]) -> tuple[RunOutcome, dict[str, bytes]]:
    """The body of one task: run the plan in a scratch folder, return its outcome and its files."""
    from scalearena.harness.run.runner import run_plan

    marker = os.environ.get(CRASH_ONCE)
    if marker and not os.path.exists(marker):
        Path(marker).write_text("crashed once\n")
        os._exit(1)  # the worker dies mid-task, as on a lost node
    with tempfile.TemporaryDirectory(prefix="scalearena-ray-") as tmp:
        result = run_plan(plan, tmp, cluster, backend_options=backend_options)
        root = Path(tmp)
        files = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    return result, files


def check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """Fail fast on an address nobody listens at (``ray.init`` would retry for minutes): a TCP connect to
    HOST:PORT of ``HOST:PORT`` or ``ray://HOST:PORT``; ``auto`` and other forms are left to Ray."""
    import socket

    hostport = address.removeprefix("ray://")
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit():
        return
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout_s):
            pass
    except OSError as e:
        raise UserError(f"--address {address}: cannot reach the Ray cluster: {e.strerror or e}",
                        expected="a running Ray cluster (ray://HOST:10001, HOST:6379 or auto)") from None


class RayExecutor:
    """Runs plans as Ray tasks (see the module docstring)."""

    def __init__(self, address: str | None, jobs: int | None, cluster: str = "sim",
                 backend_options: Mapping[str, Any] | None = None) -> None:
        self.ray = ray = _import_ray()
        self.cluster, self.backend_options = cluster, dict(backend_options or {})
        if address is not None:
            check_reachable(address)
        # a local instance's session folder is ours, removed at close (Ray keeps /tmp/ray/session_* otherwise)
        self._temp = tempfile.mkdtemp(prefix="scalearena-ray-") if address is None else None
        try:
            if address is None:
                ray.init(num_cpus=jobs, include_dashboard=False, log_to_driver=False, configure_logging=False,
                         _temp_dir=self._temp)
            else:
                ray.init(address=address, log_to_driver=False, configure_logging=False)
        except (ConnectionError, RuntimeError, ValueError, TimeoutError, OSError) as e:
            if self._temp is not None:
                shutil.rmtree(self._temp, ignore_errors=True)
            raise UserError(f"--address {address}: cannot reach the Ray cluster: {type(e).__name__}: {e}",
                            expected="a running Ray cluster (ray://HOST:10001, HOST:6379 or auto)") from None
        # the batch a study keeps in flight: --jobs when given, else every CPU of the cluster
        self.jobs = max(1, jobs) if jobs is not None else max(1, int(ray.cluster_resources().get("CPU", 1)))
        self._task = ray.remote(num_cpus=1, max_retries=0)(run_remote)

    def _submit(self, plan: RunPlan) -> Any:
        return self._task.remote(plan, self.cluster, self.backend_options)

    def run(self, plans: list[RunPlan], out: Path, on_done: Any) -> list[RunOutcome]:
        ray = self.ray
        system = (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError, ray.exceptions.ObjectLostError,
                  ray.exceptions.RaySystemError)
        pending = {self._submit(p): (p, 1) for p in plans}
        results: list[RunOutcome] = []
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                plan, attempt = pending.pop(ref)
                try:
                    result, files = ray.get(ref)
                except system as e:
                    if attempt < ATTEMPTS:
                        pending[self._submit(plan)] = (plan, attempt + 1)
                        continue
                    result, files = RunOutcome(plan.rel_dir, "failed",
                                               error=f"worker lost {attempt} times: {type(e).__name__}"), {}
                for rel, data in sorted(files.items()):
                    atomic_write_bytes(Path(out) / rel, data)
                result.attempts = attempt
                results.append(result)
                on_done(result)
        return results

    def close(self) -> None:
        self.ray.shutdown()
        if self._temp is not None:
            shutil.rmtree(self._temp, ignore_errors=True)
            # Ray's exiting daemons may still recreate the folder after shutdown returns: once more at exit
            atexit.register(shutil.rmtree, self._temp, ignore_errors=True)
