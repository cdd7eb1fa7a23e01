"""What the caches keep of each object: only what nodewright reads.

Like a controller-runtime cache transform, every object a list or watch brings (and every
answer to a write of this process) is trimmed before it is parsed and stored:

* ``metadata.managedFields`` goes everywhere: the server owns it, nodewright never reads or
  writes it, and it is a third of a typical object;
* kinds nodewright only reads (pods, and the workloads whose pod templates it reads) keep only
  the fields their models declare: a pod's projected service-account volume, its container
  statuses, mounts, IPs and the rest go, and so does ``kubectl apply``'s copy of the object in
  the ``kubectl.kubernetes.io/last-applied-configuration`` annotation;
* short strings are interned, so the label keys and values, images and condition words that
  thousands of pods share are held once;
* the parsed models share one "fields set" per class (see :func:`nodewright.api.meta.compact`).

Kinds nodewright writes (Nodes, NodeClaims, NodePools, NodeClasses ...) keep every field but
``managedFields``: a write of them is a patch of what changed, and its fallback replaces the
object from the server's own copy (see :meth:`KubeCluster.update`), so nothing trimmed here is
ever written back as missing.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Mapping
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel

from nodewright.api.apps import DaemonSet, ReplicaSet, StatefulSet
from nodewright.api.core import Pod
from nodewright.api.meta import KubeObject

#: Kinds nodewright never writes with update(): they keep only what their models declare.
READ_ONLY: frozenset[type[KubeObject]] = frozenset({Pod, ReplicaSet, StatefulSet, DaemonSet})
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
#: Strings up to this long are interned (names, label values, images, condition words).
INTERN_UP_TO = 80

#: For a model class: wire key -> (the model class its value holds or None, whether the value
#: is a map of them).
_Shape = dict[str, tuple["type[BaseModel] | None", bool]]
_SHAPES: dict[type[BaseModel], _Shape] = {}


def _held(annotation: Any) -> tuple[type[BaseModel] | None, bool]:
    """The model class a field holds, through Optional, Annotated, list[...] and
    dict[str, ...], and whether it is a map of them."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _held(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        for arg in get_args(annotation):
            found = _held(arg)
            if found[0] is not None:
                return found
        return None, False
    if origin in (list, tuple):
        args = get_args(annotation)
        return (_held(args[0])[0] if args else None), False
    if origin is dict:
        args = get_args(annotation)
        return (_held(args[1])[0] if len(args) == 2 else None), True
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, False
    return None, False


def _shape(model: type[BaseModel]) -> _Shape:
    shape = _SHAPES.get(model)
    if shape is None:
        shape = {
            info.alias or name: _held(info.annotation) for name, info in model.model_fields.items()
        }
        _SHAPES[model] = shape
    return shape


def _prune(model: type[BaseModel], data: Any) -> Any:
    """A copy of ``data`` with only the keys ``model`` declares, recursively."""
    if isinstance(data, list):
        return [_prune(model, item) for item in data]
    if not isinstance(data, dict):
        return data
    shape = _shape(model)
    dropping = model.model_config.get("extra") == "allow"
    kept: dict[str, Any] = {}
    for key, value in data.items():
        found = shape.get(key)
        if found is None:
            if not dropping:
                kept[key] = value  # a strict model reports it as an error, as before
            continue
        child, is_map = found
        if child is None or not isinstance(value, (dict, list)):
            kept[key] = value
        elif is_map and isinstance(value, dict):
            kept[key] = {k: _prune(child, v) for k, v in value.items()}
        else:
            kept[key] = _prune(child, value)
    return kept


def _intern(value: Any) -> Any:
    if type(value) is str:
        return sys.intern(value) if len(value) <= INTERN_UP_TO else value
    if type(value) is dict:
        return {_intern(k): _intern(v) for k, v in value.items()}
    if type(value) is list:
        return [_intern(v) for v in value]
    return value


def slimmed(kind: type[KubeObject], data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` (an object as the server sent it) trimmed to what the cache keeps."""
    body = dict(data)
    meta = body.get("metadata")
    if isinstance(meta, dict):
        meta = dict(meta)
        meta.pop("managedFields", None)
        body["metadata"] = meta
        if kind in READ_ONLY:
            annotations = meta.get("annotations")
            if isinstance(annotations, dict) and LAST_APPLIED in annotations:
                meta["annotations"] = {k: v for k, v in annotations.items() if k != LAST_APPLIED}
    if kind in READ_ONLY:
        body = _prune(kind, body)
    interned: dict[str, Any] = _intern(body)
    return interned
