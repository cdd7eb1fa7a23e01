"""Orphan NIC garbage collection (Karpenter Azure's network-interface garbage collection):
NICs this cluster tagged that have no VM (a crash between creating the NIC and the VM, or a
NIC whose delete failed) are deleted once seen without a VM for ``azure.nic-gc-grace``."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from azure.core.exceptions import ResourceNotFoundError

from nodewright.plugin import NodeClassNotReadyError, TemporaryProviderError
from nodewright_azure import labels as L
from nodewright_azure.clients import AzureClients, azure_errors
from nodewright_azure.instance import InstanceProvider
from nodewright_azure.options import Settings

log = logging.getLogger(__name__)

#: How often orphan NICs are looked for.
NIC_GC_PERIOD = timedelta(minutes=5)


class OrphanNICCollector:
    """Finds NICs without a VM and deletes them after the grace period."""

    def __init__(
        self, settings: Settings, clients: AzureClients, instances: InstanceProvider
    ) -> None:
        self.settings = settings
        self.clients = clients
        #: Whose creates in flight are left alone and whose deletes are tracked.
        self.instances = instances
        #: NIC name -> when garbage collection first found it without a VM.
        self.orphans: dict[str, datetime] = {}
        self.last_run: datetime | None = None

    def reconcile(self, now: datetime) -> None:
        """Collect every :data:`NIC_GC_PERIOD`; a failure is logged and retried next period."""
        if self.last_run is not None and now - self.last_run < NIC_GC_PERIOD:
            return
        self.last_run = now
        try:
            self.collect(now)
        except (TemporaryProviderError, NodeClassNotReadyError) as error:
            log.warning("azure: orphan NIC garbage collection failed: %s", error)

    def collect(self, now: datetime) -> list[str]:
        """Delete NICs this cluster tagged that have no VM, once they have been seen without
        a VM for ``azure.nic-gc-grace``; NICs of launches in flight are left alone. Returns
        the NICs whose delete was started."""
        if self.settings.missing():
            return []
        compute, network = self.clients.clients()
        group = self.settings.resource_group
        with azure_errors("listing NICs and VMs for garbage collection"):
            vms = {(vm.name or "").lower() for vm in compute.virtual_machines.list(group)}
            nics = [
                nic
                for nic in network.network_interfaces.list(group)
                if (nic.tags or {}).get(L.TAG_CLUSTER) == self.settings.cluster_name
                and L.TAG_NODEPOOL in (nic.tags or {})
            ]
        orphans = {
            (nic.name or "").lower(): nic
            for nic in nics
            if (nic.name or "").lower() not in vms
            and nic.name not in self.instances.creates
            and (nic.provisioning_state or "") != "Deleting"
        }
        # Forget NICs that got a VM or went away meanwhile.
        self.orphans = {k: v for k, v in self.orphans.items() if k in orphans}
        grace = timedelta(seconds=self.settings.nic_gc_grace)
        started: list[str] = []
        for key, nic in sorted(orphans.items()):
            first_seen = self.orphans.setdefault(key, now)
            if now - first_seen < grace:
                continue
            name = nic.name or key
            try:
                with azure_errors(f"deleting orphan NIC {name}"):
                    self.instances.deletes[name] = network.network_interfaces.begin_delete(
                        group, name
                    )
            except (ResourceNotFoundError, TemporaryProviderError) as error:
                log.warning("azure: orphan NIC %s not deleted (retried later): %s", name, error)
                continue
            log.info("azure: deleting orphan NIC %s (no VM for %s)", name, now - first_seen)
            self.orphans.pop(key, None)
            started.append(name)
        return started
