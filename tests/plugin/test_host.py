"""Loading and validating plugins: every problem names the plugin and its distribution, and
one broken plugin never stops a healthy one."""

from __future__ import annotations

import logging

import pytest

from nodewright.clock import SimulatedClock
from nodewright.plugin import (
    InstanceNotFoundError,
    PluginConflictError,
    PluginContractError,
    PluginLoadError,
    ProviderContext,
    UnknownNodeClassError,
)
from nodewright.plugin.host import PluginHost
from nodewright.testing import FakeProvider, fake_node_class, launch_request, make_node_claim
from nodewright.testing.conformance import UnavailableCluster
from tests.plugin.conftest import DistributionMaker
from tests.plugin.samples import OtherProvider, provider_source


def load(*only: str, **plugins: object) -> PluginHost:
    return PluginHost.load(only=only, plugins=plugins)


def only_error(host: PluginHost) -> Exception:
    assert len(host.errors) == 1, host.errors
    return host.errors[0]


# -- import failures -------------------------------------------------------------------------


def test_a_plugin_that_fails_to_import_is_named_with_its_distribution(
    distribution: DistributionMaker,
) -> None:
    distribution(
        "nodewright-crashy",
        "0.3.1",
        entry_points={"crashy": "crashy_plugin"},
        modules={"crashy_plugin": "raise RuntimeError('no credentials file at ~/.crashy')\n"},
    )
    host = load("crashy")
    error = only_error(host)
    assert isinstance(error, PluginLoadError)
    assert str(error) == (
        "plugin 'crashy' (distribution nodewright-crashy): failed to import 'crashy_plugin': "
        "RuntimeError: no credentials file at ~/.crashy"
    )
    assert "Traceback" not in str(error)
    (row,) = host.describe()
    assert row["version"] == "0.3.1"
    assert row["status"].startswith("error: failed to import")


def test_a_broken_plugin_does_not_stop_a_healthy_one(distribution: DistributionMaker) -> None:
    distribution(
        "nodewright-crashy",
        entry_points={"crashy": "crashy_plugin"},
        modules={"crashy_plugin": "import no_such_module_anywhere\n"},
    )
    fake = FakeProvider()
    host = load("crashy", fake=fake)
    assert [type(e) for e in host.errors] == [PluginLoadError]
    assert "ModuleNotFoundError" in str(host.errors[0])
    node_class = fake_node_class()
    request = launch_request(host, make_node_claim("a", node_class), node_class)
    assert host.launch(request).instance_type == "small-instance-type"


def test_an_allowed_plugin_that_is_not_installed_is_an_error() -> None:
    host = PluginHost.load(only=["nowhere"])
    error = only_error(host)
    assert isinstance(error, PluginLoadError)
    assert "plugin 'nowhere'" in str(error)
    assert "not installed" in str(error)


def test_blocked_plugins_are_not_loaded(distribution: DistributionMaker) -> None:
    distribution(
        "nodewright-crashy",
        entry_points={"crashy": "crashy_plugin"},
        modules={"crashy_plugin": "raise RuntimeError('must not be imported')\n"},
    )
    host = PluginHost.load(only=["crashy"], blocked=["crashy"])
    assert host.providers == []
    assert host.errors == []


# -- invalid implementations -----------------------------------------------------------------


def test_a_hookimpl_with_a_wrong_signature_is_a_load_error(
    distribution: DistributionMaker,
) -> None:
    source = provider_source(
        "wrongsig",
        """
@hookimpl
def nodewright_get(provider_id, region):
    raise InstanceNotFoundError(provider_id)
""",
    )
    distribution(
        "nodewright-wrongsig",
        "2.0",
        entry_points={"wrongsig": "wrongsig_plugin"},
        modules={"wrongsig_plugin": source},
    )
    host = load("wrongsig")
    error = only_error(host)
    assert isinstance(error, PluginLoadError)
    message = str(error)
    assert message.startswith("plugin 'wrongsig' (distribution nodewright-wrongsig): ")
    assert "nodewright_get" in message
    assert "region" in message
    assert "\n" not in message


def test_an_unknown_nodewright_hook_is_a_load_error_with_a_suggestion(
    distribution: DistributionMaker,
) -> None:
    source = provider_source(
        "typo",
        """
@hookimpl
def nodewright_lauch(request):
    return None
""",
    )
    distribution(
        "nodewright-typo",
        entry_points={"typo": "typo_plugin"},
        modules={"typo_plugin": source},
    )
    host = load("typo")
    error = only_error(host)
    assert isinstance(error, PluginLoadError)
    assert str(error) == (
        "plugin 'typo' (distribution nodewright-typo): function 'nodewright_lauch' matches no "
        "hook in the nodewright contract; did you mean 'nodewright_launch'?"
    )


def test_a_nodewright_function_without_the_marker_is_a_load_error(
    distribution: DistributionMaker,
) -> None:
    source = provider_source(
        "unmarked",
        """
def nodewright_is_drifted(node_claim, node_class):
    return None
""",
    )
    distribution(
        "nodewright-unmarked",
        entry_points={"unmarked": "unmarked_plugin"},
        modules={"unmarked_plugin": source},
    )
    error = only_error(load("unmarked"))
    assert "distribution nodewright-unmarked" in str(error)
    assert "'nodewright_is_drifted' is not marked with @hookimpl" in str(error)


def test_provider_info_of_the_wrong_type_is_a_contract_error(
    distribution: DistributionMaker,
) -> None:
    source = provider_source(
        "dicty",
        """
@hookimpl
def nodewright_provider_info():
    return {"name": "dicty"}
""",
    )
    distribution(
        "nodewright-dicty", entry_points={"dicty": "dicty_plugin"}, modules={"dicty_plugin": source}
    )
    error = only_error(load("dicty"))
    assert isinstance(error, PluginContractError)
    assert str(error) == (
        "plugin 'dicty' (distribution nodewright-dicty): nodewright_provider_info returned "
        "dict {'name': 'dicty'}, not ProviderInfo"
    )


def test_a_provider_missing_required_hooks_is_a_load_error(
    distribution: DistributionMaker,
) -> None:
    source = """
from typing import ClassVar
from nodewright.api.karpenter import NodeClass
from nodewright.plugin import NodeClassKind, ProviderInfo, hookimpl

class HalfNodeClass(NodeClass):
    API_VERSION: ClassVar[str] = "half.example.com/v1"
    KIND: ClassVar[str] = "HalfNodeClass"

@hookimpl
def nodewright_provider_info():
    return ProviderInfo(
        name="half",
        node_classes=(NodeClassKind("half.example.com", "HalfNodeClass", HalfNodeClass),),
    )
"""
    distribution(
        "nodewright-half", entry_points={"half": "half_plugin"}, modules={"half_plugin": source}
    )
    host = load("half")
    error = only_error(host)
    assert "plugin 'half' (distribution nodewright-half)" in str(error)
    assert "nodewright_launch" in str(error)
    with pytest.raises(PluginLoadError, match="does not implement"):
        host.provider_for("half.example.com", "HalfNodeClass")


# -- conflicts -------------------------------------------------------------------------------


def test_duplicate_provider_names_break_both_and_name_both_distributions(
    distribution: DistributionMaker,
) -> None:
    for dist, key in (("nodewright-dup-a", "dupa"), ("nodewright-dup-b", "dupb")):
        # Both declare the provider name "dup", each with a NodeClass kind of its own.
        source = provider_source(key).replace('name="' + key + '"', 'name="dup"')
        distribution(
            dist, "1.0", entry_points={key: f"{key}_plugin"}, modules={f"{key}_plugin": source}
        )
    host = load("dupa", "dupb")
    assert len(host.errors) == 2
    assert all(isinstance(e, PluginConflictError) for e in host.errors)
    first, second = map(str, host.errors)
    assert first == (
        "plugin 'dup' (distribution nodewright-dup-a): declares provider name 'dup', "
        "as does plugin 'dup' (distribution nodewright-dup-b 1.0)"
    )
    assert second == (
        "plugin 'dup' (distribution nodewright-dup-b): declares provider name 'dup', "
        "as does plugin 'dup' (distribution nodewright-dup-a 1.0)"
    )
    with pytest.raises(PluginConflictError):
        host.provider("dup")
    with pytest.raises(PluginConflictError):
        host.provider_for("dupb.example.com", "DupbNodeClass")


def test_duplicate_node_class_kinds_break_both_providers() -> None:
    host = load(first=FakeProvider("first"), second=FakeProvider("second"))
    assert len(host.errors) == 2
    for error, other in zip(host.errors, ("second", "first"), strict=True):
        assert isinstance(error, PluginConflictError)
        assert "NodeClass kind FakeNodeClass (testing.nodewright.dev)" in str(error)
        assert f"plugin {other!r}" in str(error)
    with pytest.raises(PluginConflictError, match="FakeNodeClass"):
        host.provider_for("testing.nodewright.dev", "FakeNodeClass")
    assert host.node_class_kinds() == []


def test_a_conflict_does_not_stop_an_unrelated_provider() -> None:
    other = OtherProvider()
    host = load(first=FakeProvider("first"), second=FakeProvider("second"), other=other)
    assert host.provider_for("other.example.com", "OtherNodeClass").name == "other"
    assert [k.kind for k in host.node_class_kinds()] == ["OtherNodeClass"]


# -- routing ---------------------------------------------------------------------------------


def test_unknown_first_party_node_class_suggests_the_extra_to_install() -> None:
    host = load(fake=FakeProvider())
    with pytest.raises(UnknownNodeClassError) as caught:
        host.provider_for("karpenter.k8s.aws", "EC2NodeClass")
    message = str(caught.value)
    assert 'pip install "nodewright[aws]"' in message
    assert "installed providers serve: FakeNodeClass (testing.nodewright.dev)" in message


def test_unknown_third_party_node_class_lists_what_is_served() -> None:
    host = load(fake=FakeProvider())
    with pytest.raises(UnknownNodeClassError, match="FakeNodeClass") as caught:
        host.provider_for("example.com", "MysteryNodeClass")
    assert "pip install" not in str(caught.value)


def test_a_first_party_kind_whose_plugin_failed_to_import_raises_that_error(
    distribution: DistributionMaker,
) -> None:
    # Shadows the installed nodewright-kwok: the first distribution of a name on sys.path wins.
    distribution(
        "nodewright-kwok",
        "9.9",
        entry_points={"kwok": "kwok_broken_plugin"},
        modules={"kwok_broken_plugin": "raise ImportError('kwok needs a newer nodewright')\n"},
    )
    host = PluginHost.load(only=["kwok"])
    with pytest.raises(PluginLoadError, match="kwok needs a newer nodewright"):
        host.provider_for("karpenter.kwok.sh", "KWOKNodeClass")


def test_owner_hooks_reach_only_the_owner() -> None:
    fake, other = FakeProvider(), OtherProvider()
    host = load(fake=fake, other=other)
    node_class = fake_node_class()
    types = host.instance_types(node_class)
    assert {t.name for t in types} == {
        "default-instance-type",
        "small-instance-type",
        "arm-instance-type",
    }
    instance = host.launch(launch_request(host, make_node_claim("a", node_class), node_class))
    assert host.get("fake", instance.provider_id) == instance
    assert [name for name, _ in fake.calls][-2:] == ["launch", "get"]
    assert {name for name, _ in fake.calls} == {"instance_types", "offerings", "launch", "get"}
    assert other.calls == []
    with pytest.raises(InstanceNotFoundError):
        host.get("other", instance.provider_id)
    assert other.get_calls == [instance.provider_id]


def test_a_provider_that_fails_to_configure_is_broken_and_the_others_are_not() -> None:
    fake, other = FakeProvider(), OtherProvider()
    other.next_error("configure", ValueError("option 'zones' must not be empty"))
    host = load(fake=fake, other=other)
    contexts: list[str] = []

    def context_for(name: str) -> ProviderContext:
        contexts.append(name)
        return ProviderContext(cluster=UnavailableCluster(), clock=SimulatedClock(), options={})

    host.configure(context_for)
    assert contexts == ["fake", "other"]
    assert fake.context is not None
    error = only_error(host)
    assert str(error) == (
        "plugin 'other': nodewright_configure failed: ValueError: option 'zones' must not be empty"
    )
    with pytest.raises(PluginLoadError, match="zones"):
        host.provider_for("other.example.com", "OtherNodeClass")


def test_describe_lists_every_plugin_with_its_status(distribution: DistributionMaker) -> None:
    distribution(
        "nodewright-crashy",
        "0.1",
        entry_points={"crashy": "crashy_plugin"},
        modules={"crashy_plugin": "raise RuntimeError('boom')\n"},
    )
    host = load("crashy", fake=FakeProvider())
    rows = host.describe()
    assert [(r["name"], r["distribution"], r["version"]) for r in rows] == [
        ("fake", "", ""),
        ("crashy", "nodewright-crashy", "0.1"),
    ]
    assert rows[0]["node_classes"] == "FakeNodeClass (testing.nodewright.dev)"
    assert rows[0]["status"] == "ok"
    assert "launch" in rows[0]["hooks"].split(", ")
    assert rows[1]["status"] == "error: failed to import 'crashy_plugin': RuntimeError: boom"


def test_load_problems_are_logged(
    distribution: DistributionMaker, caplog: pytest.LogCaptureFixture
) -> None:
    distribution(
        "nodewright-crashy",
        entry_points={"crashy": "crashy_plugin"},
        modules={"crashy_plugin": "raise RuntimeError('boom')\n"},
    )
    with caplog.at_level(logging.WARNING, logger="nodewright.plugins"):
        load("crashy")
    assert any("nodewright-crashy" in r.getMessage() for r in caplog.records)
