"""On-demand capacity reservations an EC2NodeClass selects (Karpenter's capacityreservation
provider): active ones only, counted fresh on every call."""

from __future__ import annotations

import logging
from typing import Any

import botocore.exceptions

from nodewright.plugin import ProviderError
from nodewright_aws.clients import AWSClients, aws_errors
from nodewright_aws.nodeclass import EC2NodeClass

log = logging.getLogger(__name__)


def capacity_reservations(clients: AWSClients, node_class: EC2NodeClass) -> list[dict[str, Any]]:
    """Active reservations matching the class's terms, as the status lists them; [] when
    they cannot be read (logged)."""
    terms = node_class.spec.capacity_reservation_selector_terms
    if not terms:
        return []
    found: dict[str, dict[str, Any]] = {}
    ec2 = clients.ec2
    queries: list[dict[str, Any]] = []
    ids = [t.id for t in terms if t.id]
    if ids:
        queries.append({"CapacityReservationIds": ids})
    for term in terms:
        if term.id:
            continue
        filters = [{"Name": f"tag:{k}", "Values": [v]} for k, v in sorted(term.tags.items())]
        if term.owner_id:
            filters.append({"Name": "owner-id", "Values": [term.owner_id]})
        if term.instance_match_criteria:
            filters.append(
                {"Name": "instance-match-criteria", "Values": [term.instance_match_criteria]}
            )
        queries.append({"Filters": filters})
    try:
        with aws_errors("describing capacity reservations"):
            for query in queries:
                response = ec2.describe_capacity_reservations(**query)
                for r in response.get("CapacityReservations", []):
                    if r.get("State") != "active":
                        continue
                    found[r["CapacityReservationId"]] = {
                        "id": r["CapacityReservationId"],
                        "availabilityZone": r.get("AvailabilityZone", ""),
                        "instanceType": r.get("InstanceType", ""),
                        "instanceMatchCriteria": r.get("InstanceMatchCriteria", ""),
                        "ownerID": r.get("OwnerId", ""),
                        "reservationType": "default",
                        "interruptible": bool(r.get("Interruptible", False)),
                        "state": "active",
                        "availableInstanceCount": r.get("AvailableInstanceCount", 0),
                    }
    except (ProviderError, botocore.exceptions.ClientError) as error:
        log.warning("capacity reservations not read: %s", error)
        return []
    return [found[k] for k in sorted(found)]
