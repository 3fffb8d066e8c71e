"""WVA as a Kubernetes controller (``python -m scalearena.harness.kube.wva``).

The policy is the shared ``wva`` autoscaler from the registry; this package is
only its Kubernetes adapters: the API door (kubeapi), status conditions
(status), actuation by published metric or scale subresource (actuator), the
ConfigMap translation (config) and the reconcile loops (controller).
"""
