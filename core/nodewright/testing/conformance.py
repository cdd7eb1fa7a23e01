"""The provider conformance suite: what every provider must do, tested through the host.

A provider package subclasses :class:`ProviderConformance` in its own tests and supplies two
fixtures; every test below then runs against that provider::

    # tests/test_conformance.py
    import pytest
    from nodewright.testing import ProviderConformance
    from nodewright_mycloud.plugin import MyCloudProvider, MyNodeClass

    class TestMyCloudConformance(ProviderConformance):
        @pytest.fixture
        def provider(self):
            return MyCloudProvider(api=FakeMyCloudAPI())

        @pytest.fixture
        def node_class(self):
            return MyNodeClass.model_validate({"metadata": {"name": "default"}, "spec": {}})

The suite builds its own :class:`~nodewright.plugin.host.PluginHost` holding only that
provider (no entry points), configures it with a :class:`~nodewright.clock.SimulatedClock`,
and talks to it only through the host, so it checks exactly what the core will rely on.
Providers that need a cluster (the KWOK provider creates Nodes) override ``cluster``;
``provider_options`` sets the provider's options.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any

import pytest

from nodewright.api.karpenter import (
    NodeClaim,
    NodeClaimSpec,
    NodeClass,
    NodeClassReference,
    NodeSelectorRequirementWithMinValues,
)
from nodewright.api.labels import (
    ARCH_LABEL,
    CAPACITY_TYPE_LABEL,
    CAPACITY_TYPES,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    OS_LABEL,
    ZONE_LABEL,
)
from nodewright.api.meta import ObjectMeta
from nodewright.clock import SimulatedClock
from nodewright.cluster.state import ClusterState
from nodewright.plugin import (
    Instance,
    InstanceNotFoundError,
    InstanceType,
    LaunchRequest,
    NodeClassReadiness,
    ProviderContext,
    ProviderError,
)
from nodewright.plugin.devices import dynamic_resources_problem
from nodewright.plugin.host import PluginHost
from nodewright.plugin.registry import LoadedProvider
from nodewright.scheduling.requirements import Requirement, Requirements
from nodewright.scheduling.resources import CPU, MEMORY, PODS

#: The key a provider under test is registered under.
PLUGIN_KEY = "provider-under-test"


# -- helpers for provider tests ------------------------------------------------------------


def make_node_claim(
    name: str,
    node_class: NodeClass,
    requirements: Iterable[tuple[str, str, Iterable[str]]] = (),
    *,
    node_pool: str = "default",
    uid: str | None = None,
) -> NodeClaim:
    """A NodeClaim for ``node_class`` with ``(key, operator, values)`` requirements."""
    return NodeClaim(
        metadata=ObjectMeta(
            name=name, uid=uid or f"uid-{name}", labels={NODEPOOL_LABEL: node_pool}
        ),
        spec=NodeClaimSpec(
            requirements=[
                NodeSelectorRequirementWithMinValues(key=key, operator=op, values=list(values))
                for key, op, values in requirements
            ],
            node_class_ref=NodeClassReference(
                group=type(node_class).group(), kind=node_class.kind, name=node_class.name
            ),
        ),
    )


def node_claim_requirements(node_claim: NodeClaim) -> Requirements:
    """A NodeClaim's requirements and labels as one set of requirements, as Karpenter reads them."""
    return Requirements(
        Requirement.of(r.key, r.operator, r.values, r.min_values)
        for r in node_claim.spec.requirements
    ).add(Requirements.from_labels(node_claim.metadata.labels))


def launch_request(
    host: PluginHost,
    node_claim: NodeClaim,
    node_class: NodeClass,
    instance_types: Iterable[InstanceType] | None = None,
) -> LaunchRequest:
    """The LaunchRequest the core would send for ``node_claim``.

    Options come from the provider's own catalog (or ``instance_types``): the types whose
    requirements and available offerings fit the NodeClaim, cheapest first, each with only
    those offerings.
    """
    requirements = node_claim_requirements(node_claim)
    catalog = host.instance_types(node_class) if instance_types is None else instance_types
    options: list[InstanceType] = []
    for instance_type in catalog:
        if requirements.intersects(instance_type.requirements):
            continue
        offerings = [
            o
            for o in instance_type.offerings
            if o.available and not requirements.intersects(o.requirements())
        ]
        if offerings:
            options.append(instance_type.with_offerings(offerings))
    options.sort(key=lambda t: (min(o.price for o in t.offerings), t.name))
    return LaunchRequest(node_claim, node_class, tuple(options), requirements)


class UnavailableCluster:
    """The default ``cluster`` fixture: providers that need a cluster override it."""

    def __init__(self) -> None:
        #: Empty: nothing is ever in this cluster, so no change feed ever fires.
        self.state = ClusterState()

    def _refuse(self, *args: object, **kwargs: object) -> Any:
        raise NotImplementedError(
            "this provider uses the cluster: override the `cluster` fixture of your "
            "ProviderConformance subclass"
        )

    get = list = create = update = update_status = delete = _refuse


# -- the suite -----------------------------------------------------------------------------


class ProviderConformance:
    """Base class of a provider's conformance tests; see the module docstring."""

    #: How many ``delete`` calls (with background work and time in between) termination
    #: may take before the suite gives up.
    delete_attempts = 60
    #: Simulated time between two ``delete`` calls.
    delete_interval = timedelta(seconds=5)

    # -- fixtures a provider supplies ------------------------------------------------------

    @pytest.fixture
    def provider(self) -> object:
        """The plugin object (a module or an instance) under test. Override this."""
        raise NotImplementedError("override the `provider` fixture")

    @pytest.fixture
    def node_class(self) -> NodeClass:
        """A NodeClass of the provider's kind that launches work. Override this."""
        raise NotImplementedError("override the `node_class` fixture")

    @pytest.fixture
    def cluster(self) -> Any:
        return UnavailableCluster()

    @pytest.fixture
    def provider_options(self) -> Mapping[str, str]:
        return {}

    @pytest.fixture
    def clock(self) -> SimulatedClock:
        return SimulatedClock()

    @pytest.fixture
    def host(
        self,
        provider: object,
        cluster: Any,
        clock: SimulatedClock,
        provider_options: Mapping[str, str],
    ) -> PluginHost:
        host = PluginHost.load(entry_points=False, plugins={PLUGIN_KEY: provider})
        host.configure(
            lambda _name: ProviderContext(
                cluster=cluster, clock=clock, options=dict(provider_options)
            )
        )
        assert not host.errors, "the provider did not load:\n" + "\n".join(
            str(e) for e in host.errors
        )
        return host

    @pytest.fixture
    def loaded(self, host: PluginHost) -> LoadedProvider:
        (entry,) = host.providers
        assert entry.info is not None, "the provider does not implement nodewright_provider_info"
        return entry

    # -- helpers ---------------------------------------------------------------------------

    def launch(
        self,
        host: PluginHost,
        node_class: NodeClass,
        name: str = "conformance-1",
        requirements: Iterable[tuple[str, str, Iterable[str]]] = (),
    ) -> tuple[LaunchRequest, Instance]:
        node_claim = make_node_claim(name, node_class, requirements)
        request = launch_request(host, node_claim, node_class)
        assert request.instance_types, "no instance type of the catalog fits a plain NodeClaim"
        return request, host.launch(request)

    def delete_until_gone(
        self, host: PluginHost, clock: SimulatedClock, provider: str, provider_id: str
    ) -> int:
        """Call delete until it raises InstanceNotFoundError; return the number of calls."""
        for attempt in range(1, self.delete_attempts + 1):
            try:
                host.delete(provider, provider_id)
            except InstanceNotFoundError:
                return attempt
            clock.advance(self.delete_interval)
            host.reconcile(clock.now())
        pytest.fail(
            f"delete({provider_id!r}) did not raise InstanceNotFoundError after "
            f"{self.delete_attempts} calls"
        )

    # -- identity --------------------------------------------------------------------------

    def test_provider_info_declares_name_and_node_class_kinds(
        self, loaded: LoadedProvider, node_class: NodeClass
    ) -> None:
        assert loaded.info is not None
        assert loaded.info.node_classes, "the provider declares no NodeClass kinds"
        declared = {(k.group, k.kind) for k in loaded.info.node_classes}
        assert (type(node_class).group(), node_class.kind) in declared

    def test_node_class_is_ready(self, host: PluginHost, node_class: NodeClass) -> None:
        readiness = host.node_class_status(node_class)
        assert isinstance(readiness, NodeClassReadiness)
        assert readiness.ready, f"{readiness.reason}: {readiness.message}"

    def test_repair_policies_are_well_formed(
        self, host: PluginHost, loaded: LoadedProvider
    ) -> None:
        # A malformed answer (a bad status, a negative toleration) raises PluginContractError.
        policies = host.repair_policies(loaded.name)
        conditions = [(p.condition_type, p.condition_status) for p in policies]
        assert len(set(conditions)) == len(conditions), f"a condition listed twice: {conditions}"

    # -- catalog ---------------------------------------------------------------------------

    def test_instance_types_are_listed(self, host: PluginHost, node_class: NodeClass) -> None:
        assert host.instance_types(node_class), "the catalog is empty"

    def test_instance_types_define_type_arch_and_os(
        self, host: PluginHost, node_class: NodeClass
    ) -> None:
        for instance_type in host.instance_types(node_class):
            for label in (INSTANCE_TYPE_LABEL, ARCH_LABEL, OS_LABEL):
                assert label in instance_type.requirements, (
                    f"{instance_type.name} does not define {label}"
                )
            assert instance_type.requirements[INSTANCE_TYPE_LABEL].has(instance_type.name)

    def test_instance_types_have_cpu_memory_and_pods(
        self, host: PluginHost, node_class: NodeClass
    ) -> None:
        for instance_type in host.instance_types(node_class):
            for resource in (CPU, MEMORY, PODS):
                assert instance_type.capacity.get(resource, 0) > 0, (
                    f"{instance_type.name} has no {resource} capacity"
                )

    def test_instance_type_devices_are_well_formed(
        self, host: PluginHost, node_class: NodeClass
    ) -> None:
        for instance_type in host.instance_types(node_class):
            problem = dynamic_resources_problem(instance_type.dynamic_resources)
            assert problem is None, f"{instance_type.name}: {problem}"

    def test_instance_types_have_priced_offerings(
        self, host: PluginHost, node_class: NodeClass
    ) -> None:
        for instance_type in host.instance_types(node_class):
            assert instance_type.offerings, f"{instance_type.name} has no offering"
            for offering in instance_type.offerings:
                assert offering.zone, f"an offering of {instance_type.name} has no zone"
                assert offering.capacity_type in CAPACITY_TYPES
                assert math.isfinite(offering.price)
                assert offering.price >= 0

    # -- instances -------------------------------------------------------------------------

    def test_launch_picks_a_requested_type_and_offering(
        self, host: PluginHost, node_class: NodeClass
    ) -> None:
        request, instance = self.launch(host, node_class)
        options = {t.name: t for t in request.instance_types}
        assert instance.instance_type in options, (
            f"launched {instance.instance_type}, which was not requested"
        )
        offered = {(o.zone, o.capacity_type) for o in options[instance.instance_type].offerings}
        assert (instance.zone, instance.capacity_type) in offered
        assert instance.provider_id
        assert instance.node_claim == request.node_claim.name
        assert instance.labels.get(ZONE_LABEL) == instance.zone
        assert instance.labels.get(CAPACITY_TYPE_LABEL) == instance.capacity_type

    def test_launch_honours_requirements(self, host: PluginHost, node_class: NodeClass) -> None:
        catalog = host.instance_types(node_class)
        zones = sorted({o.zone for t in catalog for o in t.offerings if o.available})
        wanted = zones[-1]
        _, instance = self.launch(host, node_class, requirements=[(ZONE_LABEL, "In", [wanted])])
        assert instance.zone == wanted

    def test_launch_is_idempotent(
        self, host: PluginHost, node_class: NodeClass, loaded: LoadedProvider
    ) -> None:
        request, first = self.launch(host, node_class)
        second = host.launch(request)
        assert second.provider_id == first.provider_id
        mine = [i for i in host.list_instances(loaded.name) if i.node_claim == first.node_claim]
        assert len(mine) == 1

    def test_launch_with_the_same_key_adopts_the_instance_from_a_fresh_request(
        self, host: PluginHost, node_class: NodeClass, loaded: LoadedProvider
    ) -> None:
        # A restarted core rebuilds the request from the stored NodeClaim: same uid, new objects.
        request, first = self.launch(host, node_class, name="conformance-adopt")
        again = make_node_claim("conformance-adopt", node_class, uid=request.idempotency_key)
        adopted = host.launch(launch_request(host, again, node_class))
        assert adopted.provider_id == first.provider_id
        launched = [i for i in host.list_instances(loaded.name) if i.node_claim == again.name]
        assert [i.provider_id for i in launched] == [first.provider_id]

    def test_list_reports_each_instance_with_its_node_claim_and_launch_time(
        self,
        host: PluginHost,
        node_class: NodeClass,
        loaded: LoadedProvider,
        clock: SimulatedClock,
    ) -> None:
        _, first = self.launch(host, node_class, name="conformance-list-1")
        _, second = self.launch(host, node_class, name="conformance-list-2")
        listed = {i.provider_id: i for i in host.list_instances(loaded.name)}
        for instance in (first, second):
            assert instance.provider_id in listed, f"{instance.provider_id} is not listed"
            found = listed[instance.provider_id]
            assert found.node_claim == instance.node_claim
            assert found.created_at.tzinfo is not None, "created_at must be timezone-aware"
            assert found.created_at <= clock.now(), "created_at lies in the future"

    def test_delete_may_be_repeated_until_and_after_the_instance_is_gone(
        self,
        host: PluginHost,
        node_class: NodeClass,
        loaded: LoadedProvider,
        clock: SimulatedClock,
    ) -> None:
        _, instance = self.launch(host, node_class, name="conformance-delete-again")
        try:
            host.delete(loaded.name, instance.provider_id)
            host.delete(loaded.name, instance.provider_id)  # while terminating: no error
        except InstanceNotFoundError:
            pass
        self.delete_until_gone(host, clock, loaded.name, instance.provider_id)
        for _ in range(2):
            with pytest.raises(InstanceNotFoundError):
                host.delete(loaded.name, instance.provider_id)
        with pytest.raises(InstanceNotFoundError):
            host.get(loaded.name, instance.provider_id)

    def test_get_finds_a_launched_instance(
        self, host: PluginHost, node_class: NodeClass, loaded: LoadedProvider
    ) -> None:
        _, instance = self.launch(host, node_class)
        found = host.get(loaded.name, instance.provider_id)
        assert found.provider_id == instance.provider_id
        assert found.instance_type == instance.instance_type

    def test_list_includes_a_launched_instance(
        self, host: PluginHost, node_class: NodeClass, loaded: LoadedProvider
    ) -> None:
        _, instance = self.launch(host, node_class)
        listed = {i.provider_id for i in host.list_instances(loaded.name)}
        assert instance.provider_id in listed

    def test_delete_ends_in_instance_not_found(
        self,
        host: PluginHost,
        node_class: NodeClass,
        loaded: LoadedProvider,
        clock: SimulatedClock,
    ) -> None:
        _, instance = self.launch(host, node_class)
        self.delete_until_gone(host, clock, loaded.name, instance.provider_id)
        with pytest.raises(InstanceNotFoundError):
            host.get(loaded.name, instance.provider_id)
        listed = {i.provider_id for i in host.list_instances(loaded.name)}
        assert instance.provider_id not in listed

    def test_delete_of_an_unknown_instance_raises_instance_not_found(
        self,
        host: PluginHost,
        node_class: NodeClass,
        loaded: LoadedProvider,
        clock: SimulatedClock,
    ) -> None:
        _, instance = self.launch(host, node_class)
        self.delete_until_gone(host, clock, loaded.name, instance.provider_id)
        # The id is well-formed for this provider, and now names nothing.
        with pytest.raises(InstanceNotFoundError):
            host.delete(loaded.name, instance.provider_id)

    def test_launch_with_no_options_is_a_provider_error(
        self, host: PluginHost, node_class: NodeClass
    ) -> None:
        node_claim = make_node_claim(
            "conformance-impossible",
            node_class,
            [(INSTANCE_TYPE_LABEL, "In", ["nodewright-conformance-no-such-type"])],
        )
        request = launch_request(host, node_claim, node_class)
        assert request.instance_types == ()
        with pytest.raises(ProviderError):
            host.launch(request)

    def test_launch_never_breaks_requirements(
        self, host: PluginHost, node_class: NodeClass
    ) -> None:
        node_claim = make_node_claim(
            "conformance-unsatisfiable",
            node_class,
            [(INSTANCE_TYPE_LABEL, "In", ["nodewright-conformance-no-such-type"])],
        )
        # Offer the whole catalog anyway: the provider must still honour the requirements.
        catalog = tuple(host.instance_types(node_class))
        request = launch_request(host, node_claim, node_class)
        request = LaunchRequest(node_claim, node_class, catalog, request.requirements)
        with pytest.raises(ProviderError):
            host.launch(request)
