"""The provider contract: every hook a nodewright provider may implement.

Each hook says when it is **called**, what it **returns**, what it **raises** (and what the
core does with an exception) and whether it must be **idempotent**; a test holds every hook
to that.

This module is the reference for provider authors; ``docs/plugins/hooks.md`` is generated
from it. Hooks come in two kinds:

* **Owner hooks** (most of them) are answered by exactly one provider: the one whose
  :class:`~nodewright.plugin.model.ProviderInfo` declares the NodeClass kind in question, or
  the provider that launched an instance. The core calls only that provider's implementation.
* **Contributing hooks** (``nodewright_node_labels``) are called on every plugin that
  implements them; results are merged, and one plugin failing does not stop the others.

Hooks are synchronous. Implementations may accept fewer arguments than the spec lists
(pluggy's opt-in arguments), so new arguments can be added without breaking providers.
Unless a hook says otherwise, an exception other than those in :mod:`nodewright.plugin.errors`
is reported with the provider's name and the call is retried later.

A provider is a module or object registered under the entry-point group
``nodewright.providers``::

    [project.entry-points."nodewright.providers"]
    mycloud = "nodewright_mycloud.plugin"
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import pluggy

from nodewright.plugin.names import NAME

if TYPE_CHECKING:
    from nodewright.api.karpenter import NodeClaim, NodeClass
    from nodewright.plugin.model import (
        Instance,
        InstanceType,
        LaunchRequest,
        LaunchResult,
        NodeClassReadiness,
        Offering,
        ProviderContext,
        ProviderInfo,
        RepairPolicy,
    )

hookspec = pluggy.HookspecMarker(NAME)

# -------------------------------------------------------------------------------------------
# Identity and set-up
# -------------------------------------------------------------------------------------------


@hookspec
def nodewright_provider_info() -> ProviderInfo:  # type: ignore[empty-body]
    """Declare the provider: its name, the NodeClass kinds it owns, its label domains.

    **Called** once per implementing plugin when the plugin host starts, before any other
    hook. Plugins that only contribute labels do not implement it.

    **Returns** a :class:`~nodewright.plugin.model.ProviderInfo`. Two providers declaring the
    same name or the same NodeClass kind are a
    :class:`~nodewright.plugin.errors.PluginConflictError` naming both.

    **Raises** nothing. An exception, or a value that is not a valid ``ProviderInfo`` (a
    name other than lower-case letters, digits and dashes; a NodeClass model whose kind or
    group differs from the declared one), marks the plugin broken with an error naming it;
    the other plugins still load.

    **Idempotent**: must return the same value on every call; must not do I/O.
    """


@hookspec
def nodewright_configure(context: ProviderContext) -> None:
    """Receive the cluster handle, the clock and the provider's own options.

    **Called** once, after ``nodewright_provider_info`` and before any owner hook. Keep
    what you need from ``context``; do no cloud I/O here (credentials may not be usable yet,
    and a failure here marks the provider broken).

    **Returns** nothing.

    **Raises** ``ValueError`` for an invalid option; the message must name the option. Any
    exception marks the provider broken (``nodewright_configure failed: ...``, naming it).

    **Idempotent**: not required: called once per process.
    """


@hookspec(firstresult=True)
def nodewright_configuration_problem() -> str | None:
    """Say why the provider cannot work as configured, before anything runs.

    **Called** by ``nodewright simulate`` after ``nodewright_configure``, on each provider
    whose NodeClasses the NodePools use, before the run starts: a problem stops the run with
    exit status 2 and this line, instead of a run where every launch fails. Check only what
    needs no cloud call: a required option, a region, credentials that can be found.

    **Returns** one line naming what to set (``no AWS region: set --provider-option
    aws.region=<region> or AWS_REGION``), never a secret; None when nothing is missing.
    Optional: a provider without it is assumed configured.

    **Raises** nothing: return the problem instead. An unexpected exception is reported as
    the provider's problem, naming it.

    **Idempotent**: yes; no cloud call.
    """


@hookspec(firstresult=True)
def nodewright_report_notes() -> Sequence[str] | None:
    """Say what a reader of a simulation's report must know about this provider's figures.

    **Called** by ``nodewright simulate`` when it builds the report, on each configured
    provider. For what the run cannot show by itself: prices taken from a bundled catalog
    and partly modelled, say, or a cloud answered by an offline stand-in.

    **Returns** lines (each a sentence, never a secret), or None or an empty sequence when
    there is nothing to say. Optional. Each line becomes a ``note:`` of the report, prefixed
    with the provider's name.

    **Raises** nothing; an exception becomes the note "could not say what its figures rest
    on" with the error.

    **Idempotent**: yes.
    """


# -------------------------------------------------------------------------------------------
# NodeClasses
# -------------------------------------------------------------------------------------------


@hookspec(firstresult=True)
def nodewright_node_class_status(node_class: NodeClass) -> NodeClassReadiness | None:
    """Resolve a NodeClass and say whether nodes can be launched from it.

    **Called** on the NodeClass's owner whenever the NodeClass changes and periodically
    (every few minutes) after that. The core writes the answer to the NodeClass's ``Ready``
    condition, and NodePools that reference a NodeClass that is not ready launch nothing.

    **Returns** a :class:`~nodewright.plugin.model.NodeClassReadiness`. Returning ``None``
    means "ready" for providers with nothing to resolve.

    **Raises** nothing on purpose: a NodeClass that cannot be used is a ``NodeClassReadiness``
    with ``ready=False``, a reason and a message. An unexpected exception makes the
    NodeClass not ready, with reason ``ProviderError`` and a message naming the provider.

    **Idempotent**: yes; it may call the cloud to resolve selectors.
    """


# -------------------------------------------------------------------------------------------
# Instance discovery and pricing
# -------------------------------------------------------------------------------------------


@hookspec(firstresult=True)
def nodewright_instance_types(node_class: NodeClass) -> Sequence[InstanceType] | None:
    """List every instance type that could be launched from ``node_class``.

    **Called** on the NodeClass's owner when the core refreshes its catalog (at start, when
    the NodeClass changes, and periodically). Results are cached by the core; do not cache
    for longer than your data stays true.

    **Returns** every instance type, including those with no available offering today (drift
    and consolidation need to know them). Each type's ``requirements`` must define the
    labels its nodes will carry (instance type, arch, os, the provider's own labels); the
    core adds zone and capacity type from the offerings. Offerings may be left empty here:
    ``nodewright_offerings`` supplies them. A type whose nodes offer Dynamic Resource
    Allocation devices (GPUs a DRA driver publishes) lists them in ``dynamic_resources``
    (:class:`~nodewright.plugin.DynamicResources`: the slices its drivers will publish, and
    devices that will share an attribute known only at run time), as Karpenter's
    ``InstanceType.DynamicResources``; with ``IGNORE_DRA_REQUESTS=false`` pods' claims are
    allocated from them before the node exists.

    **Raises** :class:`~nodewright.plugin.errors.TemporaryProviderError` when the cloud cannot
    be reached; the core keeps its previous catalog.

    **Idempotent**: yes; it may call the cloud.
    """


@hookspec(firstresult=True)
def nodewright_offerings(
    node_class: NodeClass, instance_types: Sequence[InstanceType]
) -> Mapping[str, Sequence[Offering]] | None:
    """Price the instance types: every zone and capacity type each can be bought in.

    **Called** on the NodeClass's owner right after ``nodewright_instance_types``, and when
    the core refreshes prices.

    **Returns** a mapping from instance-type name to its offerings. An offering without a
    known price should be returned with ``available=False``; a type missing from the mapping
    keeps the offerings it already carried. Offerings marked unavailable are kept, not
    launched. A ``reserved`` offering names its
    :class:`~nodewright.plugin.Reservation` with the number of instances it can still take
    *now* (running instances already subtracted); the solver hands out no more than that in
    one pass, and NodeClaims it places there are pinned to the reservation's label. Set
    ``price_modelled`` on an offering whose price is your own estimate rather than a quote
    (an offline catalog's modelled spot price, say): a simulation's what-if marks every
    figure that rests on it as approximate.

    **Raises** as ``nodewright_instance_types`` does.

    **Idempotent**: yes.
    """


# -------------------------------------------------------------------------------------------
# Instances
# -------------------------------------------------------------------------------------------


@hookspec(firstresult=True)
def nodewright_launch(request: LaunchRequest) -> Instance | LaunchResult | None:
    """Launch one instance for a NodeClaim.

    **Called** on the owner of the NodeClaim's NodeClass, once the NodeClaim carries the
    ``karpenter.sh/termination`` finalizer and has no ``Launched=True`` condition.

    **Returns** the :class:`~nodewright.plugin.model.Instance`, which may still be starting.
    Pick one of ``request.instance_types`` (they are ordered cheapest first) and one of its
    offerings. The instance's labels must include zone and capacity type.

    When the launch found offerings without capacity on the way (a fleet request that
    bought one type and reported insufficient capacity for others, or offerings of the
    request the provider already knows are exhausted and skipped), return a
    :class:`~nodewright.plugin.model.LaunchResult` carrying the instance and those
    ``(instance_type, zone, capacity_type)`` triples: the core stops offering them for
    ``unavailable_ttl`` (3 minutes by default), so no NodeClaim, a consolidation
    replacement included, is sized for them meanwhile. A provider that keeps its own record
    of exhausted offerings must still report them: the core caches each NodeClass's
    offerings for minutes and sees only what hooks tell it.

    **Raises** :class:`~nodewright.plugin.errors.InsufficientCapacityError` naming the
    offerings that had no capacity; :class:`~nodewright.plugin.errors.NodeClassNotReadyError`;
    :class:`~nodewright.plugin.errors.LaunchError` for a failure the user must fix.

    **Idempotent: required.** The core may call launch again for the same NodeClaim after a
    crash or a lost status write. Tag instances with ``request.idempotency_key`` (the
    NodeClaim's uid) and, when a live instance with that key already exists, return it
    instead of launching another: that is how a restarted nodewright adopts an instance whose
    launch it never recorded. The key survives process restarts, so keep it with the
    instance (a cloud tag), not in memory.
    """


@hookspec(firstresult=True)
def nodewright_get(provider_id: str) -> Instance | None:
    """Look up one instance by provider ID.

    **Called** on the provider that launched it, by the lifecycle and garbage-collection
    controllers.

    **Returns** the instance as it is now (its ``state`` says whether it is still starting or
    terminating).

    **Raises** :class:`~nodewright.plugin.errors.InstanceNotFoundError` when it does not exist,
    including once ``delete`` has finished with it. Garbage collection deletes a launched
    NodeClaim whose instance is missing from ``list`` only after ``get`` confirms this.

    **Idempotent**: yes; a read.
    """


@hookspec(firstresult=True)
def nodewright_list() -> Sequence[Instance] | None:
    """List every instance this provider runs for this cluster, in any state but terminated.

    **Called** on every provider by garbage collection (every two minutes), which deletes
    NodeClaims whose instance is gone and instances no NodeClaim owns: an instance whose
    provider ID no NodeClaim records, and whose ``node_claim`` names no NodeClaim still
    waiting to record its launch, is deleted once it is 30 seconds past its ``created_at``.

    **Returns** all instances, including those still starting, each with the name of the
    NodeClaim it was launched for and the time it was launched; terminated instances must not
    be listed.

    **Raises** :class:`~nodewright.plugin.errors.TemporaryProviderError` when the cloud cannot
    be reached: garbage collection leaves this provider's instances alone and asks again
    soon.

    **Idempotent**: yes; a read.
    """


@hookspec(firstresult=True)
def nodewright_delete(provider_id: str) -> None:
    """Start terminating an instance.

    **Called** on the provider that launched it, repeatedly (every few seconds) until it
    raises :class:`~nodewright.plugin.errors.InstanceNotFoundError`.

    **Returns** nothing while termination is under way.

    **Raises** :class:`~nodewright.plugin.errors.InstanceNotFoundError` once the instance is
    gone, and on every call after that. **Idempotent: required**: the core calls it from the
    Node's termination, the NodeClaim's finalizer and garbage collection, and again after a
    restart, so a call for an instance already terminating must not fail.
    """


# -------------------------------------------------------------------------------------------
# Labels and drift
# -------------------------------------------------------------------------------------------


@hookspec
def nodewright_node_labels(node_claim: NodeClaim, instance: Instance) -> Mapping[str, str] | None:
    """Contribute labels for the Node of a launched NodeClaim.

    **Called** on every plugin that implements it (providers and others), once per NodeClaim,
    when the Node registers (``instance`` freshly read through ``nodewright_get``). Results
    are merged into the Node's labels; two plugins giving different values for one key is an
    error naming both, and keys in a restricted domain are rejected unless the contributing
    provider owns that domain. A label the NodeClaim carries empty (a placeholder its launch
    could not fill) takes the value on the NodeClaim too.

    **Returns** a mapping of label keys to values, or ``None``.

    **Raises** :class:`~nodewright.plugin.errors.TemporaryProviderError` when a label it must
    set is not known yet (Karpenter's registration hooks): registration waits, the Node keeps
    its ``karpenter.sh/unregistered`` taint, the NodeClaim is ``Registered=Unknown`` (reason
    ``RegistrationHookPending``, the error's message prefixed with the plugin's name), and the
    hook is called again after the error's ``delay``. Any other exception, or a value that is
    not a mapping of strings to strings, is logged with the plugin's name and that plugin's
    labels are left out.

    **Idempotent**: yes; the core may ask again for the same NodeClaim.
    """


@hookspec(firstresult=True)
def nodewright_is_drifted(node_claim: NodeClaim, node_class: NodeClass) -> str | None:
    """Say whether an instance no longer matches its NodeClass (image, network, ...).

    **Called** on the owner periodically for every launched NodeClaim.

    **Returns** a drift reason (a short CamelCase word, e.g. ``AMIDrift``) or ``None``.

    **Raises** :class:`~nodewright.plugin.errors.TemporaryProviderError` when it cannot tell
    now: the last answer stands and the core asks again later.

    **Idempotent**: yes; asked again for each NodeClaim every few minutes.
    """


# -------------------------------------------------------------------------------------------
# Node health
# -------------------------------------------------------------------------------------------


@hookspec(firstresult=True)
def nodewright_repair_policies() -> Sequence[RepairPolicy] | None:
    """Say which node conditions mean a node is broken and must be replaced (node repair).

    **Called** on a provider by the node health controller, only when the ``NodeRepair``
    feature gate is on, for the Nodes whose NodeClaim's NodeClass that provider owns; the
    core asks once per provider and keeps the answer for the life of the process.

    **Returns** :class:`~nodewright.plugin.model.RepairPolicy` items: a Node whose condition
    of that type has had that status for longer than the toleration is replaced (its NodeClaim
    is deleted with the termination deadline set to now, so pods are not waited for), unless
    more than 20 % of its NodePool's Nodes (of the cluster's, for a NodeClaim without a
    NodePool), rounded up, match a policy, in which case nothing is repaired and a
    ``NodeRepairBlocked`` event says why. Declare the conditions the machine's own agents
    report (the kubelet's ``Ready``, a node monitoring agent's). ``None`` or an empty
    sequence: the provider's nodes are never repaired. Optional.

    **Raises** nothing; a provider that raises or returns something else is reported with its
    name and its nodes are not repaired.

    **Idempotent: required.** Must return the same policies on every call and do no I/O.
    """


# -------------------------------------------------------------------------------------------
# Background work
# -------------------------------------------------------------------------------------------


@hookspec
def nodewright_reconcile(now: datetime) -> timedelta | None:
    """Do the provider's own periodic work (refresh caches, read interruption queues,
    emulate kubelets).

    **Called** on every provider on every pass of the controller loop once the time it last
    asked for has come.

    **Returns** how long until it wants to be called again (``None``: the default period).
    A :class:`nodewright.clock.Poll` (``Poll(period, deadline)``) says the call only looks
    again: nothing it does changes by time alone before ``deadline`` (None: ever) unless the
    cluster changes or nodewright launches or deletes an instance, so a simulation in which
    nothing changes may skip it. Must not block for long; must not sleep.

    **Raises** nothing; an exception, or a value that is not a ``timedelta`` >= 0, is logged
    with the plugin's name and the plugin is called again after the default period (10
    seconds).

    **Idempotent**: must be safe to repeat: a pass cut short (a restart) runs again.
    """
