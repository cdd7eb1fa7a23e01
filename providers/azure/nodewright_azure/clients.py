"""The ARM clients (azure-mgmt-compute, azure-mgmt-network), built on first use, and how
their failures become provider errors.

Nothing talks to Azure before the first hook that needs it; clients and credentials are built
then, so the plugin loads without credentials or network. Under ``azure.offline`` the clients
talk to the in-process cloud through its transport.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from azure.core.credentials import TokenCredential
from azure.core.exceptions import (
    ClientAuthenticationError,
    HttpResponseError,
    ResourceNotFoundError,
    ServiceRequestError,
)

from nodewright.plugin import NodeClassNotReadyError, ProviderError, TemporaryProviderError
from nodewright_azure.offline.cloud import OfflineAzure
from nodewright_azure.offline.transport import OfflineCredential, OfflineTransport
from nodewright_azure.options import Settings, SettingsError

if TYPE_CHECKING:
    from azure.mgmt.compute import ComputeManagementClient
    from azure.mgmt.network import NetworkManagementClient

CredentialFactory = Callable[[Settings], TokenCredential]


class AzureClients:
    """The credential and the two management clients of one configuration."""

    def __init__(
        self,
        settings: Settings,
        credential_factory: CredentialFactory,
        offline: OfflineAzure | None,
    ) -> None:
        self.settings = settings
        self._credential_factory = credential_factory
        #: The in-process cloud under ``azure.offline=LOCATION`` (None when online).
        self.offline = offline
        self._compute: ComputeManagementClient | None = None
        self._network: NetworkManagementClient | None = None

    def credential(self) -> TokenCredential:
        if self.offline is not None:
            return OfflineCredential()
        return self._credential_factory(self.settings)

    def transport(self) -> dict[str, Any]:
        """The SDK clients' transport: the in-process cloud offline, else the default."""
        return {} if self.offline is None else {"transport": OfflineTransport(self.offline)}

    def _client_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {
            "polling_interval": self.settings.polling_interval,
            "retry_backoff_factor": self.settings.retry_backoff,
            "retry_total": 5,
        }
        if self.settings.ca_bundle:
            options["connection_verify"] = self.settings.ca_bundle
        return options

    def clients(self) -> tuple[ComputeManagementClient, NetworkManagementClient]:
        if self._compute is None or self._network is None:
            # The management SDKs take seconds to import: only a provider that talks to Azure
            # pays for them, not every `nodewright` command that loads the plugin.
            from azure.mgmt.compute import ComputeManagementClient  # noqa: PLC0415
            from azure.mgmt.network import NetworkManagementClient  # noqa: PLC0415

            try:
                self.settings.require()
                credential = self.credential()
            except SettingsError as error:
                raise NodeClassNotReadyError(str(error)) from None
            endpoint = self.settings.arm_endpoint.rstrip("/")
            scopes = ["https://management.azure.com/.default"]
            self._compute = ComputeManagementClient(
                credential,
                self.settings.subscription_id,
                base_url=endpoint,
                credential_scopes=scopes,
                **self._client_options(),
                **self.transport(),
            )
            self._network = NetworkManagementClient(
                credential,
                self.settings.subscription_id,
                base_url=endpoint,
                credential_scopes=scopes,
                **self._client_options(),
                **self.transport(),
            )
        return self._compute, self._network

    def close(self) -> None:
        """Close the clients' connections (they are built again if needed)."""
        for client in (self._compute, self._network):
            if client is not None:
                client.close()
        self._compute = self._network = None


def message(error: BaseException) -> str:
    """The first line of an SDK error's message."""
    text = getattr(error, "message", None) or str(error)
    return str(text).splitlines()[0] if text else type(error).__name__


@contextmanager
def azure_errors(what: str) -> Iterator[None]:
    """Turns transport, auth and unexpected ARM failures into TemporaryProviderError."""
    try:
        yield
    except (ResourceNotFoundError, ProviderError):
        raise
    except ClientAuthenticationError as error:
        raise TemporaryProviderError(
            f"azure: authentication failed {what}: {message(error)}"
        ) from None
    except ServiceRequestError as error:
        raise TemporaryProviderError(f"azure: cannot reach ARM {what}: {message(error)}") from None
    except HttpResponseError as error:
        code = error.error.code if error.error is not None else error.status_code
        raise TemporaryProviderError(f"azure: {what}: {code}: {message(error)}") from None
