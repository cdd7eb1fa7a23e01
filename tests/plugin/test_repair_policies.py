"""The repair policies the first-party providers declare are Karpenter's (KWOK:
``kwok/cloudprovider``; AWS and Azure: each provider's ``cloudprovider.RepairPolicies``)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from nodewright.plugin.host import PluginHost

MINUTES = timedelta(minutes=1)


@pytest.mark.parametrize(
    ("provider", "expected"),
    [
        ("kwok", [("Ready", "False", 10 * MINUTES), ("Ready", "Unknown", 10 * MINUTES)]),
        (
            "aws",
            [
                ("Ready", "False", 30 * MINUTES),
                ("Ready", "Unknown", 30 * MINUTES),
                ("AcceleratedHardwareReady", "False", 10 * MINUTES),
                ("StorageReady", "False", 30 * MINUTES),
                ("NetworkingReady", "False", 30 * MINUTES),
                ("KernelReady", "False", 30 * MINUTES),
                ("ContainerRuntimeReady", "False", 30 * MINUTES),
            ],
        ),
        (
            "azure",
            [
                ("Ready", "False", 10 * MINUTES),
                ("Ready", "Unknown", 10 * MINUTES),
                ("kubernetes.azure.com/NodeHealthy", "False", timedelta(0)),
                ("PreemptionScheduled", "True", timedelta(0)),
            ],
        ),
    ],
)
def test_first_party_providers_declare_karpenters_repair_policies(
    provider: str, expected: list[tuple[str, str, timedelta]]
) -> None:
    host = PluginHost.load(only=[provider])
    assert host.errors == []
    policies = host.repair_policies(provider)
    assert [(p.condition_type, p.condition_status, p.toleration) for p in policies] == expected
