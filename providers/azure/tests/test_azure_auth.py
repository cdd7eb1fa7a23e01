"""Credentials from azure-identity against the fake Entra token endpoint; secrets never reach
logs or errors."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from azure.identity import ManagedIdentityCredential

from nodewright.clock import SimulatedClock
from nodewright.plugin.errors import NodeClassNotReadyError, TemporaryProviderError
from nodewright.plugin.model import ProviderContext
from nodewright_azure.auth import credential
from nodewright_azure.cloudprovider import AzureProvider
from nodewright_azure.options import parse_settings
from providers.azure.tests.azure_helpers import fake_options
from providers.azure.tests.fake_azure import FakeAzure

TENANT = "11111111-2222-3333-4444-555555555555"
SECRET = "s3cr3t-Zq8~very-private-value"


@pytest.fixture(autouse=True)
def _close_providers() -> Iterator[None]:
    yield
    while MADE:
        MADE.pop().close()


MADE: list[AzureProvider] = []


def real_provider(fake: FakeAzure, clock: SimulatedClock, **options: str) -> AzureProvider:
    provider = AzureProvider()  # azure-identity credentials, chosen by options
    MADE.append(provider)
    provider.configure(
        ProviderContext(
            cluster=None,
            clock=clock,
            options=fake_options(
                fake, authority_host=fake.url, tenant_id=TENANT, pricing="static", **options
            ),
        )
    )
    return provider


def test_client_secret_from_a_file(fake: FakeAzure, clock: SimulatedClock, tmp_path: Path) -> None:
    fake.clients["app-1"] = SECRET
    secret_file = tmp_path / "secret"
    secret_file.write_text(SECRET + "\n")
    provider = real_provider(
        fake,
        clock,
        auth_mode="client-secret",
        client_id="app-1",
        client_secret_file=str(secret_file),
    )
    assert len(provider.instance_type_provider.region_skus()) == 34
    (form,) = fake.token_requests  # one token, cached for every later call
    assert form["client_id"] == ["app-1"]
    assert form["scope"] == ["https://management.azure.com/.default"]


def test_workload_identity_sends_the_federated_token(
    fake: FakeAzure, clock: SimulatedClock, tmp_path: Path
) -> None:
    fake.clients["wi-app"] = "federated-jwt-from-the-kubelet"
    token_file = tmp_path / "azure-identity-token"
    token_file.write_text("federated-jwt-from-the-kubelet")
    provider = real_provider(
        fake,
        clock,
        auth_mode="workload-identity",
        client_id="wi-app",
        federated_token_file=str(token_file),
    )
    assert provider.instance_type_provider.region_skus()
    (form,) = fake.token_requests
    assert form["client_assertion"] == ["federated-jwt-from-the-kubelet"]
    assert form["client_assertion_type"] == [
        "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    ]


def test_a_rejected_secret_is_never_logged_nor_in_the_error(
    fake: FakeAzure,
    clock: SimulatedClock,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake.clients["app-1"] = "the-right-one"
    monkeypatch.setenv("AZURE_CLIENT_SECRET", SECRET)
    caplog.set_level(logging.DEBUG)
    provider = real_provider(fake, clock, auth_mode="client-secret", client_id="app-1")
    with pytest.raises(TemporaryProviderError) as info:
        provider.instance_type_provider.region_skus()
    assert "authentication failed" in str(info.value)
    assert SECRET not in str(info.value)
    assert SECRET not in repr(provider.settings)
    assert caplog.records, "nothing was logged at DEBUG: the check would be vacuous"
    assert SECRET not in caplog.text
    # The fake did receive it: the secret went only where it belongs.
    assert fake.token_requests[0]["client_secret"] == [SECRET]


def test_missing_credentials_settings_name_the_option(
    fake: FakeAzure, clock: SimulatedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AZURE_CLIENT_ID", raising=False)
    provider = real_provider(fake, clock, auth_mode="workload-identity")
    with pytest.raises(NodeClassNotReadyError, match="client-id"):
        provider.instance_type_provider.region_skus()
    assert fake.requests == []


def test_managed_identity_is_built_without_any_call() -> None:
    settings = parse_settings({"auth-mode": "managed-identity", "client-id": "mi-1"})
    assert isinstance(credential(settings), ManagedIdentityCredential)


def test_managed_identity_gets_its_token_from_the_identity_endpoint(
    fake: FakeAzure, clock: SimulatedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("IDENTITY_ENDPOINT", f"{fake.url}/msi/token")
    monkeypatch.setenv("IDENTITY_HEADER", fake.identity_header)
    provider = real_provider(fake, clock, auth_mode="managed-identity")
    assert len(provider.instance_type_provider.region_skus()) == 34
    (form,) = fake.token_requests
    assert form["resource"] == ["https://management.azure.com"]
