"""Event kinds of the simulator's heap; the number is the same-time priority.

Same-time events run in this order (engine events, pod transitions, arrivals,
timeouts, faults, scrapes, decisions, HPA syncs, samples, then a sequence number), which
is what makes a scenario and seed give byte-identical results.
"""
from __future__ import annotations

from typing import Final

# Final: the compiled build (harness/sim/native.py) inlines them where they are compared
ENGINE: Final = 0
POD_READY: Final = 1
GRACE_END: Final = 2
ARRIVAL: Final = 3
TIMEOUT: Final = 4
FAULT: Final = 5
SCRAPE: Final = 6
DECIDE: Final = 7
DECIDE_FAST: Final = 8
HPA_SYNC: Final = 9  # an actuation HPA reads a published target (harness/control/actuation.py): after
# decisions, before samples, as on the wall-clock loop (harness/control/loop.py); booked only then
SAMPLE: Final = 10
END: Final = 11
FLOW: Final = 12  # flow control's look at its queues (after END's number, so runs without it keep their order)
KV_DONE: Final = 13  # a P/D request's KV has reached its decode pod (handoff.py; after END's number, as FLOW)
# start-ups (harness/sim/startup.py): only scenarios with cold_start phases or node pools book them
NODE_READY: Final = 14
CA_SCAN: Final = 15
POD_SCHEDULABLE: Final = 16
STANDBY_EXPIRE: Final = 17
