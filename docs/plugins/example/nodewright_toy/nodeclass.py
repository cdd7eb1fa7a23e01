"""The ToyNodeClass: what a NodePool's toy machines are launched with, and its CRD."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field, field_validator

from nodewright.plugin import NodeClass, Rule, StrictModel, node_class_crd

GROUP = "toy.nodewright.dev"

#: A toy zone: "toy-", a region number and a letter.
ToyZone = Annotated[str, Field(pattern=r"^toy-[0-9]+[a-z]$", max_length=16)]


class ToyNodeClassSpec(StrictModel):
    zones: Annotated[
        list[ToyZone],
        Rule("self.all(z, self.exists_one(y, y == z))", "zones must not repeat"),
    ] = Field(default_factory=lambda: ["toy-1a", "toy-1b"], min_length=1, max_length=4)

    @field_validator("zones")
    @classmethod
    def _no_repeats(cls, zones: list[str]) -> list[str]:
        if len(set(zones)) != len(zones):
            raise ValueError("zones must not repeat")
        return zones


class ToyNodeClass(NodeClass):
    API_VERSION: ClassVar[str] = f"{GROUP}/v1"
    KIND: ClassVar[str] = "ToyNodeClass"

    spec: ToyNodeClassSpec = Field(default_factory=ToyNodeClassSpec)


def toy_node_class_crd() -> dict[str, Any]:
    """The ``toynodeclasses.toy.nodewright.dev`` CRD, generated from the model."""
    return node_class_crd(ToyNodeClass)
