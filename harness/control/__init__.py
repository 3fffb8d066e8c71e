"""The control plane: one loop, one view builder, for every backend.

``ports`` defines the seams a backend implements (Clock, MetricsSource,
Actuator, LoadProbe); ``view`` builds the ``ClusterView`` (forecast, KV
sizing, pod states); ``plane.ControlPlane`` runs decide -> apply -> sample.
See docs/control-plane.md and docs/architecture.md.
"""
