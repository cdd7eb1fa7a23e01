"""KWOKNodeClass (``karpenter.kwok.sh/v1alpha1``): the NodeClass of the KWOK provider."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated, Any, ClassVar

from pydantic import Field, field_validator

from nodewright.plugin import NodeClass, Schema, StrictModel, node_class_crd, parse_duration
from nodewright_kwok.labels import GROUP

API_VERSION = f"{GROUP}/v1alpha1"

# The CRD's own pattern: whole seconds, minutes or hours, e.g. "30s" or "1m30s".
_DELAY_PATTERN = re.compile(r"^([0-9]+(s|m|h))+$")


class KWOKNodeClassSpec(StrictModel):
    #: How long a launched instance takes to register its Node; models instance start-up.
    #: Unset means immediately (as in Karpenter's KWOK provider).
    node_registration_delay: Annotated[str | None, Schema(pattern=_DELAY_PATTERN.pattern)] = Field(
        default=None, description="How long a launched instance takes to register its Node."
    )

    @field_validator("node_registration_delay")
    @classmethod
    def _check_delay(cls, value: str | None) -> str | None:
        if value is not None and not _DELAY_PATTERN.match(value):
            raise ValueError(
                f"nodeRegistrationDelay {value!r} must be whole units of s, m or h, e.g. '30s'"
            )
        return value

    def registration_delay(self) -> timedelta | None:
        """The delay as a timedelta, or None when the NodeClass does not set one."""
        if self.node_registration_delay is None:
            return None
        return parse_duration(self.node_registration_delay)


class KWOKNodeClass(NodeClass):
    API_VERSION: ClassVar[str] = API_VERSION
    KIND: ClassVar[str] = "KWOKNodeClass"

    spec: KWOKNodeClassSpec = Field(default_factory=KWOKNodeClassSpec)


def kwok_node_class_crd() -> dict[str, Any]:
    """The ``kwoknodeclasses.karpenter.kwok.sh`` CRD, as Karpenter's KWOK provider has it."""
    return node_class_crd(KWOKNodeClass)
