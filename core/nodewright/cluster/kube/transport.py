"""Talking to the API server: the HTTP exchange, client-side rate limit, timeouts, retries,
and the mapping of HTTP answers to :mod:`nodewright.cluster` errors.

Credentials live in the client's configuration and are never logged.
"""

from __future__ import annotations

import builtins
import json
import math
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlencode

import urllib3
from pydantic import ValidationError

from nodewright.api.meta import KubeObject
from nodewright.cluster import (
    AlreadyExistsError,
    ClusterError,
    ConflictError,
    InvalidError,
    NotFoundError,
)
from nodewright.cluster.fence import Fence
from nodewright.cluster.memory import DEFAULT_NAMESPACE

T = TypeVar("T", bound=KubeObject)


class ServerUnavailableError(ClusterError):
    """The API server did not answer in time or kept failing after retries."""


class TooManyRequestsError(ServerUnavailableError):
    """The API server kept answering 429 after every retry."""


@dataclass(frozen=True)
class ClientSettings:
    """How the adapter talks to the server (Karpenter's KUBE_CLIENT_QPS/BURST defaults)."""

    qps: float = 200.0
    burst: int = 300
    #: Seconds to connect and to wait for each answer.
    connect_timeout: float = 5.0
    request_timeout: float = 30.0
    #: Attempts for one call before giving up (429, 5xx on reads, broken connections).
    max_attempts: int = 6
    backoff_base: float = 0.2
    backoff_max: float = 10.0
    #: A watch asks the server to end it after this long; it is then resumed.
    watch_timeout: float = 300.0
    #: Every cache lists again this often, whatever its watch says.
    resync_period: float = 3600.0
    #: How long the first read of a kind waits for its cache to fill.
    sync_timeout: float = 60.0


class TokenBucket:
    """Client-side rate limiting: ``qps`` tokens a second, at most ``burst`` saved up."""

    def __init__(
        self,
        qps: float,
        burst: int,
        now: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._rate = max(qps, 1e-9)
        self._capacity = float(max(burst, 1))
        self._tokens = self._capacity
        self._now = now
        self._sleep = sleep
        self._stamp = now()
        self._lock = threading.Lock()

    def acquire(self) -> float:
        """Take one token, waiting for it; returns the seconds waited."""
        with self._lock:
            now = self._now()
            self._tokens = min(self._capacity, self._tokens + (now - self._stamp) * self._rate)
            self._stamp = now
            self._tokens -= 1.0
            wait = 0.0 if self._tokens >= 0 else -self._tokens / self._rate
        if wait > 0:
            self._sleep(wait)
        return wait


@dataclass(frozen=True)
class Answer:
    status: int
    headers: Mapping[str, str]
    body: dict[str, Any]

    @property
    def message(self) -> str:
        return str(self.body.get("message") or self.body.get("reason") or f"HTTP {self.status}")


_RETRYABLE_SERVER_ERRORS = frozenset({500, 502, 503, 504})


def _retry_after(headers: Mapping[str, str]) -> float | None:
    value = headers.get("Retry-After") or headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


class Transport:
    """HTTP plumbing: auth from the client's configuration, rate limit, timeout, retries."""

    def __init__(
        self,
        api_client: Any,
        settings: ClientSettings,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client = api_client
        self.settings = settings
        self.limiter = TokenBucket(settings.qps, settings.burst, sleep=sleep)
        self._sleep = sleep
        self.retries = 0  # how many calls were repeated (for tests and logs)
        #: Checked before every write (see :mod:`nodewright.cluster.fence`); None: unfenced.
        self.fence: Fence | None = None

    def _open(
        self,
        method: str,
        path: str,
        query: Mapping[str, str] | None,
        body: Mapping[str, Any] | builtins.list[Any] | None,
        read_timeout: float,
        *,
        content_type: str = "application/json",
        connect_timeout: float | None = None,
    ) -> Any:
        """One HTTP exchange; returns the urllib3 response (body not read yet)."""
        self.limiter.acquire()
        url_path = path + ("?" + urlencode(query) if query else "")
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        request = self.client.param_serialize(
            method=method,
            resource_path=url_path,
            header_params=headers,
            body=(list(body) if isinstance(body, list) else dict(body))
            if body is not None
            else None,
            auth_settings=["BearerToken"],
        )
        connect = self.settings.connect_timeout if connect_timeout is None else connect_timeout
        response = self.client.call_api(*request, _request_timeout=(connect, read_timeout))
        return response.response

    def call(
        self,
        method: str,
        path: str,
        query: Mapping[str, str] | None = None,
        body: Mapping[str, Any] | builtins.list[Any] | None = None,
        *,
        retry_statuses: frozenset[int] | None = None,
        content_type: str = "application/json",
        timeout: float | None = None,
        attempts: int | None = None,
        fenced: bool = True,
    ) -> Answer:
        """A request with retries; returns the final answer (any status) or raises
        :class:`ServerUnavailableError` when the server cannot be reached or keeps failing.

        ``timeout`` and ``attempts`` override the settings' for this call. A write (anything
        but GET) first asks the fence (unless ``fenced`` is False: the Lease's own writes):
        when this process may not act it raises :class:`NotLeaderError` without sending
        anything, and otherwise waits for its answer no longer than the fence stays open.
        """
        is_read = method == "GET"
        max_attempts = self.settings.max_attempts if attempts is None else attempts
        request_timeout = self.settings.request_timeout if timeout is None else timeout
        retryable = (
            retry_statuses
            if retry_statuses is not None
            else frozenset({429}) | (_RETRYABLE_SERVER_ERRORS if is_read else frozenset())
        )
        attempt = 0
        while True:
            attempt += 1
            read_timeout, connect_timeout = (
                request_timeout,
                min(self.settings.connect_timeout, request_timeout),
            )
            sent_query = query
            if not is_read and fenced and self.fence is not None:
                left = self.fence.check(f"{method} {path}")
                read_timeout, connect_timeout = min(read_timeout, left), min(connect_timeout, left)
                # The server gives up on the request too once the fence would have closed
                # (its deadline runs from when it reads the request): a write that reaches a
                # server frozen mid-request is not carried out when the server wakes up.
                if math.isfinite(left):
                    sent_query = {**(query or {}), "timeout": f"{max(left, 0.001):.3f}s"}
            try:
                raw = self._open(
                    method,
                    path,
                    sent_query,
                    body,
                    read_timeout,
                    content_type=content_type,
                    connect_timeout=connect_timeout,
                )
                try:
                    data = raw.read()
                finally:
                    raw.release_conn()
            except (urllib3.exceptions.HTTPError, OSError) as error:
                if not is_read or attempt >= max_attempts:
                    raise ServerUnavailableError(
                        f"{method} {path}: {type(error).__name__}: {error}"
                    ) from None
                self._backoff(attempt, None)
                continue
            headers = dict(raw.headers.items())
            answer = Answer(raw.status, headers, json_object(data))
            if answer.status in retryable or (
                answer.status in _RETRYABLE_SERVER_ERRORS and _retry_after(headers) is not None
            ):
                if attempt >= max_attempts:
                    error_kind = (
                        TooManyRequestsError if answer.status == 429 else ServerUnavailableError
                    )
                    raise error_kind(
                        f"{method} {path}: HTTP {answer.status} after {attempt} attempts: "
                        f"{answer.message}"
                    )
                self._backoff(attempt, _retry_after(headers))
                continue
            return answer

    def stream(self, path: str, query: Mapping[str, str], read_timeout: float) -> tuple[int, Any]:
        """Open a watch; returns the status and the urllib3 response to read lines from."""
        raw = self._open("GET", path, query, None, read_timeout)
        return raw.status, raw

    def _backoff(self, attempt: int, retry_after: float | None) -> None:
        self.retries += 1
        if retry_after is not None:
            delay = min(retry_after, self.settings.backoff_max)
        else:
            delay = min(self.settings.backoff_base * 2 ** (attempt - 1), self.settings.backoff_max)
            delay *= 0.5 + random.random() / 2
        self._sleep(delay)


def json_object(data: bytes) -> dict[str, Any]:
    if not data:
        return {}
    try:
        value = json.loads(data)
    except ValueError:
        return {"message": data[:200].decode("utf-8", "replace")}
    return value if isinstance(value, dict) else {}


def described(kind: type[KubeObject], name: str, namespace: str) -> str:
    where = f' in namespace "{namespace or DEFAULT_NAMESPACE}"' if kind.NAMESPACED else ""
    return f'{kind.KIND} "{name}"{where}'


def raise_for(answer: Answer, kind: type[KubeObject], name: str, namespace: str) -> None:
    if 200 <= answer.status < 300:
        return
    what = described(kind, name, namespace)
    if answer.status == 404:
        raise NotFoundError(f"{what} not found: {answer.message}")
    if answer.status == 409:
        if answer.body.get("reason") == "AlreadyExists":
            raise AlreadyExistsError(f"{what} already exists")
        raise ConflictError(f"{what}: {answer.message}")
    if answer.status in (400, 422):
        raise InvalidError(f"{what}: {answer.message}")
    if answer.status in (401, 403):
        raise ClusterError(f"{what}: HTTP {answer.status} {answer.message}")
    raise ClusterError(f"{what}: HTTP {answer.status} {answer.message}")


def model_of(kind: type[T], data: Mapping[str, Any]) -> T:
    """``data`` from the server as a ``kind``; an InvalidError naming it when it does not parse."""
    try:
        return kind.model_validate(data)
    except ValidationError as error:
        meta = data.get("metadata") or {}
        raise InvalidError(
            f"{kind.KIND} {meta.get('name', '?')} from the API server does not parse: {error}"
        ) from None
