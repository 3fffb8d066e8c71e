"""The Kubernetes backend (kind or an existing cluster), one module per concern.

backend.py runs a scenario on a cluster; cluster.py drives kind/kubectl/helm;
render.py and patch.py render kustomize trees in Python; scenario.py turns a
scenario into objects; gateway.py, load.py and sampling.py own the gateway
choice, in-cluster load and the metric sampling loop.
"""
