"""The node-labels hook, called through the host: every plugin's labels merged, conflicts,
raising plugins and restricted label domains."""

from __future__ import annotations

import logging

import pytest

from nodewright.plugin import Instance, PluginConflictError, hookimpl
from nodewright.plugin.host import PluginHost
from nodewright.testing import FakeProvider, fake_node_class, make_node_claim
from tests.plugin.hook_hosts import launched

# -- labels ----------------------------------------------------------------------------------


class TeamLabels:
    """A plugin that is not a provider: it only contributes labels."""

    def __init__(self, labels: dict[str, str] | None = None, error: Exception | None = None):
        self.labels = labels or {}
        self.error = error

    @hookimpl
    def nodewright_node_labels(self, instance: Instance) -> dict[str, str]:
        if self.error is not None:
            raise self.error
        return {**self.labels, "example.com/instance": instance.instance_type}


def label_host(**plugins: object) -> tuple[PluginHost, Instance]:
    host = PluginHost.load(entry_points=False, plugins={"fake": FakeProvider(), **plugins})
    assert host.errors == []
    return host, launched(host)


def test_hook_nodewright_node_labels_merges_every_plugin() -> None:
    host, instance = label_host(team=TeamLabels({"example.com/team": "a"}))
    fake = host.providers[0].plugin
    assert isinstance(fake, FakeProvider)
    fake.extra_node_labels = {"testing.nodewright.dev/size": "small"}
    node_claim = make_node_claim("claim-1", fake_node_class())
    assert host.node_labels(node_claim, instance) == {
        "testing.nodewright.dev/size": "small",
        "example.com/team": "a",
        "example.com/instance": "small-instance-type",
    }


def test_hook_nodewright_node_labels_conflict_names_both_plugins() -> None:
    host, instance = label_host(
        team=TeamLabels({"example.com/team": "a"}), other=TeamLabels({"example.com/team": "b"})
    )
    with pytest.raises(PluginConflictError) as caught:
        host.node_labels(make_node_claim("claim-1", fake_node_class()), instance)
    assert str(caught.value) == (
        "plugin 'other': sets label example.com/team='b', but plugin 'team' sets it to 'a'"
    )


def test_hook_nodewright_node_labels_agreeing_plugins_are_fine() -> None:
    host, instance = label_host(team=TeamLabels({"a/b": "c"}), other=TeamLabels({"a/b": "c"}))
    assert host.node_labels(make_node_claim("claim-1", fake_node_class()), instance)["a/b"] == "c"


def test_hook_nodewright_node_labels_one_raising_plugin_is_skipped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    host, instance = label_host(
        broken=TeamLabels(error=KeyError("team")), team=TeamLabels({"example.com/team": "a"})
    )
    with caplog.at_level(logging.WARNING, logger="nodewright.plugins"):
        labels = host.node_labels(make_node_claim("claim-1", fake_node_class()), instance)
    assert labels["example.com/team"] == "a"
    (error,) = host.recent_errors
    assert str(error) == "plugin 'broken': nodewright_node_labels raised KeyError: 'team'"
    assert "plugin 'broken'" in caplog.text


def test_hook_nodewright_node_labels_in_a_foreign_restricted_domain_are_dropped() -> None:
    host, instance = label_host(
        sneaky=TeamLabels({"karpenter.sh/nodepool": "x", "sub.testing.nodewright.dev/y": "z"})
    )
    labels = host.node_labels(make_node_claim("claim-1", fake_node_class()), instance)
    assert labels == {"example.com/instance": "small-instance-type"}
    assert len(host.recent_errors) == 2
    assert all("restricted domain" in str(e) for e in host.recent_errors)


def test_hook_nodewright_node_labels_a_provider_may_set_its_own_domain() -> None:
    host, instance = label_host()
    fake = host.providers[0].plugin
    assert isinstance(fake, FakeProvider)
    fake.extra_node_labels = {"testing.nodewright.dev/rack": "r1"}
    labels = host.node_labels(make_node_claim("claim-1", fake_node_class()), instance)
    assert labels == {"testing.nodewright.dev/rack": "r1"}
    assert host.recent_errors == []
