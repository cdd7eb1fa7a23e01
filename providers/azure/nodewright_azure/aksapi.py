"""Raw requests to the AKS resource provider (Microsoft.ContainerService) through the compute
client's ARM pipeline (its credential, retries, CA bundle and transport, the offline one
included): node image versions (``use-sig``), AKS machines and their agent pool's
``deleteMachines``. The azure-mgmt-containerservice package is not needed for these few calls.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from azure.core.exceptions import HttpResponseError, ResourceNotFoundError
from azure.core.rest import HttpRequest

#: The AKS API version of node image versions and AKS machines (the machine API is preview).
AKS_API_VERSION = "2025-10-02-preview"


def request(
    client: Any,
    method: str,
    path: str,
    *,
    body: Mapping[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
    url: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> tuple[int, dict[str, Any], Mapping[str, str]]:
    """Send one request (``path`` under the ARM endpoint, or a full ``url`` such as a
    ``nextLink``, with the pipeline's per-request ``options``); ARM's error as
    ``HttpResponseError`` (``ResourceNotFoundError`` on 404), else the status, the JSON answer
    ({} when empty) and the headers."""
    params = None if url else {"api-version": AKS_API_VERSION}
    sent = HttpRequest(
        method,
        url or path,
        params=params,
        json=dict(body) if body is not None else None,
        headers=dict(headers or {}),
    )
    response = client.send_request(sent, **dict(options or {}))
    if response.status_code >= 400:
        # azure-mgmt-core comes with the ARM client that sent the request, not with the plugin.
        from azure.mgmt.core.exceptions import ARMErrorFormat  # noqa: PLC0415

        if response.status_code == 404:
            raise ResourceNotFoundError(response=response, error_format=ARMErrorFormat)
        raise HttpResponseError(response=response, error_format=ARMErrorFormat)
    text = response.text()
    return response.status_code, (response.json() if text else {}), response.headers


def pages(client: Any, path: str) -> Iterator[dict[str, Any]]:
    """Every item of a paged list (``value`` and ``nextLink``)."""
    _, answer, _ = request(client, "GET", path)
    while True:
        yield from answer.get("value", [])
        link = answer.get("nextLink")
        if not link:
            return
        _, answer, _ = request(client, "GET", "", url=link)
