"""Contracts shared by every side of scalearena: names and errors that the
autoscalers (controllers/), the harness (backends, engine, metrics sources),
workloads and reports all import, so no side has to import another to agree
on them. Nothing here imports anything else from scalearena."""
