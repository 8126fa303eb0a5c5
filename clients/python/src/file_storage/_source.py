"""Upload sources (a path, a binary file object, bytes) read in slices, and the multipart body streamed by hand."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Union
from urllib.parse import quote

from ._http import Body

#: What ``files.upload`` takes: a path, a binary file object open for reading, or bytes.
UploadSource = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, IO[bytes]]
#: Called as ``on_progress(loaded, total)`` while an upload sends the file's bytes; ``total`` is None when unknown.
ProgressCallback = Callable[[int, Union[int, None]], None]

SLICE_BYTES = 64 * 1024


@dataclass
class OpenedSource:
    """A source as the uploaders use it: its size when known, and its bytes [start, end) as chunks."""

    name: str | None
    size: int | None
    #: A path, bytes or a seekable file can be read again (for a retry or a tus chunk); a pipe only once.
    replayable: bool
    read: Callable[[int, "int | None"], Iterator[bytes]]


def open_source(source: UploadSource) -> OpenedSource:
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        size = os.stat(path).st_size

        def read_path(start: int, end: int | None) -> Iterator[bytes]:
            with open(path, "rb") as file:
                file.seek(start)
                yield from _read_slices(file, (size if end is None else end) - start)

        return OpenedSource(name=os.path.basename(path), size=size, replayable=True, read=read_path)
    if isinstance(source, (bytes, bytearray, memoryview)):
        view = memoryview(source).cast("B")

        def read_bytes(start: int, end: int | None) -> Iterator[bytes]:
            stop = len(view) if end is None else end
            for offset in range(start, stop, SLICE_BYTES):
                yield bytes(view[offset : min(stop, offset + SLICE_BYTES)])

        return OpenedSource(name=None, size=len(view), replayable=True, read=read_bytes)
    if hasattr(source, "read"):
        file = source
        raw_name = getattr(file, "name", None)
        name = os.path.basename(raw_name) if isinstance(raw_name, str) else None
        if _seekable(file):
            base = file.tell()
            size = file.seek(0, os.SEEK_END) - base
            file.seek(base)

            def read_seekable(start: int, end: int | None) -> Iterator[bytes]:
                file.seek(base + start)
                yield from _read_slices(file, (size if end is None else end) - start)

            return OpenedSource(name=name, size=size, replayable=True, read=read_seekable)
        used = False

        def read_once(start: int, end: int | None) -> Iterator[bytes]:
            nonlocal used
            if used or start != 0 or end is not None:
                raise ValueError("A file object that cannot seek can be read only once, from its start.")
            used = True
            while chunk := file.read(SLICE_BYTES):
                yield chunk

        return OpenedSource(name=name, size=None, replayable=False, read=read_once)
    raise TypeError("upload() takes a path, a binary file object open for reading, or bytes.")


def _seekable(file: IO[bytes]) -> bool:
    try:
        return bool(file.seekable())
    except (AttributeError, OSError, ValueError):
        return False


def _read_slices(file: IO[bytes], length: int) -> Iterator[bytes]:
    left = length
    while left > 0:
        chunk = file.read(min(SLICE_BYTES, left))
        if not chunk:
            raise ValueError(f"The source ended {left} bytes early.")
        left -= len(chunk)
        yield chunk


def multipart_body(source: OpenedSource, filename: str, fields: dict[str, str | None], on_progress: ProgressCallback | None = None) -> Body:
    """
    A multipart/form-data body produced as it is sent: the fields, then the file's bytes as they are read, then the
    closing boundary. The file is never held whole in memory; with a known size the Content-Length is exact.
    """
    boundary = f"----FileStoragePython{uuid.uuid4().hex}"
    head = b""
    for field, value in fields.items():
        if value is not None:
            head += f'--{boundary}\r\nContent-Disposition: form-data; name="{field}"\r\n\r\n{value}\r\n'.encode()
    head += (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{_quoted(filename)}"; '
        f"filename*=UTF-8''{quote(filename, safe='')}\r\nContent-Type: application/octet-stream\r\n\r\n"
    ).encode()
    tail = f"\r\n--{boundary}--\r\n".encode()

    def chunks() -> Iterator[bytes]:
        loaded = 0
        yield head
        if on_progress:
            on_progress(loaded, source.size)
        for chunk in source.read(0, None):
            yield chunk
            loaded += len(chunk)
            if on_progress:
                on_progress(loaded, source.size)
        yield tail

    return Body(
        open=chunks,
        length=None if source.size is None else len(head) + source.size + len(tail),
        content_type=f"multipart/form-data; boundary={boundary}",
        replayable=source.replayable,
    )


def _quoted(filename: str) -> str:
    return "".join(quote(c) if c in '"\\\r\n' else c for c in filename)
