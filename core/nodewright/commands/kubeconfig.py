"""The kubeconfig a command would hand the Kubernetes client, checked first as every file of
user input is: the client reads it without limits, and would wait forever on a FIFO."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from nodewright.api.manifests.errors import ManifestError
from nodewright.api.manifests.files import read_document
from nodewright.api.manifests.limits import LIMITS

#: A kubeconfig holds a few clusters, users and contexts (with certificates inline).
KUBECONFIG_LIMITS = replace(LIMITS, file_bytes=4 * 1024 * 1024, documents=1)


def kubeconfig_problem(kubeconfig: str | None) -> str | None:
    """Why the kubeconfig cannot be read (``kubeconfig``, else ``$KUBECONFIG``'s files, else
    ``~/.kube/config``), or None. A missing file is the client's to report (or the
    in-cluster service account is used)."""
    if kubeconfig:
        candidates = [kubeconfig]
    elif os.environ.get("KUBECONFIG"):
        candidates = [p for p in os.environ["KUBECONFIG"].split(os.pathsep) if p]
    else:
        candidates = [os.path.expanduser("~/.kube/config")]
    for candidate in candidates:
        path = Path(candidate)
        try:
            if not os.path.lexists(path):
                continue
            read_document(path, KUBECONFIG_LIMITS)
        except (ManifestError, ValueError) as error:
            return f"cannot read the kubeconfig: {error}"
    return None
