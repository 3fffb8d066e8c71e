"""The embedded simulator: the serving model (engine/), the router, flow control, start-ups, the event
loop on a virtual clock and its backend (docs/simulator.md)."""
