"""``JsonlSink``: capture output as JSON lines, for inspection and tests.

One record per line, in send order. ``key`` and ``value`` are the JsonConverter output embedded
as JSON (not as strings); a tombstone has ``"value": null``; a key-less record ``"key": null``;
``headers`` is a list of ``{"key": name, "value": ...}`` with the header value embedded as JSON
when it is JSON (Debezium's ``__debezium.oldkey``/``newkey`` headers are), else as text::

    {"topic":"dbz.public.customers","key":{"schema":{...},"payload":{"id":2}},"value":null,"headers":[]}

The converter output is spliced into the line as is, so a line holds exactly the bytes a Kafka
consumer would read, and writing costs no parse and re-dump per record. ``flush`` fsyncs.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lakecdc.errors import RecordConversionError, SinkTransientError
from lakecdc.transport.sink import RecordSerializer

if TYPE_CHECKING:
    from lakecdc.events.envelope import ChangeRecord
    from lakecdc.events.schema import ConnectSchema

log = logging.getLogger(__name__)


def encode_header_value(value: bytes | str | None) -> bytes:
    """JSON for one header value: embedded JSON when it parses, a JSON string otherwise."""
    if value is None:
        return b"null"
    text = value.decode("utf-8", errors="replace") if isinstance(value, bytes) else value
    try:
        json.loads(text)
    except ValueError:
        return json.dumps(text, ensure_ascii=False).encode("utf-8")
    return text.encode("utf-8")


_NO_HEADERS_END = b',"headers":[]}\n'
#: distinct header lists whose JSON is kept (key-change headers differ per record: bounded)
_HEADER_CACHE_ENTRIES = 1024


def _headers_json(headers: list[tuple[str, bytes]] | None) -> bytes:
    if not headers:
        return b""
    return b",".join(
        b'{"key":' + json.dumps(name, ensure_ascii=False).encode("utf-8")
        + b',"value":' + encode_header_value(data) + b"}"
        for name, data in headers
    )


def topic_prefix(topic: str) -> bytes:
    """The constant start of every line for ``topic``: ``{"topic":"<topic>","key":``."""
    return b'{"topic":' + json.dumps(topic, ensure_ascii=False).encode("utf-8") + b',"key":'


def jsonl_line(topic: str, key: bytes | None, value: bytes | None,
               headers: list[tuple[str, bytes]] | None = None, prefix: bytes | None = None) -> bytes:
    """One JSON line (with its newline) from converter bytes; ``prefix`` is ``topic_prefix(topic)``."""
    return b"".join((
        prefix or topic_prefix(topic),
        b"null" if key is None else key,
        b',"value":',
        b"null" if value is None else value,
        b',"headers":[',
        _headers_json(headers),
        b"]}\n",
    ))


class JsonlSink:
    """Appends records to ``path`` (created with its directory); durable when ``flush`` returns.

    >>> sink = JsonlSink("/tmp/out.jsonl")          # doctest: +SKIP
    >>> sink.send(records); sink.flush(); sink.close()  # doctest: +SKIP
    """

    def __init__(self, path: str | os.PathLike[str], *, key_schemas_enable: bool = True,
                 value_schemas_enable: bool = True, append: bool = True) -> None:
        self.path = Path(path)
        self._serializer = RecordSerializer(key_schemas_enable, value_schemas_enable)
        created = not self.path.exists()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if append and not created:
                _drop_partial_last_line(self.path)
            # Binary: converter output is UTF-8 bytes already, written without a decode/encode pass.
            self._file = open(self.path, "ab" if append else "wb")  # noqa: SIM115
        except OSError as exc:
            raise SinkTransientError(f"cannot open JSON-lines sink '{self.path}': {exc.strerror}") from exc
        self._dir_needs_sync = created
        self._records = 0
        self._prefixes: dict[str, bytes] = {}
        self._header_ends: dict[tuple[tuple[str, bytes], ...], bytes] = {}

    @property
    def records_written(self) -> int:
        return self._records

    def send(self, records: list[ChangeRecord]) -> None:
        try:
            self._send(records)
        except RecordConversionError as exc:
            # Sink contract: the records before the one the converter failed on are accepted (they
            # encode again as they did: the encoders are deterministic)
            before = next((i for i, r in enumerate(records) if r is exc.record), 0)
            if before:
                self._send(records[:before])
            raise

    def _send(self, records: list[ChangeRecord]) -> None:
        if self._file.closed:
            raise SinkTransientError(f"JSON-lines sink '{self.path}' is closed")
        key_pieces, value_pieces = self._serializer.key_pieces, self._serializer.value_pieces
        prefixes, header_ends = self._prefixes, self._header_ends
        # Pieces handed to the OS as they are (os.writev): a record's schema text is its encoder's
        # shared bytes, so it is copied once, into the file, instead of into a line and a batch.
        pieces: list[bytes] = []
        append, extend = pieces.append, pieces.extend
        for r in records:
            prefix = prefixes.get(r.topic)
            if prefix is None:
                prefix = prefixes[r.topic] = topic_prefix(r.topic)
            append(prefix)
            extend(key_pieces(r))
            append(b',"value":')
            extend(value_pieces(r))
            if r.partition is not None:  # placed by a transform: written as Debezium's engine reports it
                append(b',"partition":' + str(r.partition).encode())
            headers = r.headers
            if not headers:
                append(_NO_HEADERS_END)
                continue
            # Capture attaches the same context headers (extended.headers.enabled) to every
            # record: their JSON is made once per distinct list, not parsed and dumped per record.
            try:
                held = tuple(headers)
                end = header_ends.get(held)
            except TypeError:  # a header given as a list, not a tuple: not cached
                held, end = None, None
            if end is None:
                end = b',"headers":[' + _headers_json(headers) + b"]}\n"
                if held is not None:
                    if len(header_ends) >= _HEADER_CACHE_ENTRIES:
                        header_ends.clear()
                    header_ends[held] = end
            append(end)
        try:
            _write_all(self._file.fileno(), pieces)
        except OSError as exc:
            raise SinkTransientError(f"cannot write JSON-lines sink '{self.path}': {exc.strerror}") from exc
        self._records += len(records)

    def flush(self) -> None:
        if self._file.closed:
            return
        try:
            self._file.flush()
            os.fsync(self._file.fileno())
            if self._dir_needs_sync:
                # A new file is durable only once its directory entry is.
                dir_fd = os.open(self.path.parent, os.O_RDONLY)
                try:
                    os.fsync(dir_fd)
                finally:
                    os.close(dir_fd)
                self._dir_needs_sync = False
        except OSError as exc:
            raise SinkTransientError(f"cannot fsync JSON-lines sink '{self.path}': {exc.strerror}") from exc

    def close(self) -> None:
        if not self._file.closed:
            self.flush()
            self._file.close()

    def __enter__(self) -> JsonlSink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_IOV_MAX = (os.sysconf("SC_IOV_MAX") if hasattr(os, "sysconf") else 0) or 1024


def _write_all(fd: int, pieces: list[bytes]) -> None:
    """Append ``pieces`` to ``fd`` (opened for appending) in order, completely."""
    for start in range(0, len(pieces), _IOV_MAX):
        chunk = pieces[start:start + _IOV_MAX]
        written = os.writev(fd, chunk)
        total = sum(map(len, chunk))
        if written < total:  # a short write (disk nearly full, a signal): finish the rest plainly
            rest = memoryview(b"".join(chunk))[written:]
            while rest:
                rest = rest[os.write(fd, rest):]


def _drop_partial_last_line(path: Path) -> None:
    """Cut a trailing line without newline, left by a crash in the middle of a write.

    Such a line was never flushed as part of a committed batch (``flush`` returns only after whole
    batches are on disk), so the capture re-sends it after restart; keeping it would leave a line
    that is not JSON in the middle of the file.
    """
    with open(path, "rb+") as file:
        size = file.seek(0, os.SEEK_END)
        if size == 0:
            return
        file.seek(size - 1)
        if file.read(1) == b"\n":
            return
        block = 1 << 16
        position = size
        while position > 0:
            start = max(0, position - block)
            file.seek(start)
            chunk = file.read(position - start)
            newline = chunk.rfind(b"\n")
            if newline >= 0:
                keep = start + newline + 1
                break
            position = start
        else:
            keep = 0
        log.warning("JSON-lines sink %s: dropping %d bytes of an incomplete last line (interrupted write)",
                    path, size - keep)
        file.truncate(keep)
        os.fsync(file.fileno())


def read_jsonl(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every record of a JSON-lines capture file, parsed (for tests and the conformance harness)."""
    with open(path, encoding="utf-8") as file:
        return [json.loads(line) for line in file if line.strip()]


def change_records_from_jsonl(path: str | os.PathLike[str]) -> list[ChangeRecord]:
    """Read a JSON-lines capture (ours or Debezium's, schemas enabled) back into ``ChangeRecord`` s.

    Used to replay a capture file into another sink. One ``ConnectSchema`` instance is shared by
    all records with the same schema, as capture does. Fields other than topic/key/value/headers
    (such as a ``seq`` counter) are ignored.
    """
    from lakecdc.events.envelope import ChangeRecord

    schemas: dict[str, ConnectSchema] = {}
    records = []
    for number, line in enumerate(read_jsonl(path), start=1):
        try:
            key_schema, key = _part(line.get("key"), schemas)
            value_schema, value = _part(line.get("value"), schemas)
        except ValueError as exc:
            raise ValueError(f"{path} record {number}: {exc}") from None
        headers = [
            (h["key"], json.dumps(h["value"], separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
            for h in line.get("headers") or ()
        ]
        records.append(ChangeRecord(line["topic"], key_schema, key, value_schema, value, headers))
    return records


def _part(converted: Any, schemas: dict[str, ConnectSchema]) -> tuple[ConnectSchema | None, Any]:
    from lakecdc.events.schema import ConnectSchema
    from lakecdc.events.values import json_to_connect

    if converted is None:
        return None, None
    if not isinstance(converted, dict) or set(converted) != {"schema", "payload"}:
        raise ValueError("expected JsonConverter output with schemas enabled ({'schema', 'payload'})")
    text = json.dumps(converted["schema"], sort_keys=True)
    schema = schemas.get(text)
    if schema is None:
        schema = schemas[text] = ConnectSchema.from_json(converted["schema"])
    return schema, json_to_connect(schema, converted["payload"])
