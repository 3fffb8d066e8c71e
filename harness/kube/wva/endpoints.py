"""Endpoint sync: tells the gateway which variant pods exist, from the API server.

On CLUSTER=local the harness registers engines with the router itself; in a
cluster the pods come and go under an HPA, KEDA or WVA, so a sidecar in the
gateway pod lists the variant pods (label ``scalearena.io/component=variant``)
every ``--interval`` (0.2 s) and PUTs the full list to the router's ``/admin/endpoints`` on
localhost when it changed. llm-d's EPP follows pods with an informer, whose delivery takes
milliseconds; a list once a second held a new pod out of the pool, and a deleted one in it, for up
to a second (two scenario seconds at kwok's time scale 2: a sim-vs-real run pushed its second pod
1.8 s after its start-up ended, docs/fidelity.md). A ready pod is ``ready``; a pod being deleted
is ``draining`` (the router stops sending to it and reports its broken streams as ``killed``);
a pod not ready yet is left out. With ``--admin-token-file`` (the file the
router reads its admin token from) each PUT carries ``Authorization: Bearer``;
the router's admin API is off without a token.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import time
import urllib.request
from typing import Any

from scalearena.contracts.errors import UserError
from scalearena.harness.kube.wva.kubeapi import KubeAPI, Obj

VARIANT_SELECTOR = "scalearena.io/component=variant"
log = logging.getLogger("scalearena.endpoints")


def endpoint_entries(pods: list[Obj], port: int = 8000) -> list[dict[str, Any]]:
    out = []
    for p in sorted(pods, key=lambda p: p["metadata"]["name"]):
        md, status = p["metadata"], p.get("status", {})
        labels = md.get("labels", {}) or {}
        ip = status.get("podIP")
        if not ip or "scalearena.io/variant" not in labels:
            continue
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions", []) or [])
        if md.get("deletionTimestamp"):
            state = "draining"
        elif ready:
            state = "ready"
        else:
            continue
        out.append({"pod": md["name"], "variant": labels["scalearena.io/variant"],
                    "model": labels.get("scalearena.io/model", labels["scalearena.io/variant"]),
                    "url": f"http://{ip}:{port}", "state": state})
    return out


def push(router: str, entries: list[dict[str, Any]], timeout_s: float = 2.0, token: str | None = None) -> None:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(router.rstrip("/") + "/admin/endpoints", method="PUT",
                                 data=json.dumps({"endpoints": entries}).encode(), headers=headers)
    with urllib.request.urlopen(req, timeout=timeout_s) as resp:  # noqa: S310 - localhost router URL from args
        resp.read()


INTERVAL_S = 0.2  # wall seconds between lists: a namespace's pods on a local API server list in milliseconds


def sync_forever(api: KubeAPI, namespace: str, router: str, interval_s: float = INTERVAL_S,
                 token: str | None = None) -> None:
    last: list[dict[str, Any]] | None = None
    while True:
        try:
            entries = endpoint_entries(api.list_pods(namespace, VARIANT_SELECTOR))
            if entries != last:
                push(router, entries, token=token)
                log.info("endpoints: %d (%d ready)", len(entries), sum(e["state"] == "ready" for e in entries))
                last = entries
        except Exception as e:  # noqa: BLE001 - the router may not be up yet; try again next round
            log.warning("endpoint sync: %s: %s", type(e).__name__, e)
            last = None
        time.sleep(interval_s)


def main(argv: list[str] | None = None) -> int:
    from scalearena.harness.kube.wva.kubeapi import ClientKubeAPI, load_api_client

    p = argparse.ArgumentParser(prog="python -m scalearena.harness.kube.wva.endpoints")
    p.add_argument("--namespace", default="scalearena")
    p.add_argument("--router", default="http://127.0.0.1:8080")
    p.add_argument("--kubeconfig", default=None)
    p.add_argument("--interval", type=float, default=INTERVAL_S)
    p.add_argument("--admin-token-file", default=None, help="The router's admin token (same file as the router's).")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        api = ClientKubeAPI(load_api_client(args.kubeconfig))
    except UserError as e:
        print(f"error: {e.render()}", file=sys.stderr)
        return 2
    token = None
    if args.admin_token_file:
        try:
            with open(args.admin_token_file, encoding="utf-8") as f:
                token = f.read().strip()
        except OSError as e:
            print(f"error: --admin-token-file {args.admin_token_file}: {e.strerror}", file=sys.stderr)
            return 2
    sync_forever(api, args.namespace, args.router, args.interval, token)
    return 0


if __name__ == "__main__":
    sys.exit(main())
