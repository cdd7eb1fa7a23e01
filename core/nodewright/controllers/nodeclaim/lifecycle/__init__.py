"""NodeClaim lifecycle (Karpenter's ``pkg/controllers/nodeclaim/lifecycle``): the finalizer,
then launch, registration, initialization and liveness, the consistency check, and the
finalizer's work on deletion (termination deadline, node gone, instance gone, then the
NodeClaim goes). One module per step; ``controller`` runs them in order.

Every step is idempotent and driven by what the cluster and the provider say now, so a crash
at any point leaves state the next pass repairs: launch is keyed by the NodeClaim's identity,
and a NodeClaim deleted before its launch was recorded still finds and deletes its instance.
"""

from __future__ import annotations

from nodewright.controllers.nodeclaim.lifecycle.controller import NodeClaimLifecycle

__all__ = ["NodeClaimLifecycle"]
