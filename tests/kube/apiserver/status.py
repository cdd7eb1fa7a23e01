"""The ``Status`` bodies the fake API server answers failures with, and the exception its
handlers raise to answer one."""

from __future__ import annotations

from typing import Any

from tests.kube.apiserver.routing import Resource


def failure(code: int, reason: str, message: str, **details: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return body


def not_found(r: Resource) -> dict[str, Any]:
    return failure(404, "NotFound", f'{r.plural} "{r.name}" not found', name=r.name, kind=r.plural)


class Reply(Exception):
    def __init__(self, code: int, body: dict[str, Any]) -> None:
        super().__init__(code)
        self.code = code
        self.body = body
