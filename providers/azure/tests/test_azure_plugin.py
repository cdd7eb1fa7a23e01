"""The plugin loads and configures without credentials or network; settings errors name the
option; the entry point is registered."""

from __future__ import annotations

from importlib.metadata import entry_points

import pytest

from nodewright.clock import SimulatedClock
from nodewright.plugin import ENTRY_POINT_GROUP
from nodewright.plugin.errors import NodeClassNotReadyError
from nodewright.plugin.model import ProviderContext
from nodewright_azure.cloudprovider import AzureProvider
from nodewright_azure.options import SettingsError
from providers.azure.tests.azure_helpers import node_class


def configured(**options: str) -> AzureProvider:
    provider = AzureProvider()
    provider.configure(ProviderContext(cluster=None, clock=SimulatedClock(), options=options))
    return provider


def test_loads_and_configures_with_no_options_and_says_what_is_missing() -> None:
    provider = configured()
    readiness = provider.node_class_status(node_class())
    assert not readiness.ready
    assert readiness.reason == "ProviderNotConfigured"
    for option in ("azure.subscription-id", "azure.resource-group", "azure.location"):
        assert option in readiness.message
    with pytest.raises(NodeClassNotReadyError, match=r"azure\.subscription-id"):
        provider.instance_types(node_class())
    # Garbage collection lists every provider: an unconfigured one runs nothing.
    assert provider.list_instances() == []


def test_the_configuration_problem_names_the_missing_options_then_the_credential(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    problem = configured().configuration_problem()
    assert problem is not None
    for option in ("azure.subscription-id", "azure.resource-group", "azure.location"):
        assert option in problem
    for variable in ("AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET"):
        monkeypatch.delenv(variable, raising=False)
    settings = {"subscription-id": "s", "resource-group": "rg", "location": "eastus"}
    secretless = configured(**settings, **{"auth-mode": "client-secret"})
    assert secretless.configuration_problem() == (
        "auth-mode client-secret needs --provider-option azure.client-secret-file=... "
        "or AZURE_CLIENT_SECRET"
    )


def test_a_node_class_without_a_subnet_is_not_ready() -> None:
    provider = configured(**{"subscription-id": "s", "resource-group": "rg", "location": "eastus"})
    readiness = provider.node_class_status(node_class())
    assert (readiness.ready, readiness.reason) == (False, "SubnetsNotReady")


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"subscription": "x"}, "'subscription'"),
        ({"auth-mode": "password"}, "auth-mode"),
        ({"pricing": "cheap"}, "pricing"),
        ({"arm-endpoint": "http://127.0.0.1"}, "arm-endpoint"),
        ({"vm-memory-overhead-percent": "7.5"}, "vm-memory-overhead-percent"),
        ({"network-plugin": "calico"}, "network-plugin"),
    ],
)
def test_bad_options_are_errors_naming_the_option(options: dict[str, str], named: str) -> None:
    with pytest.raises(SettingsError, match=named):
        configured(**options)


def test_entry_point_is_registered() -> None:
    (found,) = [e for e in entry_points(group=ENTRY_POINT_GROUP) if e.name == "azure"]
    assert found.value == "nodewright_azure.plugin"
    module = found.load()
    assert module.nodewright_provider_info().name == "azure"
