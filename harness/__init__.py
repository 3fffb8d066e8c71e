"""Harness: the backends, the simulated cluster and what they share. Importing it installs the finder of
the simulator's compiled core (native.py), before any of its modules loads."""
from scalearena.harness.sim.native import install as _install_native

_install_native()
