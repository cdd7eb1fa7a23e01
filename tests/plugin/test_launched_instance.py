"""``nodewright.testing.launched_instance``: a provider test reading ``launch``'s answer gets the
instance of a plain launch, and a clear failure naming the offerings when the provider also
reported some without capacity."""

from __future__ import annotations

import pytest

from nodewright.plugin import Instance, LaunchResult
from nodewright.testing import launched_instance
from tests.plugin.hook_hosts import fake_host, launched


@pytest.fixture
def instance() -> Instance:
    return launched(fake_host(), name="default-abcde")


def test_a_plain_launch_is_its_instance(instance: Instance) -> None:
    assert launched_instance(instance) is instance


def test_a_launch_that_found_offerings_without_capacity_fails_naming_them(
    instance: Instance,
) -> None:
    result = LaunchResult(instance, unavailable_offerings=(("m-4x", "zone-b", "spot"),))
    with pytest.raises(AssertionError) as failure:
        launched_instance(result)
    message = str(failure.value)
    assert "'default-abcde'" in message
    assert "('m-4x', 'zone-b', 'spot')" in message
    assert "a plain Instance was expected" in message
