"""The files a load reads: directories searched recursively, each file read only when it is a
regular file within the limits, as UTF-8."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

from nodewright.api.excerpt import excerpt
from nodewright.api.manifests.documents import parse_document
from nodewright.api.manifests.errors import ManifestError
from nodewright.api.manifests.limits import LIMITS, Limits, file_too_big

#: File name endings read when a directory is loaded.
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


def manifest_files(
    paths: Sequence[Path], limits: Limits = LIMITS
) -> tuple[list[Path], list[ManifestError]]:
    """The files to read for ``paths`` (directories searched recursively, in name order),
    and the problems with the paths themselves."""
    files: list[Path] = []
    errors: list[ManifestError] = []
    for item in walk_paths(paths, limits):
        if isinstance(item, ManifestError):
            errors.append(item)
        else:
            files.append(item)
    return files, errors


def walk_paths(paths: Sequence[Path], limits: Limits) -> Iterator[Path | ManifestError]:
    """Each file to read, or the problem with a path, in the order the paths were given."""
    count = 0
    for path in paths:
        try:
            mode = path.stat().st_mode
        except ValueError:  # a NUL byte in the path
            yield ManifestError(excerpt(str(path)), "not a valid path")
            continue
        except OSError as error:
            if isinstance(error, FileNotFoundError):
                yield ManifestError(str(path), "no such file or directory")
            else:
                yield ManifestError(str(path), f"cannot be read: {error.strerror or error}")
            continue
        if stat.S_ISDIR(mode):
            found = sorted(
                p for p in path.rglob("*") if p.suffix in MANIFEST_SUFFIXES and p.is_file()
            )
            if not found:
                yield ManifestError(
                    str(path),
                    "directory has no manifest files "
                    f"(names ending {', '.join(MANIFEST_SUFFIXES)})",
                )
        elif stat.S_ISREG(mode):
            found = [path]
        else:
            yield ManifestError(str(path), "not a regular file or directory")
            continue
        for file in found:
            count += 1
            if count > limits.files:
                yield ManifestError(
                    str(path), f"refused: more than {limits.files} files in one load"
                )
                return
            yield file


def read_manifest(path: Path, limits: Limits = LIMITS) -> str:
    """The text of one manifest file; :class:`ManifestError` when it cannot be read.

    Only a regular file is read: a FIFO, a device (``/dev/zero``) or a socket is refused
    without waiting for or reading anything (it is opened non-blocking and looked at first).
    """
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except ValueError:  # a NUL byte in the path
        raise ManifestError(excerpt(str(path)), "not a valid path") from None
    except OSError as error:
        if isinstance(error, FileNotFoundError):
            raise ManifestError(str(path), "no such file or directory") from None
        raise ManifestError(str(path), f"cannot be read: {error.strerror or error}") from None
    with os.fdopen(descriptor, "rb") as stream:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise ManifestError(str(path), "not a regular file")
        if status.st_size > limits.file_bytes:
            raise ManifestError(str(path), file_too_big(status.st_size, limits.file_bytes))
        try:
            data = stream.read(limits.file_bytes + 1)
        except OSError as error:
            raise ManifestError(str(path), f"cannot be read: {error.strerror or error}") from None
    if len(data) > limits.file_bytes:  # it grew while being read
        raise ManifestError(str(path), file_too_big(len(data), limits.file_bytes))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise ManifestError(
            f"{path}:{line}", f"not UTF-8 text (byte 0x{data[error.start]:02x})"
        ) from None


def read_document(path: Path, limits: Limits = LIMITS) -> object:
    """The one YAML or JSON document, of any shape, of a file of user input that is not a
    manifest (a scenario, a scheduler configuration, a provider's catalog, a kubeconfig),
    read as manifests are: a regular file within ``limits``, parsed within them, every
    problem a :class:`ManifestError` naming the file and line. None for an empty file."""
    return parse_document(
        read_manifest(path, limits), str(path), limits, json=path.suffix == ".json"
    )
