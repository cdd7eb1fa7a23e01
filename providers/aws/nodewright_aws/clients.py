"""Lazily built boto3 clients: nothing talks to AWS until a hook needs it.

Every client retries throttling with botocore's adaptive backoff. Errors are turned into
the core's errors with the AWS error code and message only: credentials never reach a
message or a log line.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import botocore.exceptions

from nodewright.plugin import NodeClassNotReadyError, TemporaryProviderError
from nodewright_aws.options import REGION, Settings

log = logging.getLogger(__name__)

THROTTLING_CODES = frozenset(
    {"RequestLimitExceeded", "Throttling", "ThrottlingException", "TooManyRequestsException"}
)
UNAUTHORIZED_CODES = frozenset(
    {"UnauthorizedOperation", "AccessDenied", "AccessDeniedException", "AuthFailure"}
)


class MissingConfigurationError(NodeClassNotReadyError):
    """No region or no credentials: the provider cannot reach AWS."""


def error_code(error: BaseException) -> str:
    if isinstance(error, botocore.exceptions.ClientError):
        return str(error.response.get("Error", {}).get("Code", ""))
    return ""


def error_text(error: BaseException) -> str:
    """``Code: message`` of an AWS error, never the request (which may carry secrets)."""
    if isinstance(error, botocore.exceptions.ClientError):
        details = error.response.get("Error", {})
        return f"{details.get('Code', 'Error')}: {details.get('Message', '')}".strip()
    return type(error).__name__


def _boto3_session(region: str) -> Any:
    # boto3 is imported when a session is first made, not when the plugin loads.
    import boto3  # noqa: PLC0415

    return boto3.Session(region_name=region)


def retry_config() -> Any:
    """botocore's configuration of every client: throttling (RequestLimitExceeded,
    ThrottlingException) is retried with backoff."""
    # Imported with the first client, not when the plugin loads (as boto3 is).
    import botocore.config  # noqa: PLC0415

    return botocore.config.Config(retries={"mode": "adaptive", "max_attempts": 8})


class AWSClients:
    """One boto3 session and its clients, created on first use.

    Clients are typed ``Any``: boto3's generated TypedDicts add noise, not safety, to code
    that passes plain filter dicts.
    """

    def __init__(
        self,
        settings: Settings,
        session_factory: Callable[[str], Any] | None = None,
        client_config: Callable[[], Any] | None = retry_config,
    ) -> None:
        """``client_config`` makes each client's botocore configuration (None: none, for
        sessions that are not boto3's, such as the offline account's)."""
        self.settings = settings
        self._session_factory = session_factory or _boto3_session
        self._client_config = client_config
        self._clients: dict[tuple[str, str], Any] = {}

    @property
    def region(self) -> str:
        if not self.settings.region:
            raise MissingConfigurationError(
                f"no AWS region: set --provider-option aws.{REGION}=<region> or AWS_REGION"
            )
        return self.settings.region

    def client(self, service: str, region: str | None = None) -> Any:
        region = region or self.region
        key = (service, region)
        if key not in self._clients:
            session = self._session_factory(region)
            if session.get_credentials() is None:
                raise MissingConfigurationError(
                    "no AWS credentials found (environment, shared config or instance role)"
                )
            self._clients[key] = session.client(
                service,
                region_name=region,
                endpoint_url=self.settings.endpoint_url,
                config=self._client_config() if self._client_config is not None else None,
            )
        return self._clients[key]

    @property
    def ec2(self) -> Any:
        return self.client("ec2")

    @property
    def ssm(self) -> Any:
        return self.client("ssm")

    @property
    def sqs(self) -> Any:
        return self.client("sqs")

    @property
    def eks(self) -> Any:
        return self.client("eks")

    @property
    def pricing(self) -> Any:
        return self.client("pricing", pricing_region(self.region))


def pricing_region(region: str) -> str:
    """The Pricing API lives in a few regions only (Karpenter's routing)."""
    if region.startswith("ap-"):
        return "ap-south-1"
    if region.startswith("eu-"):
        return "eu-central-1"
    if region.startswith("cn-"):
        return "cn-northwest-1"
    return "us-east-1"


@contextmanager
def aws_errors(action: str) -> Iterator[None]:
    """Turn transport failures and leftover throttling into TemporaryProviderError."""
    try:
        yield
    except botocore.exceptions.ClientError as error:
        if error_code(error) in THROTTLING_CODES:
            raise TemporaryProviderError(f"{action}: throttled ({error_text(error)})") from None
        raise
    except (
        botocore.exceptions.EndpointConnectionError,
        botocore.exceptions.ConnectTimeoutError,
        botocore.exceptions.ReadTimeoutError,
    ) as error:
        raise TemporaryProviderError(
            f"{action}: cannot reach AWS ({type(error).__name__})"
        ) from None
    except botocore.exceptions.NoCredentialsError:
        raise MissingConfigurationError(
            "no AWS credentials found (environment, shared config or instance role)"
        ) from None
