"""Plugin hosts the hook tests call hooks through: loaded from plugin objects, or from a
distribution whose provider replaces some hooks (to see what happens when a plugin misbehaves).
Each hook has a test named after it in the ``test_hooks_*`` modules (tests/test_docs.py
checks)."""

from __future__ import annotations

from nodewright.plugin import Instance
from nodewright.plugin.host import PluginHost
from nodewright.testing import FakeProvider, fake_node_class, launch_request, make_node_claim
from tests.plugin.conftest import DistributionMaker

BAD_PROVIDER = """
from nodewright.plugin import hookimpl
from nodewright.testing import FakeProvider


class BadProvider(FakeProvider):
{body}


plugin = BadProvider("bad")
"""


def bad_provider(distribution: DistributionMaker, body: str) -> PluginHost:
    """A FakeProvider from distribution nodewright-bad 0.9 with some hooks replaced."""
    indented = "\n".join("    " + line for line in body.strip().splitlines())
    distribution(
        "nodewright-bad",
        "0.9",
        entry_points={"bad": "bad_plugin:plugin"},
        modules={"bad_plugin": BAD_PROVIDER.format(body=indented)},
    )
    host = PluginHost.load(only=["bad"])
    assert host.errors == []
    return host


def launched(host: PluginHost, name: str = "claim-1") -> Instance:
    node_class = fake_node_class()
    return host.launch(launch_request(host, make_node_claim(name, node_class), node_class))


def fake_host(*providers: FakeProvider) -> PluginHost:
    plugins = {p.name: p for p in providers} if providers else {"fake": FakeProvider()}
    host = PluginHost.load(entry_points=False, plugins=plugins)
    assert host.errors == []
    return host
