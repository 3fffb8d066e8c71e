"""When a run's HPAs came to be (harness/kube/births.py): the origin of the in-cluster controllers' phase."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from scalearena.harness.kube.births import HpaBirths, wait_forgotten
from scalearena.harness.kube.wva.fake import FakeKubeAPI


def hpa(name: str) -> dict:
    return {"kind": "HorizontalPodAutoscaler", "apiVersion": "autoscaling/v2",
            "metadata": {"name": name, "namespace": "scalearena"}}


def test_an_hpa_the_apply_made_begins_at_the_apply_and_one_keda_made_when_first_listed() -> None:
    api = FakeKubeAPI([hpa("va-sim")])
    now = [100.0]
    b = HpaBirths(api, "scalearena", applied_wall=100.0, every_s=0.1, clock=lambda: now[0])
    b.poll(first=True)  # at the start: the apply's own HPA is already there
    assert b.origin() == (100.0, "apply")
    # KEDA's operator makes its HPA later; the poll at 106.3 lists it first: it appeared in (106.2, 106.3]
    b2 = HpaBirths(FakeKubeAPI(), "scalearena", applied_wall=100.0, every_s=0.1, clock=lambda: now[0])
    b2.poll(first=True)
    now[0] = 106.2
    b2.poll()
    b2.api.put(hpa("keda-hpa-llmd-slo-va-sim"))
    now[0] = 106.3
    b2.poll()
    t, what = b2.origin()
    assert t == pytest.approx(106.25) and what == "HPA keda-hpa-llmd-slo-va-sim, first listed 6.25 s after the apply"
    assert HpaBirths(FakeKubeAPI(), "scalearena", applied_wall=100.0).origin() == (100.0, "apply")  # none seen


def test_the_thread_polls_until_stopped() -> None:
    api = FakeKubeAPI()
    b = HpaBirths(api, "scalearena", applied_wall=time.time(), every_s=0.01).start()
    api.put(hpa("keda-hpa-x"))
    deadline = time.monotonic() + 5.0
    while "keda-hpa-x" not in b.seen and time.monotonic() < deadline:  # a bound on the wait, not a timing
        time.sleep(0.01)
    b.stop()
    assert "keda-hpa-x" in b.seen and "keda-hpa-x" not in b.first_poll
    calls = len(api.calls)
    time.sleep(0.05)
    assert len(api.calls) == calls  # stopped: no more lists


class FakeTime:
    """A clock that sleeping advances, and an optional hook run at each sleep (a log line being written)."""

    def __init__(self, hook=None) -> None:
        self.now, self.slept, self.hook = 0.0, [], hook

    def clock(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.slept.append(s)
        self.now += s
        if self.hook:
            self.hook(self.now)


# a line as kube-controller-manager v1.33 wrote it on kwok (2026-12-05), the second and the name filled in
KLOG = ('I1205 11:58:{:02d}.484834   18313 horizontal.go:510] "Horizontal Pod Autoscaler has been deleted" '
        'logger="horizontal-pod-autoscaler-controller" HPA="scalearena/{}"\n')


def test_waits_until_the_controller_logged_forgetting_every_deleted_hpa(tmp_path: Path) -> None:
    log = tmp_path / "kube-controller-manager.log"
    log.write_text(KLOG.format(0, "va-sim")  # an earlier run's: before `since`
                   + KLOG.format(0, "va-sim").replace("scalearena/", "other/"))
    since = log.stat().st_size

    def write(now: float) -> None:  # the controller pops the two keys 1.0 s and 3.0 s after the deletion
        with open(log, "a") as f:
            if abs(now - 1.0) < 1e-9:
                f.write(KLOG.format(1, "keda-hpa-va-sim"))
            if abs(now - 3.0) < 1e-9:
                f.write(KLOG.format(3, "va-sim"))

    t = FakeTime(write)
    assert wait_forgotten(["va-sim", "keda-hpa-va-sim"], "scalearena", 7.5, log, since, t.clock, t.sleep) is True
    assert t.now == pytest.approx(3.0)  # 15 polls of 0.2 s: done once the second line is there, not a period later


def test_a_line_from_before_the_deletion_does_not_count_and_the_wait_is_bounded(tmp_path: Path) -> None:
    log = tmp_path / "kube-controller-manager.log"
    log.write_text(KLOG.format(0, "va-sim"))
    t = FakeTime()
    assert wait_forgotten(["va-sim"], "scalearena", 7.5, log, log.stat().st_size, t.clock, t.sleep) is False
    assert t.now == pytest.approx(2 * 7.5 + 5.0, abs=0.2)  # two periods and five seconds: 20 s


def test_without_the_log_one_period_and_a_second_and_nothing_to_forget_waits_not() -> None:
    t = FakeTime()
    assert wait_forgotten(["va-sim"], "scalearena", 15.0, None, 0, t.clock, t.sleep) is None
    assert t.slept == [16.0]  # the kind/cluster controller's default 15 s sync + 1 s
    t2 = FakeTime()
    assert wait_forgotten([], "scalearena", 15.0, None, 0, t2.clock, t2.sleep) is None
    assert t2.slept == []


def test_only_the_controllers_forget_lines_of_the_namespace_count() -> None:
    from scalearena.harness.kube.births import forgotten

    rescaled = ('I1205 11:56:33.851073   18313 horizontal.go:884] "Successfully rescaled" '
                'logger="horizontal-pod-autoscaler-controller" HPA="scalearena/va-sim" currentReplicas=1 '
                'desiredReplicas=2 reason="external metric s0-prometheus above target"\n')
    text = rescaled + KLOG.format(11, "keda-hpa-va-sim") + KLOG.format(12, "x").replace("scalearena/", "other/")
    assert forgotten(text, "scalearena") == {"keda-hpa-va-sim"}
