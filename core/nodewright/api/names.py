"""The syntax Kubernetes gives names: object names (DNS subdomains), DNS labels, qualified
names (label, annotation and taint keys) and label values.

Each check returns the problems in plain words; empty means valid.
"""

from __future__ import annotations

import re

from nodewright.api.excerpt import excerpt

_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_LABEL_PATTERN = re.compile(_DNS_LABEL)
_DNS_SUBDOMAIN = re.compile(rf"{_DNS_LABEL}(\.{_DNS_LABEL})*")
_QUALIFIED_NAME_PART = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")

_DNS_SUBDOMAIN_MAX = 253
_NAME_PART_MAX = 63
LABEL_VALUE_MAX = 63


def dns_subdomain_problems(value: str) -> list[str]:
    """Problems with ``value`` as an object name (RFC 1123 subdomain)."""
    if not value:
        return ["must not be empty"]
    problems = []
    if len(value) > _DNS_SUBDOMAIN_MAX:
        problems.append(f"must be at most {_DNS_SUBDOMAIN_MAX} characters, got {len(value)}")
    if not _DNS_SUBDOMAIN.fullmatch(value):
        problems.append(
            f"must consist of lower case letters, digits, '-' and '.', and start and end "
            f"with a letter or digit, got {excerpt(value)}"
        )
    return problems


def dns_label_problems(value: str) -> list[str]:
    """Problems with ``value`` as a DNS label (RFC 1123): a namespace or container name."""
    if not value:
        return ["must not be empty"]
    problems = []
    if len(value) > _NAME_PART_MAX:
        problems.append(f"must be at most {_NAME_PART_MAX} characters, got {len(value)}")
    if not _DNS_LABEL_PATTERN.fullmatch(value):
        problems.append(
            "must consist of lower case letters, digits and '-', and start and end with a "
            f"letter or digit, got {excerpt(value)}"
        )
    return problems


def qualified_name_problems(value: str) -> list[str]:
    """Problems with ``value`` as a label or taint key (``[prefix/]name``)."""
    if not value:
        return ["must not be empty"]
    prefix, slash, name = value.rpartition("/")
    problems = []
    if slash and not prefix:
        problems.append(f"prefix before '/' must not be empty, got {excerpt(value)}")
    if prefix and prefix.count("/") == 0:
        problems.extend(f"prefix {p}" for p in dns_subdomain_problems(prefix))
    elif prefix:
        problems.append(f"may contain at most one '/', got {excerpt(value)}")
    if not name:
        problems.append(f"name part must not be empty, got {excerpt(value)}")
    else:
        if len(name) > _NAME_PART_MAX:
            problems.append(
                f"name part must be at most {_NAME_PART_MAX} characters, got {len(name)} "
                f"in {excerpt(value)}"
            )
        if not _QUALIFIED_NAME_PART.fullmatch(name):
            problems.append(
                "name part must consist of letters, digits, '-', '_' and '.', and start and "
                f"end with a letter or digit, got {excerpt(value)}"
            )
    return problems


def label_value_problems(value: str) -> list[str]:
    """Problems with ``value`` as a label value (empty is allowed)."""
    problems = []
    if len(value) > LABEL_VALUE_MAX:
        problems.append(
            f"must be at most {LABEL_VALUE_MAX} characters, got {len(value)} in {excerpt(value)}"
        )
    if not _LABEL_VALUE.fullmatch(value):
        problems.append(
            "must be empty or consist of letters, digits, '-', '_' and '.', and start and end "
            f"with a letter or digit, got {excerpt(value)}"
        )
    return problems


#: apimachinery's words for what a qualified name's name part must be.
_NAME_PART_WORDS = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
#: apimachinery's words for what an RFC 1123 subdomain must be.
_SUBDOMAIN_WORDS = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def qualified_name_server_problems(value: str) -> list[str]:
    """Problems with ``value`` as a qualified name (``[prefix/]name``), in the API server's
    words (apimachinery's ``IsQualifiedName``), as it reports a resource name."""
    parts = value.split("/")
    if len(parts) > 2:
        return [
            f"a valid label key {_NAME_PART_WORDS} with an optional DNS subdomain prefix and '/' "
            "(e.g. 'example.com/MyName')"
        ]
    problems = []
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            problems.append("prefix part must be non-empty")
        else:
            if len(prefix.encode()) > _DNS_SUBDOMAIN_MAX:
                problems.append(f"prefix part must be no more than {_DNS_SUBDOMAIN_MAX} bytes")
            if not _DNS_SUBDOMAIN.fullmatch(prefix):
                problems.append(f"prefix part {_SUBDOMAIN_WORDS}")
    if not name:
        problems.append("name part must be non-empty")
    elif len(name.encode()) > _NAME_PART_MAX:
        problems.append(f"name part must be no more than {_NAME_PART_MAX} bytes")
    if not _QUALIFIED_NAME_PART.fullmatch(name):
        problems.append(f"name part {_NAME_PART_WORDS}")
    return problems
