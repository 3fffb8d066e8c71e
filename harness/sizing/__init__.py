"""Capacity worked out from the serving model outside a run: the oracle frontier, the perfect system,
static pool sizes, the planner's replica profile and validate's fit check."""
