"""The Azure SDK side of ``azure.offline``: an HTTP transport that hands each request to the
in-process :class:`~nodewright_azure.offline.cloud.OfflineAzure` instead of the network,
and a credential that needs no identity."""

from __future__ import annotations

import json
import time
from typing import Any

from azure.core.credentials import AccessToken, AccessTokenInfo
from azure.core.pipeline.transport import HttpTransport
from azure.core.rest import HttpRequest
from azure.core.rest._http_response_impl import HttpResponseImpl

from nodewright_azure.offline.cloud import OfflineAzure

#: Offline tokens never expire within a run (the SDK refreshes them a few minutes early).
TOKEN_LIFETIME = 10 * 365 * 24 * 3600


class OfflineResponse(HttpResponseImpl):
    """A complete, already read response."""

    def __init__(
        self, request: HttpRequest, status: int, headers: dict[str, str], body: bytes
    ) -> None:
        super().__init__(
            request=request,
            internal_response=None,
            status_code=status,
            headers={"Content-Type": "application/json", **headers},
            reason="OK" if status < 400 else "Error",
            content_type="application/json",
            stream_download_generator=None,
        )
        self._content = body
        self._is_closed = True
        self._is_stream_consumed = True


class OfflineTransport(HttpTransport[HttpRequest, OfflineResponse]):
    """Answers every request from the offline cloud; nothing leaves the process."""

    def __init__(self, cloud: OfflineAzure) -> None:
        self.cloud = cloud

    def __enter__(self) -> OfflineTransport:
        return self

    def __exit__(self, *args: Any) -> None:
        self.close()

    def open(self) -> None:
        """Nothing to open."""

    def close(self) -> None:
        """Nothing to close."""

    def send(self, request: HttpRequest, **kwargs: Any) -> OfflineResponse:
        body = request.content if isinstance(request.content, bytes) else b""
        if isinstance(request.content, str):
            body = request.content.encode()
        status, headers, payload = self.cloud.handle(request.method, request.url, body)
        content = json.dumps(payload).encode() if payload is not None else b""
        return OfflineResponse(request, status, headers, content)


class OfflineCredential:
    """A token credential for the offline cloud, which checks none."""

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        return AccessToken("offline", int(time.time()) + TOKEN_LIFETIME)

    def get_token_info(self, *scopes: str, options: Any = None) -> AccessTokenInfo:
        return AccessTokenInfo("offline", int(time.time()) + TOKEN_LIFETIME)
