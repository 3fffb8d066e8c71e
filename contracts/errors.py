"""User-facing errors.

Anything the user can fix (a malformed scenario, an unknown autoscaler, an
unreachable Prometheus, a missing kubeconfig) is raised as a ``UserError``.
The CLI turns it into one line on stderr and exit code 2 — never a traceback.
User values quoted in it (file names, field values) come out with control
characters escaped (``printable``): an error is one line, and never carries a
terminal escape.
"""
from __future__ import annotations

import re

# C0 and C1 control characters but tab, DEL, the line and paragraph separators and the Unicode bidi overrides and
# isolates: a value quoted into an error line must not start a second line (a forged `error:`), move the cursor,
# clear the screen or reorder the text around it
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with each control character written as its escape (``\x1b``, ``\u202e``)."""
    return _CONTROL.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), text)


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
        return printable("".join(parts))


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
