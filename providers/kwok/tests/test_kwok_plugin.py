"""The provider as the core sees it: an entry point whose module implements the hooks."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Iterator
from datetime import timedelta

import pluggy
import pytest
from pydantic import ValidationError

from nodewright.plugin import (
    ENTRY_POINT_GROUP,
    NAME,
    Node,
    ProviderContext,
    TemporaryProviderError,
    hookspecs,
)
from nodewright.testing import MemoryCluster, SimulatedClock
from nodewright_kwok import plugin
from nodewright_kwok.nodeclass import KWOKNodeClass
from providers.kwok.tests.kwok_helpers import launch_request


@pytest.fixture
def hooks(cluster: MemoryCluster, clock: SimulatedClock) -> Iterator[pluggy.HookRelay]:
    manager = pluggy.PluginManager(NAME)
    manager.add_hookspecs(hookspecs)
    manager.register(plugin, name="kwok")
    manager.check_pending()
    manager.hook.nodewright_configure(
        context=ProviderContext(cluster=cluster, clock=clock, options={"registration-delay": "1s"})
    )
    yield manager.hook
    manager.unregister(plugin)


def test_the_entry_point_loads_the_plugin_module() -> None:
    (entry_point,) = [
        ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP) if ep.name == "kwok"
    ]
    assert entry_point.load() is plugin


def test_every_hook_in_the_contract_is_implemented() -> None:
    specs = {name for name in dir(hookspecs) if name.startswith("nodewright_")}
    implemented = {name for name in dir(plugin) if name.startswith("nodewright_")}
    assert specs == implemented


def test_provider_info_declares_kwok(hooks: pluggy.HookRelay) -> None:
    (info,) = hooks.nodewright_provider_info()
    assert info.name == "kwok"
    (kind,) = info.node_classes
    assert (kind.group, kind.kind, kind.model) == (
        "karpenter.kwok.sh",
        "KWOKNodeClass",
        KWOKNodeClass,
    )
    assert info.restricted_label_domains == {"karpenter.kwok.sh"}
    assert info.well_known_labels == {
        "karpenter.kwok.sh/instance-size",
        "karpenter.kwok.sh/instance-family",
        "karpenter.kwok.sh/instance-cpu",
        "karpenter.kwok.sh/reservation-id",
        "karpenter.kwok.sh/instance-memory",
    }
    assert info.install_hint == 'pip install "nodewright[kwok]"'


def test_a_launch_through_the_hooks_registers_a_node(
    hooks: pluggy.HookRelay, cluster: MemoryCluster, clock: SimulatedClock
) -> None:
    types = hooks.nodewright_instance_types(node_class=KWOKNodeClass())
    assert len(types) == 144
    offerings = hooks.nodewright_offerings(node_class=KWOKNodeClass(), instance_types=types[:3])
    assert set(offerings) == {it.name for it in types[:3]}

    request = launch_request(plugin.provider, "via-hooks")
    instance = hooks.nodewright_launch(request=request)
    assert plugin.ledger.instances() == [instance]
    assert hooks.nodewright_reconcile(now=clock.now()) == [timedelta(seconds=1)]
    clock.advance(timedelta(seconds=1))
    hooks.nodewright_reconcile(now=clock.now())
    assert cluster.get(Node, "via-hooks") is not None
    assert hooks.nodewright_get(provider_id=instance.provider_id).state == "running"

    hooks.nodewright_delete(provider_id=instance.provider_id)
    assert hooks.nodewright_list() == []


def test_module_faults_reach_the_hooks(hooks: pluggy.HookRelay) -> None:
    plugin.faults.fail_next("instance_types")
    with pytest.raises(TemporaryProviderError):
        hooks.nodewright_instance_types(node_class=KWOKNodeClass())
    plugin.faults.reset()
    assert len(hooks.nodewright_instance_types(node_class=KWOKNodeClass())) == 144


def test_configure_starts_from_a_clean_ledger(
    hooks: pluggy.HookRelay, cluster: MemoryCluster, clock: SimulatedClock
) -> None:
    hooks.nodewright_launch(request=launch_request(plugin.provider, "old"))
    hooks.nodewright_configure(context=ProviderContext(cluster=cluster, clock=clock, options={}))
    assert plugin.ledger.instances() == []


def test_a_kwok_node_class_manifest_parses_strictly() -> None:
    manifest = {
        "apiVersion": "karpenter.kwok.sh/v1alpha1",
        "kind": "KWOKNodeClass",
        "metadata": {"name": "default"},
        "spec": {"nodeRegistrationDelay": "1m30s"},
    }
    parsed = KWOKNodeClass.model_validate(manifest)
    assert parsed.spec.registration_delay() == timedelta(seconds=90)
    unset = KWOKNodeClass.model_validate({"metadata": {"name": "x"}})
    assert unset.spec.registration_delay() is None
    with pytest.raises(ValidationError, match="nodeRegistrationDelay"):
        KWOKNodeClass.model_validate({**manifest, "spec": {"nodeRegistrationDelay": "1.5s"}})
    with pytest.raises(ValidationError, match="maxPod"):
        KWOKNodeClass.model_validate({**manifest, "spec": {"maxPod": 3}})
