"""The controller's and backend's only door to the Kubernetes API.

Everything above this module sees plain JSON dicts (exactly what the API
server sends), so unit tests replace it with ``FakeKubeAPI`` built from
recorded responses (tests/fixtures/k8s/*.json) and never open a socket.

``ClientKubeAPI`` wraps the official ``kubernetes`` client with
``_preload_content=False`` so its answers are the server's JSON, not the
client's model objects. It loads the in-cluster service account when it runs
in a pod, otherwise a kubeconfig (``--kubeconfig``, ``$KUBECONFIG``,
``~/.kube/config``); no kubeconfig at all is a ``UserError`` naming what was
looked for.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Protocol

from scalearena.contracts.errors import UserError
from scalearena.harness.config.safe_yaml import read_yaml

Obj = dict[str, Any]
VA_GROUP, VA_VERSION, VA_PLURAL = "llmd.ai", "v1alpha1", "variantautoscalings"


class ApiError(Exception):
    """An API call failed with an HTTP status (409 conflict, 404 not found, ...)."""

    def __init__(self, status: int, reason: str = "") -> None:
        super().__init__(f"HTTP {status} {reason}".strip())
        self.status = status
        self.reason = reason


class Conflict(ApiError):
    def __init__(self, reason: str = "Conflict") -> None:
        super().__init__(409, reason)


class NotFound(ApiError):
    def __init__(self, reason: str = "NotFound") -> None:
        super().__init__(404, reason)


class KubeAPI(Protocol):
    def list_variant_autoscalings(self, namespace: str) -> list[Obj]: ...
    def get_variant_autoscaling(self, namespace: str, name: str) -> Obj: ...
    def patch_variant_autoscaling_status(self, namespace: str, name: str, body: Obj) -> Obj: ...
    def get_deployment(self, namespace: str, name: str) -> Obj: ...
    def list_pods(self, namespace: str, label_selector: str) -> list[Obj]: ...
    def get_scale(self, namespace: str, name: str) -> Obj: ...
    def patch_scale(self, namespace: str, name: str, body: Obj) -> Obj: ...
    def get_config_map(self, namespace: str, name: str) -> Obj: ...
    def list_hpas(self, namespace: str) -> list[Obj]: ...


def selector_string(match_labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(match_labels.items()))


def find_kubeconfig(explicit: str | None = None) -> str | None:
    """The kubeconfig path to use, or None when running in a pod."""
    if explicit:
        if not Path(explicit).expanduser().is_file():
            raise UserError("kubeconfig not found", where=explicit, expected="a readable kubeconfig file")
        return str(Path(explicit).expanduser())
    env = os.environ.get("KUBECONFIG")
    if env:
        for part in env.split(os.pathsep):
            if part and Path(part).expanduser().is_file():
                return str(Path(part).expanduser())
        raise UserError("no file named by $KUBECONFIG exists", where=f"KUBECONFIG={env}",
                        expected="a readable kubeconfig file")
    if os.environ.get("KUBERNETES_SERVICE_HOST") and Path(
            "/var/run/secrets/kubernetes.io/serviceaccount/token").is_file():
        return None
    default = Path("~/.kube/config").expanduser()
    if default.is_file():
        return str(default)
    raise UserError(
        "no Kubernetes credentials found",
        where="kubeconfig",
        expected="--kubeconfig PATH, $KUBECONFIG, ~/.kube/config, or running in a pod with a service account",
    )


def load_api_client(kubeconfig: str | None = None, context: str | None = None) -> Any:
    """A configured ``kubernetes.client.ApiClient`` (in-cluster or from a kubeconfig)."""
    from kubernetes import client, config

    path = find_kubeconfig(kubeconfig)
    if path is None:
        config.load_incluster_config()
        return client.ApiClient()
    # Read through safe_yaml (size, alias-expansion and depth limits) rather than the client's own
    # yaml.safe_load; relative certificate paths resolve against the kubeconfig's folder, as the client does.
    from kubernetes.config.kube_config import KubeConfigLoader

    data = read_yaml(path)
    if not isinstance(data, dict):
        raise UserError("not a kubeconfig (expected a mapping with clusters, users and contexts)", where=path)
    try:
        configuration = client.Configuration()
        KubeConfigLoader(config_dict=data, active_context=context,
                         config_base_path=os.path.dirname(os.path.abspath(path))).load_and_set(configuration)
        return client.ApiClient(configuration=configuration)
    except config.ConfigException as e:
        raise UserError(f"unusable kubeconfig: {e}", where=path,
                        expected="a kubeconfig with a current context" if not context else f"context {context!r}"
                        ) from None


class ClientKubeAPI:
    """``KubeAPI`` over the official client; answers are the server's JSON."""

    def __init__(self, api_client: Any) -> None:
        from kubernetes import client

        self._apps = client.AppsV1Api(api_client)
        self._core = client.CoreV1Api(api_client)
        self._custom = client.CustomObjectsApi(api_client)
        self._autoscaling = client.AutoscalingV2Api(api_client)

    @staticmethod
    def _call(fn: Any, *args: Any, **kwargs: Any) -> Obj:
        from kubernetes.client.exceptions import ApiException

        try:
            resp = fn(*args, _preload_content=False, **kwargs)
        except ApiException as e:
            if e.status == 409:
                raise Conflict(str(e.reason)) from None
            if e.status == 404:
                raise NotFound(str(e.reason)) from None
            raise ApiError(int(e.status or 0), str(e.reason)) from None
        return json.loads(resp.data)

    def list_variant_autoscalings(self, namespace: str) -> list[Obj]:
        return self._call(self._custom.list_namespaced_custom_object, VA_GROUP, VA_VERSION, namespace,
                          VA_PLURAL)["items"]

    def get_variant_autoscaling(self, namespace: str, name: str) -> Obj:
        return self._call(self._custom.get_namespaced_custom_object, VA_GROUP, VA_VERSION, namespace, VA_PLURAL,
                          name)

    def patch_variant_autoscaling_status(self, namespace: str, name: str, body: Obj) -> Obj:
        # body carries metadata.resourceVersion: a stale version answers 409 (optimistic concurrency)
        return self._call(self._custom.patch_namespaced_custom_object_status, VA_GROUP, VA_VERSION, namespace,
                          VA_PLURAL, name, body)

    def get_deployment(self, namespace: str, name: str) -> Obj:
        return self._call(self._apps.read_namespaced_deployment, name, namespace)

    def list_pods(self, namespace: str, label_selector: str) -> list[Obj]:
        return self._call(self._core.list_namespaced_pod, namespace, label_selector=label_selector)["items"]

    def get_scale(self, namespace: str, name: str) -> Obj:
        return self._call(self._apps.read_namespaced_deployment_scale, name, namespace)

    def patch_scale(self, namespace: str, name: str, body: Obj) -> Obj:
        return self._call(self._apps.patch_namespaced_deployment_scale, name, namespace, body)

    def get_config_map(self, namespace: str, name: str) -> Obj:
        return self._call(self._core.read_namespaced_config_map, name, namespace)

    def list_hpas(self, namespace: str) -> list[Obj]:
        return self._call(self._autoscaling.list_namespaced_horizontal_pod_autoscaler, namespace)["items"]

