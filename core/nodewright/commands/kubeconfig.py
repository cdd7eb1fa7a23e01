"""The kubeconfig a command would hand the Kubernetes client, checked first as every file of
user input is: the client reads it without limits, and would wait forever on a FIFO."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from nodewright.api.excerpt import excerpt
from nodewright.api.manifests.documents import line_of
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
            document = read_document(path, KUBECONFIG_LIMITS)
        except (ManifestError, ValueError) as error:
            return f"cannot read the kubeconfig: {error}"
        shape = _shape_problem(document)
        if shape is not None:
            location, problem = shape
            line = line_of(document, location) if isinstance(document, dict) else None
            field = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in location)
            where = f"{path}:{line}" if line else str(path)
            return (
                f"cannot read the kubeconfig: {where}: {field.lstrip('.') or 'the file'}: {problem}"
            )
    return None


#: The lists of named entries a kubeconfig holds, each entry's settings under the singular.
_NAMED_LISTS = {"clusters": "cluster", "users": "user", "contexts": "context"}
#: Settings the client reads as strings.
_STRINGS = {
    "cluster": ("server", "certificate-authority", "certificate-authority-data", "proxy-url"),
    "user": ("token", "tokenFile", "client-certificate", "client-key", "username", "password"),
    "context": ("cluster", "user", "namespace"),
}
#: Settings the client reads as mappings.
_MAPPINGS = {"cluster": (), "user": ("exec", "auth-provider"), "context": ()}


def _shape_problem(document: object) -> tuple[Sequence[object], str] | None:
    """Where and how a kubeconfig is not shaped as one (the client would fail on it with a
    bare KeyError or TypeError), or None. An empty file is the client's to report."""
    if document is None:
        return None
    if not isinstance(document, dict):
        return (), f"must be a mapping, got {excerpt(document)}"
    current = document.get("current-context")
    if current is not None and not isinstance(current, str):
        return ("current-context",), f"must be a string, got {excerpt(current)}"
    for key in ("preferences",):
        if document.get(key) is not None and not isinstance(document[key], dict):
            return (key,), f"must be a mapping, got {excerpt(document[key])}"
    for plural, singular in _NAMED_LISTS.items():
        entries = document.get(plural)
        if entries is None:
            continue
        if not isinstance(entries, list):
            return (plural,), f"must be a list, got {excerpt(entries)}"
        for index, entry in enumerate(entries):
            if not isinstance(entry, dict):
                return (plural, index), f"must be a mapping, got {excerpt(entry)}"
            if not isinstance(entry.get("name"), str) or not entry["name"]:
                return (plural, index, "name"), "required, a non-empty string"
            settings = entry.get(singular)
            if settings is None:
                continue
            if not isinstance(settings, dict):
                return (plural, index, singular), f"must be a mapping, got {excerpt(settings)}"
            for key in _STRINGS[singular]:
                value = settings.get(key)
                if value is not None and not isinstance(value, str):
                    return (plural, index, singular, key), f"must be a string, got {excerpt(value)}"
            for key in _MAPPINGS[singular]:
                value = settings.get(key)
                if value is not None and not isinstance(value, dict):
                    where = (plural, index, singular, key)
                    return where, f"must be a mapping, got {excerpt(value)}"
    return None
