"""A small kustomize, for the subset manifests/ uses, in pure Python.

Why not shell out always: tests and `scalearena validate` must render every
kustomization on machines without kubectl or kustomize (CI runners, laptops
without a cluster), and the kube backend wants the objects as Python dicts to
swap in the scenario's variants before applying. When ``kubectl`` is on PATH
the unit tests render each kustomization both ways and require the same
objects, so this subset cannot silently drift from the real tool.

Supported: ``resources`` (files and directories), ``namespace``,
``namePrefix``, ``labels`` (pairs; includeSelectors), ``commonLabels``,
``images``, ``patches`` (strategic merge from a file or inline, JSON 6902
inline with a ``target``; targets select by group/version/kind/name/namespace
and equality ``labelSelector``). Not supported (refused with a UserError):
generators, components, replacements, vars, helmCharts.
"""
from __future__ import annotations

import copy
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from scalearena.contracts.errors import UserError
from scalearena.harness.kube.patch import apply_json6902, strategic_merge

Obj = dict[str, Any]

SUPPORTED = {"apiVersion", "kind", "resources", "namespace", "namePrefix", "labels", "commonLabels", "images",
             "patches"}
CLUSTER_SCOPED = {"Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "APIService",
                  "PriorityClass", "StorageClass", "PersistentVolume", "Node", "MutatingWebhookConfiguration",
                  "ValidatingWebhookConfiguration"}
# kustomize's legacy apply order: what must exist before what refers to it
ORDER = ["Namespace", "ResourceQuota", "StorageClass", "CustomResourceDefinition", "ServiceAccount",
         "PodSecurityPolicy", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding", "ConfigMap", "Secret",
         "Endpoints", "Service", "LimitRange", "PriorityClass", "PersistentVolume", "PersistentVolumeClaim",
         "Deployment", "StatefulSet", "CronJob", "PodDisruptionBudget", "MutatingWebhookConfiguration",
         "ValidatingWebhookConfiguration"]
KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")


def load_yaml_docs(path: Path) -> list[Obj]:
    try:
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    except yaml.YAMLError as e:
        raise UserError(f"not valid YAML: {e}", where=str(path)) from None
    for d in docs:
        if not isinstance(d, dict) or "kind" not in d:
            raise UserError("every document must be a Kubernetes object with a kind", where=str(path))
    return docs


def kustomization_file(directory: Path) -> Path:
    for name in KUSTOMIZATION_FILES:
        if (directory / name).is_file():
            return directory / name
    raise UserError("no kustomization.yaml here", where=str(directory), expected="a kustomize directory")


def render(directory: str | Path) -> list[Obj]:
    """Render one kustomization directory to a list of objects in apply order."""
    return sort_for_apply(_render(Path(directory).resolve(), seen=()))


def _render(directory: Path, seen: tuple[Path, ...]) -> list[Obj]:
    if directory in seen:
        raise UserError("kustomization includes itself", where=str(directory))
    kfile = kustomization_file(directory)
    k = yaml.safe_load(kfile.read_text()) or {}
    unknown = set(k) - SUPPORTED
    if unknown:
        raise UserError(f"kustomize fields not supported by the built-in renderer: {sorted(unknown)}",
                        where=str(kfile), expected="install kubectl (>= 1.27) to render these")
    objs: list[Obj] = []
    for res in k.get("resources", []):
        p = (directory / res).resolve()
        if p.is_dir():
            objs.extend(_render(p, seen + (directory,)))
        elif p.is_file():
            objs.extend(load_yaml_docs(p))
        else:
            raise UserError(f"resource {res!r} not found", where=str(kfile))
    objs = [copy.deepcopy(o) for o in objs]
    for patch in k.get("patches", []):
        objs = _apply_patch(objs, patch, directory, kfile)
    if "namespace" in k:
        for o in objs:
            if o["kind"] not in CLUSTER_SCOPED:
                o.setdefault("metadata", {})["namespace"] = k["namespace"]
    if "namePrefix" in k:
        for o in objs:
            if o["kind"] not in ("Namespace", "CustomResourceDefinition"):
                o["metadata"]["name"] = k["namePrefix"] + o["metadata"]["name"]
    for entry in k.get("labels", []):
        _add_labels(objs, entry.get("pairs", {}), selectors=bool(entry.get("includeSelectors", False)))
    if k.get("commonLabels"):
        _add_labels(objs, k["commonLabels"], selectors=True)
    for image in k.get("images", []):
        _set_image(objs, image)
    return objs


def sort_for_apply(objs: Iterable[Obj]) -> list[Obj]:
    rank = {kind: i for i, kind in enumerate(ORDER)}
    return sorted(objs, key=lambda o: rank.get(o["kind"], len(ORDER)))


def object_key(o: Obj) -> tuple[str, str, str, str]:
    md = o.get("metadata", {})
    return (o.get("apiVersion", ""), o["kind"], md.get("namespace", ""), md["name"])


def _group_version(api_version: str) -> tuple[str, str]:
    return tuple(api_version.split("/", 1)) if "/" in api_version else ("", api_version)  # type: ignore[return-value]


def matches_target(o: Obj, target: dict[str, Any]) -> bool:
    group, version = _group_version(o.get("apiVersion", ""))
    md = o.get("metadata", {})
    checks = {"group": group, "version": version, "kind": o["kind"], "name": md.get("name"),
              "namespace": md.get("namespace")}
    for field, have in checks.items():
        if field in target and target[field] != have:
            return False
    selector = target.get("labelSelector")
    if selector:
        labels = md.get("labels", {}) or {}
        for term in str(selector).split(","):
            key, _, value = term.strip().partition("=")
            if labels.get(key) != value:
                return False
    return True


def _apply_patch(objs: list[Obj], patch: dict[str, Any], directory: Path, kfile: Path) -> list[Obj]:
    if "path" in patch:
        docs = list(yaml.safe_load_all((directory / patch["path"]).read_text()))
    elif "patch" in patch:
        docs = list(yaml.safe_load_all(patch["patch"]))
    else:
        raise UserError("a patch needs `path` or `patch`", where=str(kfile))
    target = patch.get("target")
    if len(docs) == 1 and isinstance(docs[0], list):  # JSON 6902
        if not target:
            raise UserError("a JSON 6902 patch needs a target", where=str(kfile))
        hit = False
        for i, o in enumerate(objs):
            if matches_target(o, target):
                objs[i] = apply_json6902(o, docs[0])
                hit = True
        if not hit:
            raise UserError(f"patch target {target} matches no resource", where=str(kfile))
        return objs
    for doc in docs:
        if not doc:
            continue
        sel = dict(target) if target else {"kind": doc["kind"], "name": doc["metadata"]["name"]}
        hit = False
        for i, o in enumerate(objs):
            if matches_target(o, sel):
                objs[i] = strategic_merge(o, {k: v for k, v in doc.items() if k not in ("apiVersion", "kind")})
                hit = True
        if not hit:
            raise UserError(f"patch for {sel} matches no resource", where=str(kfile))
    return objs


def _add_labels(objs: list[Obj], pairs: dict[str, str], selectors: bool) -> None:
    for o in objs:
        o.setdefault("metadata", {}).setdefault("labels", {}).update(pairs)
        if not selectors:
            continue
        spec = o.get("spec", {})
        if o["kind"] in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"):
            spec.setdefault("selector", {}).setdefault("matchLabels", {}).update(pairs)
            spec.setdefault("template", {}).setdefault("metadata", {}).setdefault("labels", {}).update(pairs)
        elif o["kind"] == "Service":
            spec.setdefault("selector", {}).update(pairs)


def _pod_spec(o: Obj) -> dict[str, Any] | None:
    spec = o.get("spec", {})
    if o["kind"] == "Pod":
        return spec
    if o["kind"] == "CronJob":
        return spec.get("jobTemplate", {}).get("spec", {}).get("template", {}).get("spec")
    return spec.get("template", {}).get("spec")


def _set_image(objs: list[Obj], image: dict[str, str]) -> None:
    for o in objs:
        pod = _pod_spec(o)
        if not pod:
            continue
        for c in pod.get("containers", []) + pod.get("initContainers", []):
            name, tag, digest = _split_image(c.get("image", ""))
            if name != image["name"]:
                continue
            name = image.get("newName", name)
            # kustomize's imagetag updater: a new tag or digest replaces both the old tag and digest
            if "newTag" in image or "digest" in image:
                tag, digest = image.get("newTag"), image.get("digest")
            c["image"] = name + (f":{tag}" if tag else "") + (f"@{digest}" if digest else "")


def _split_image(ref: str) -> tuple[str, str | None, str | None]:
    """``REPO[:TAG][@DIGEST]`` -> (repo, tag, digest), as kustomize's image.Split (a registry port is no tag)."""
    ref, _, digest = ref.partition("@")
    last = ref.rsplit("/", 1)[-1]
    if ":" in last:
        name, tag = ref.rsplit(":", 1)
        return name, tag, digest or None
    return ref, None, digest or None


def dump_yaml(objs: Iterable[Obj]) -> str:
    return yaml.safe_dump_all(list(objs), sort_keys=False)
