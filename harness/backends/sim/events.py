"""Event kinds of the simulator's heap; the number is the same-time priority.

Same-time events run in this order (engine events, pod transitions, arrivals,
timeouts, faults, scrapes, decisions, samples, then a sequence number), which
is what makes a scenario and seed give byte-identical results.
"""
from __future__ import annotations

ENGINE, POD_READY, GRACE_END, ARRIVAL, TIMEOUT, FAULT, SCRAPE, DECIDE, DECIDE_FAST, SAMPLE, END = range(11)
FLOW = 11  # flow control's look at its queues (after END's number, so runs without it keep their order)
KV_DONE = 12  # a P/D request's KV has reached its decode pod (handoff.py; after END's number, as FLOW)
# start-ups (backends/sim/startup.py): only scenarios with cold_start phases or node pools book them
NODE_READY, CA_SCAN, POD_SCHEDULABLE, STANDBY_EXPIRE = 13, 14, 15, 16
