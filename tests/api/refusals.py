"""What loading a manifest refuses, as a list of errors however many there are."""

from __future__ import annotations

import pytest

from nodewright.api.manifests.errors import ManifestError, ManifestErrors
from nodewright.api.manifests.kinds import KindRegistry
from nodewright.api.manifests.loading import load_text


def refusals(manifest: str) -> list[ManifestError]:
    """The errors loading ``manifest`` (as ``m.yaml``) raises; it must raise."""
    with pytest.raises((ManifestError, ManifestErrors)) as raised:
        load_text(manifest, "m.yaml", KindRegistry())
    found = raised.value
    if isinstance(found, ManifestErrors):
        return found.errors
    assert isinstance(found, ManifestError)
    return [found]
