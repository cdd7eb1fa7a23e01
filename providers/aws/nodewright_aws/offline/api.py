"""How the offline stand-in speaks the AWS APIs: botocore ``ClientError`` with EC2's codes,
tag lists, request filters, lookups by ID that fail as EC2 does, one-page paginators."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import botocore.exceptions


def hex_id(prefix: str, seed: str) -> str:
    """A stable EC2-style ID (``subnet-…``, ``ami-…``) for ``seed``."""
    return f"{prefix}-{hashlib.sha256(seed.encode()).hexdigest()[:17]}"


def client_error(operation: str, code: str, message: str) -> botocore.exceptions.ClientError:
    return botocore.exceptions.ClientError({"Error": {"Code": code, "Message": message}}, operation)


def dry_run_passed(operation: str) -> botocore.exceptions.ClientError:
    """EC2's answer to an allowed dry run."""
    return client_error(
        operation, "DryRunOperation", "Request would have succeeded, but DryRun flag is set."
    )


def tags_of(items: Sequence[Mapping[str, str]]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in items}


def tag_list(tags: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in sorted(tags.items())]


def by_keys(
    records: Mapping[str, dict[str, Any]],
    keys: Sequence[str],
    operation: str,
    code: str,
    message: str,
) -> list[dict[str, Any]]:
    """The records of ``keys``, in order; EC2's NotFound error (``message`` formatted with
    the first missing key) when any is missing, as a describe by IDs or names answers."""
    missing = [key for key in keys if key not in records]
    if missing:
        raise client_error(operation, code, message.format(missing[0]))
    return [records[key] for key in keys]


def filter_values(filters: Sequence[Mapping[str, Any]], name: str) -> list[str] | None:
    values: list[str] | None = None
    for item in filters:
        if item["Name"] == name:
            values = (values or []) + list(item["Values"])
    return values


def tags_match(tags: Mapping[str, str], filters: Sequence[Mapping[str, Any]]) -> bool:
    for item in filters:
        name = item["Name"]
        if name == "tag-key" and not any(k in tags for k in item["Values"]):
            return False
        if name.startswith("tag:") and tags.get(name[4:]) not in item["Values"]:
            return False
    return True


class Paginator:
    """One page holding the whole answer (the provider merges pages anyway)."""

    def __init__(self, call: Callable[..., dict[str, Any]]) -> None:
        self._call = call

    def paginate(self, **kwargs: Any) -> Iterator[dict[str, Any]]:
        kwargs.pop("PaginationConfig", None)
        yield self._call(**kwargs)


class Service:
    def get_paginator(self, operation: str) -> Paginator:
        return Paginator(getattr(self, operation))

    def close(self) -> None:
        """Nothing to close: no connection."""
