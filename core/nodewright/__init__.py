"""nodewright: a Kubernetes node autoscaler, drop-in compatible with Karpenter.

The public surface for provider authors is :mod:`nodewright.plugin` (the hook contract, the
data model and the errors), :mod:`nodewright.api` (manifest models) and
:mod:`nodewright.testing` (a recording fake provider and the conformance suite). Everything
else is internal and may change between releases.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("nodewright")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"

__all__ = ["__version__"]
