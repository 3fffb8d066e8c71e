"""User-facing errors.

Anything the user can fix (a malformed scenario, an unknown autoscaler, an
unreachable Prometheus, a missing kubeconfig) is raised as a ``UserError``.
The CLI turns it into one line on stderr and exit code 2 — never a traceback.
"""
from __future__ import annotations


class UserError(Exception):
    """Bad input or an unusable environment: printed as one message, exit 2.

    ``where`` names the file (and line/field path when known); ``expected``
    says what would have been accepted.
    """

    def __init__(self, message: str, *, where: str | None = None, expected: str | None = None) -> None:
        self.message = message
        self.where = where
        self.expected = expected
        super().__init__(self.render())

    def render(self) -> str:
        parts = []
        if self.where:
            parts.append(f"{self.where}: ")
        parts.append(self.message)
        if self.expected:
            parts.append(f" (expected {self.expected})")
        return "".join(parts)


class RunFailed(Exception):
    """The run could not measure what it was asked to: exit 1, never 2 (the input was fine).

    Infrastructure failures (a command that failed, with its stderr tail), a run in
    which no request succeeded, a port-forward that died, metrics that never arrived.
    """


class MetricsUnavailable(Exception):
    """A MetricsSource could not answer (backend unreachable or data stale).

    Controllers catch this and behave as their upstream does when metrics are
    missing (WVA holds the last state, HPA skips the metric, ...).
    """
