"""An in-memory ``KubeAPI``, seeded from API-server JSON, for tests and dry runs.

It keeps what matters to the controller and the backend of a real API
server: resourceVersions that move on every write, optimistic concurrency (a
patch carrying a stale ``metadata.resourceVersion`` answers 409), 404 for a
missing object, the scale subresource as a view of ``spec.replicas``. Tests
can also queue failures (``fail_next``) to replay a conflict the server sent.
"""
from __future__ import annotations

import copy
import json
from collections import defaultdict, deque
from pathlib import Path

from scalearena.harness.kube.wva.kubeapi import ApiError, Conflict, NotFound, Obj

Key = tuple[str, str, str]  # kind, namespace, name


class FakeKubeAPI:
    def __init__(self, objects: list[Obj] | None = None) -> None:
        self.store: dict[Key, Obj] = {}
        self._rv = 1000
        self.calls: list[tuple[str, str]] = []
        self._failures: dict[tuple[str, str], deque[ApiError]] = defaultdict(deque)
        for o in objects or []:
            self.put(o)

    # ---- seeding -------------------------------------------------------------------------------
    @classmethod
    def from_fixtures(cls, directory: str | Path, *names: str) -> FakeKubeAPI:
        """Objects from recorded responses: a file holds one object or a List (``items``)."""
        objs: list[Obj] = []
        for n in names:
            doc = json.loads((Path(directory) / n).read_text())
            if doc.get("kind", "").endswith("List"):
                item_kind = doc["kind"][: -len("List")]
                for item in doc["items"]:
                    item.setdefault("kind", item_kind)
                    item.setdefault("apiVersion", doc.get("apiVersion"))
                    objs.append(item)
            else:
                objs.append(doc)
        return cls(objs)

    def _next_rv(self) -> str:
        self._rv += 1
        return str(self._rv)

    def put(self, obj: Obj) -> Obj:
        o = copy.deepcopy(obj)
        md = o.setdefault("metadata", {})
        md["resourceVersion"] = self._next_rv()
        self.store[(o["kind"], md.get("namespace", ""), md["name"])] = o
        return copy.deepcopy(o)

    def delete(self, kind: str, namespace: str, name: str) -> None:
        self.store.pop((kind, namespace, name), None)

    def fail_next(self, op: str, name: str, error: ApiError, times: int = 1) -> None:
        for _ in range(times):
            self._failures[(op, name)].append(error)

    def _call(self, op: str, name: str) -> None:
        self.calls.append((op, name))
        queue = self._failures.get((op, name))
        if queue:
            raise queue.popleft()

    def _get(self, kind: str, namespace: str, name: str) -> Obj:
        try:
            return self.store[(kind, namespace, name)]
        except KeyError:
            raise NotFound(f"{kind} {namespace}/{name} not found") from None

    @staticmethod
    def _check_rv(current: Obj, body: Obj) -> None:
        want = body.get("metadata", {}).get("resourceVersion")
        if want is not None and want != current["metadata"]["resourceVersion"]:
            raise Conflict("the object has been modified; please apply your changes to the latest version")

    # ---- KubeAPI -------------------------------------------------------------------------------
    def list_variant_autoscalings(self, namespace: str) -> list[Obj]:
        self._call("list_variant_autoscalings", namespace)
        return [copy.deepcopy(o) for (k, ns, _), o in sorted(self.store.items())
                if k == "VariantAutoscaling" and ns == namespace]

    def get_variant_autoscaling(self, namespace: str, name: str) -> Obj:
        self._call("get_variant_autoscaling", name)
        return copy.deepcopy(self._get("VariantAutoscaling", namespace, name))

    def patch_variant_autoscaling_status(self, namespace: str, name: str, body: Obj) -> Obj:
        self._call("patch_variant_autoscaling_status", name)
        cur = self._get("VariantAutoscaling", namespace, name)
        self._check_rv(cur, body)
        cur["status"] = copy.deepcopy(body["status"])
        cur["metadata"]["resourceVersion"] = self._next_rv()
        return copy.deepcopy(cur)

    def get_deployment(self, namespace: str, name: str) -> Obj:
        self._call("get_deployment", name)
        return copy.deepcopy(self._get("Deployment", namespace, name))

    def list_hpas(self, namespace: str) -> list[Obj]:
        self._call("list_hpas", namespace)
        return [copy.deepcopy(o) for (k, ns, _), o in sorted(self.store.items())
                if k == "HorizontalPodAutoscaler" and ns == namespace]

    def list_pods(self, namespace: str, label_selector: str) -> list[Obj]:
        self._call("list_pods", label_selector)
        want = dict(t.split("=", 1) for t in label_selector.split(",") if t)
        out = []
        for (k, ns, _), o in sorted(self.store.items()):
            labels = o.get("metadata", {}).get("labels", {}) or {}
            if k == "Pod" and ns == namespace and all(labels.get(a) == b for a, b in want.items()):
                out.append(copy.deepcopy(o))
        return out

    def get_scale(self, namespace: str, name: str) -> Obj:
        self._call("get_scale", name)
        return self._scale_of(self._get("Deployment", namespace, name))

    @staticmethod
    def _scale_of(d: Obj) -> Obj:
        name, namespace = d["metadata"]["name"], d["metadata"].get("namespace", "")
        return {"apiVersion": "autoscaling/v1", "kind": "Scale",
                "metadata": {"name": name, "namespace": namespace,
                             "resourceVersion": d["metadata"]["resourceVersion"]},
                "spec": {"replicas": d.get("spec", {}).get("replicas", 1)},
                "status": {"replicas": d.get("status", {}).get("replicas", 0)}}

    def patch_scale(self, namespace: str, name: str, body: Obj) -> Obj:
        self._call("patch_scale", name)
        d = self._get("Deployment", namespace, name)
        self._check_rv(d, body)
        d.setdefault("spec", {})["replicas"] = int(body["spec"]["replicas"])
        d["metadata"]["resourceVersion"] = self._next_rv()
        return self._scale_of(d)

    def get_config_map(self, namespace: str, name: str) -> Obj:
        self._call("get_config_map", name)
        return copy.deepcopy(self._get("ConfigMap", namespace, name))

