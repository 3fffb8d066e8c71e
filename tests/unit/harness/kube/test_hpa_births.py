"""When a run's HPAs came to be (harness/kube/births.py): the origin of the in-cluster controllers' phase."""
from __future__ import annotations

import time

import pytest

from scalearena.harness.kube.births import HpaBirths
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
