"""P/D hand-offs a stranger cannot steer: the gateway vouches for the address, the KV is read with a secret.

vLLM's ``kv_transfer_params`` name where a decode engine reads its KV (``remote_host``,
``remote_port``). Taken from a client's body, that is a request forgery: any caller could make a
decode engine POST to an address of its choosing, or read and release another request's KV on a
prefill engine. Three rules close it:

* serve-router strips ``kv_transfer_params`` from every client body (router_pd.py); the only ones a
  decode engine sees come from the prefill engine the router chose;
* the router writes that engine's address itself (from its endpoint table, not the prefill's answer)
  and signs the hand-off with HMAC-SHA256 under a key shared by the router and the engines
  (``--handoff-key-file``); a decode engine refuses a hand-off whose signature does not match (403),
  so it never connects to an address the gateway did not choose;
* a prefill engine keeps a random secret per kept KV (``remote_secret``, in its answer) and answers
  ``/kv/read`` only with it (403 otherwise): reading or releasing a KV needs the hand-off itself.

Hand-written on the standard library (hmac, secrets): the scheme is one MAC over five fields.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from typing import Any

from scalearena.contracts.errors import UserError
from scalearena.contracts.files import read_regular

SIGNED = ("remote_host", "remote_port", "remote_request_id", "remote_engine_id", "remote_secret")
SIGNATURE = "handoff_signature"
MIN_KEY_CHARS = 16


def read_key(path: str) -> bytes:
    """The hand-off key of a file (at least 16 characters; surrounding whitespace dropped)."""
    raw = read_regular(path, 4096, "a file holding the P/D hand-off key").decode("utf-8", "replace").strip()
    if len(raw) < MIN_KEY_CHARS:
        raise UserError(f"the key must be at least {MIN_KEY_CHARS} characters", where="--handoff-key-file")
    return raw.encode()


def new_key() -> str:
    return secrets.token_urlsafe(32)


def new_secret() -> str:
    return secrets.token_urlsafe(16)


def _mac(key: bytes, params: dict[str, Any]) -> str:
    fields = json.dumps([str(params.get(k)) for k in SIGNED]).encode()
    return hmac.new(key, fields, hashlib.sha256).hexdigest()


def vouch(key: bytes, params: dict[str, Any], host: str, port: int) -> dict[str, Any]:
    """The prefill's answer as the router hands it on: the address it chose, signed."""
    out = {k: v for k, v in params.items() if k != SIGNATURE}
    out["remote_host"], out["remote_port"] = host, port
    out[SIGNATURE] = _mac(key, out)
    return out


def vouched(key: bytes | None, params: dict[str, Any]) -> bool:
    """Whether ``params`` carry the router's signature under ``key`` (never without a key)."""
    given = params.get(SIGNATURE)
    return key is not None and isinstance(given, str) and hmac.compare_digest(_mac(key, params), given)


def secret_matches(kept: str | None, given: Any) -> bool:
    return kept is not None and isinstance(given, str) and hmac.compare_digest(kept, given)
