"""ARM's wire conventions in the fake: error bodies, ``nextLink`` paging and long-running
operations (``Azure-AsyncOperation`` and ``Location`` status URLs that answer ``InProgress``
for a number of polls, then finish the operation)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

if TYPE_CHECKING:
    from providers.azure.tests.fake_azure import FakeAzure

JSON = dict[str, Any]


@dataclass
class Operation:
    """A long-running operation: ``InProgress`` for ``polls`` status reads, then done."""

    id: str
    polls: int
    on_done: Callable[[], None]
    error: tuple[str, str] | None = None
    done: bool = False

    def poll(self) -> str:
        if not self.done:
            if self.polls > 0:
                self.polls -= 1
                return "InProgress"
            self.done = True
            self.on_done()
        return "Failed" if self.error else "Succeeded"


def error(status: int, code: str, message: str) -> tuple[int, dict[str, str], JSON]:
    """An ARM error answer: ``{"error": {"code", "message"}}``."""
    return status, {"x-ms-failure-cause": "gateway"}, {"error": {"code": code, "message": message}}


def page(
    fake: FakeAzure, path: str, query: dict[str, list[str]], items: list[JSON], size: int
) -> tuple[int, dict[str, str], JSON]:
    """One page of ``items`` from ``$skiptoken``, with the ``nextLink`` of the next one."""
    skip = int(query.get("$skiptoken", ["0"])[0])
    answer: JSON = {"value": items[skip : skip + size]}
    if skip + size < len(items):
        params = {k: v[0] for k, v in query.items()}
        params["$skiptoken"] = str(skip + size)
        answer["nextLink"] = f"{fake.url}{path}?{urlencode(params)}"
    return 200, {}, answer


def new_operation(
    fake: FakeAzure, on_done: Callable[[], None], failure: tuple[str, str] | None = None
) -> Operation:
    """A long-running operation that runs ``on_done`` when it finishes (failing with
    ``failure``, a code and a message, if given)."""
    op = Operation(str(uuid.uuid4()), fake.lro_polls, on_done, failure)
    fake.operations[op.id] = op
    return op


def operation_url(fake: FakeAzure, provider: str, op: Operation, kind: str) -> str:
    """Where the client polls ``op``: ``kind`` is ``operations`` (Azure-AsyncOperation) or
    ``operationResults`` (Location)."""
    return (
        f"{fake.url}/subscriptions/{fake.subscription}/providers/Microsoft.{provider}/"
        f"locations/{fake.region}/{kind}/{op.id}?api-version=2024-07-01"
    )


def operation_status(
    fake: FakeAzure, kind: str, op_id: str
) -> tuple[int, dict[str, str], JSON | None]:
    """A status read of an operation, as its ``operations`` or ``operationResults`` URL."""
    op = fake.operations.get(op_id)
    if op is None:
        return error(404, "NotFound", f"operation {op_id} not found")
    status = op.poll()
    if kind.lower() == "operationresults":
        if status == "InProgress":
            return 202, {"Retry-After": "0"}, None
        return 200, {}, None
    payload: JSON = {"name": op.id, "status": status, "startTime": fake.now().isoformat()}
    if status == "InProgress":
        return 200, {"Retry-After": "0"}, payload
    payload["endTime"] = fake.now().isoformat()
    if op.error:
        payload["error"] = {"code": op.error[0], "message": op.error[1]}
    return 200, {}, payload
