"""Every workload scalearena applies runs locked down, and the gateway's admin API needs a per-run token.

Issue 17 item 12: engine Deployments had no securityContext and nothing set a
seccomp profile. Rather than repeat the same twenty lines in every manifest
and in every object rendered from a scenario (and miss the next one added),
``harden`` applies one policy to every pod template at plan time — the single
path to the cluster for runs, ``scalearena render`` and the offline tests:

* pod: ``runAsNonRoot: true`` (``runAsUser: 65532`` when the manifest names no
  user: llm-d-inference-sim's and vLLM's images declare root),
  ``seccompProfile: RuntimeDefault``;
* container: ``allowPrivilegeEscalation: false``, ``readOnlyRootFilesystem: true``,
  ``capabilities.drop: [ALL]``; a writable ``/tmp`` (emptyDir) when the
  container mounts none, and for vLLM ``HOME``/``HF_HOME`` under it (its caches) and
  a memory-backed ``/dev/shm`` (NCCL with tensor parallelism).

Settings a manifest already makes are kept (Prometheus' ``runAsUser: 65534``).
Issue 31: the manifests now state the same policy themselves (and
``automountServiceAccountToken``), so a plain ``kubectl apply -k`` gets it too;
``harden`` stays the guarantee for whatever a run applies, a user's
``kind: kubernetes`` objects included.

``admin_token`` creates the ``gateway-admin`` Secret with a fresh random token
per run (``secrets.token_urlsafe``) when a pod mounts it; no manifest holds a
value. serve-router reads it from ``--admin-token-file`` and the endpoint-sync
sidecar sends it as a Bearer token.
"""
from __future__ import annotations

import secrets
from typing import Any

Obj = dict[str, Any]
POD_KINDS = ("Deployment", "Job", "StatefulSet", "DaemonSet", "ReplicaSet")
NON_ROOT_UID = 65532
ADMIN_SECRET = "gateway-admin"


def _container(c: Obj, pod: Obj) -> None:
    sc = c.setdefault("securityContext", {})
    sc.setdefault("allowPrivilegeEscalation", False)
    sc.setdefault("readOnlyRootFilesystem", True)
    drop = sc.setdefault("capabilities", {}).setdefault("drop", [])
    if "ALL" not in drop:
        drop.append("ALL")
    mounts = c.setdefault("volumeMounts", [])
    if not any(m.get("mountPath") == "/tmp" for m in mounts):
        volumes = pod.setdefault("volumes", [])
        if not any(v.get("name") == "tmp" for v in volumes):
            volumes.append({"name": "tmp", "emptyDir": {}})
        mounts.append({"name": "tmp", "mountPath": "/tmp"})
    if "vllm" in c.get("image", ""):
        env = c.setdefault("env", [])
        have = {e["name"] for e in env}
        env += [{"name": k, "value": v} for k, v in (("HOME", "/tmp"), ("HF_HOME", "/tmp/hf"))
                if k not in have]
        if not any(m.get("mountPath") == "/dev/shm" for m in mounts):  # NCCL / tensor parallel shared memory
            pod.setdefault("volumes", []).append({"name": "dshm", "emptyDir": {"medium": "Memory"}})
            mounts.append({"name": "dshm", "mountPath": "/dev/shm"})


def harden(objs: list[Obj]) -> list[Obj]:
    """Apply the pod and container security policy to every workload in ``objs`` (in place)."""
    for o in objs:
        if o.get("kind") not in POD_KINDS:
            continue
        pod = o.setdefault("spec", {}).setdefault("template", {}).setdefault("spec", {})
        psc = pod.setdefault("securityContext", {})
        psc["runAsNonRoot"] = True
        psc.setdefault("runAsUser", NON_ROOT_UID)
        psc.setdefault("seccompProfile", {"type": "RuntimeDefault"})
        for c in pod.get("initContainers", []) + pod.get("containers", []):
            _container(c, pod)
    return objs


def _mounts_secret(o: Obj, name: str) -> bool:
    if o.get("kind") not in POD_KINDS:
        return False
    volumes = o.get("spec", {}).get("template", {}).get("spec", {}).get("volumes", [])
    return any(v.get("secret", {}).get("secretName") == name for v in volumes)


def admin_token(objs: list[Obj], token: str | None = None) -> str | None:
    """Create Secret gateway-admin holding a fresh token, just before the first workload that mounts it (replacing
    any gateway-admin Secret in ``objs``, in place); returns the token (None when no workload mounts it)."""
    user = next((o for o in objs if _mounts_secret(o, ADMIN_SECRET)), None)
    if user is None:
        return None
    objs[:] = [o for o in objs if not (o.get("kind") == "Secret" and o["metadata"]["name"] == ADMIN_SECRET)]
    token = token or secrets.token_urlsafe(32)
    md: Obj = {"name": ADMIN_SECRET}
    if "namespace" in user.get("metadata", {}):
        md["namespace"] = user["metadata"]["namespace"]
    if user.get("metadata", {}).get("labels", {}).get("app.kubernetes.io/part-of"):
        md["labels"] = {"app.kubernetes.io/part-of": user["metadata"]["labels"]["app.kubernetes.io/part-of"]}
    objs.insert(objs.index(user), {"apiVersion": "v1", "kind": "Secret", "metadata": md, "type": "Opaque",
                                   "stringData": {"token": token}})
    return token
