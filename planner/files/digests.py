"""The SHA-256 of a file's bytes, read in chunks: the one place a file is hashed.

A measured point's provenance (:mod:`planner.profiling`), the sources of the shipped profile library
(:mod:`planner.profile_library.build`), an instance sweep's manifest (:mod:`planner.bench.instance_sets`), a
frontier's inputs (:mod:`planner.sim.frontier`), a replay's identity (:mod:`planner.control.saved_replay`) and the
plan a launch folder was made from (:mod:`planner.launch.launcher`) all hash files here, so a file has one digest
everywhere and no caller holds a whole trace in memory to hash it. Errors are the ``OSError`` of opening or
reading the file: callers hash files they have already read or written.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Protocol

HASH_CHUNK = 1 << 20
"""Bytes read at a time (1 MiB)."""


class Digest(Protocol):
    """What :func:`update_with_file` feeds: a ``hashlib`` object."""

    def update(self, data: bytes, /) -> None:
        """Add ``data`` to what is hashed."""


def update_with_file(digest: Digest, path: Path) -> None:
    """Feed ``path``'s bytes into ``digest``, :data:`HASH_CHUNK` at a time (as ``digest.update(read_bytes())``)."""
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(HASH_CHUNK), b""):
            digest.update(chunk)


def file_sha256(path: Path) -> str:
    """The SHA-256 of ``path``'s bytes, in hex."""
    digest = hashlib.sha256()
    update_with_file(digest, path)
    return digest.hexdigest()
