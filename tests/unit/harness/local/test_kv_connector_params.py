"""A decode engine's kv_transfer_params are checked at admission (harness/local/kv_connector.py).

Before, a remote_port of "abc" or 1e400 was admitted and failed only when the KV read started:
int("abc") ended the request as a 503 "pod terminated", int(1e400) dropped the connection with a
traceback in the engine log.
"""
from __future__ import annotations

import pytest

from scalearena.harness.local.kv_connector import KVConnector
from scalearena.harness.local.openai_api import ApiError

GOOD = {"do_remote_prefill": True, "remote_host": "127.0.0.1", "remote_port": 8001, "remote_request_id": "7"}


def test_valid_parameters_and_roles() -> None:
    assert KVConnector.flags("decode", GOOD) == (False, True)
    assert KVConnector.flags("both", {**GOOD, "remote_port": "abc"}) == (False, False)  # no connector: ignored
    assert KVConnector.flags("prefill", {"do_remote_decode": True}) == (True, False)
    assert KVConnector.flags("decode", {**GOOD, "remote_port": 65535}) == (False, True)  # the highest port


@pytest.mark.parametrize("bad", [{"remote_port": "abc"}, {"remote_port": float("inf")}, {"remote_port": 8001.5},
                                 {"remote_port": 0}, {"remote_port": 65536}, {"remote_port": True},
                                 {"remote_host": ["127.0.0.1"]}])
def test_a_remote_address_that_cannot_be_read_is_400(bad: dict) -> None:
    with pytest.raises(ApiError) as e:
        KVConnector.flags("decode", {**GOOD, **bad})
    assert (e.value.status, e.value.param) == (400, "kv_transfer_params.remote_port")
