"""Reading what a provider's ``launch`` returned in a test that calls the provider directly.

``nodewright_launch`` answers with an :class:`~nodewright.plugin.Instance`, or with a
:class:`~nodewright.plugin.LaunchResult` when the launch also found offerings without capacity
(the core then stops offering them for a while). The plugin host unwraps both; a test that
calls its provider object directly gets either, and most such tests expect a plain launch::

    instance = launched_instance(provider.launch(request))
    assert instance.zone == "zone-a"
"""

from __future__ import annotations

from nodewright.plugin import Instance, LaunchResult


def launched_instance(result: Instance | LaunchResult) -> Instance:
    """The instance of a plain launch.

    Fails the test (``AssertionError`` naming the offerings) when the provider answered with a
    :class:`~nodewright.plugin.LaunchResult` instead, that is when it reported offerings without
    capacity that the test did not expect. A test that expects them asserts
    ``isinstance(result, LaunchResult)`` and reads ``result.instance`` itself.
    """
    if isinstance(result, LaunchResult):
        raise AssertionError(
            f"launch of {result.instance.node_claim!r} returned a LaunchResult reporting "
            f"offerings without capacity {list(result.unavailable_offerings)}, "
            "where a plain Instance was expected"
        )
    return result
