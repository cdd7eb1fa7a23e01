"""``nodewright.testing.launched_instance``: a provider test reading ``launch``'s answer gets the
instance of a plain launch, and a clear failure naming the offerings when the provider also
reported some without capacity."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from nodewright.plugin import Instance, LaunchResult
from nodewright.testing import launched_instance

INSTANCE = Instance(
    provider_id="fake://i-1",
    node_claim="default-abcde",
    node_pool="default",
    node_class="default",
    instance_type="m-2x",
    zone="zone-a",
    capacity_type="spot",
    price=0.1,
    created_at=datetime(2026, 1, 1, tzinfo=UTC),
)


def test_a_plain_launch_is_its_instance() -> None:
    assert launched_instance(INSTANCE) is INSTANCE


def test_a_launch_that_found_offerings_without_capacity_fails_naming_them() -> None:
    result = LaunchResult(INSTANCE, unavailable_offerings=(("m-4x", "zone-b", "spot"),))
    with pytest.raises(AssertionError) as failure:
        launched_instance(result)
    message = str(failure.value)
    assert "'default-abcde'" in message
    assert "('m-4x', 'zone-b', 'spot')" in message
    assert "a plain Instance was expected" in message
