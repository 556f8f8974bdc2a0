"""Raw event payloads compressed with zstd and a dictionary trained on the database's own events.

An event's JSON is mostly what every event of its integration repeats: keys, facet schema URLs, the
producer, the same datasets and properties. Compressed one at a time (as PostgreSQL compresses a
value), each payload pays for all of it again; a dictionary holds it once, and a payload compressed
against it keeps only what is its own (a 4.3 KB Spark event: 1,178 bytes with PostgreSQL's LZ4,
about 670 with zstd alone, about 150 with zstd and a dictionary).

The dictionaries live in the database (``payload_dictionaries``), each under an id that every frame
made with it carries, so that any process can read any payload: a frame names its dictionary, which
is loaded on first sight. Ingest writes with the newest dictionary, which each of its transactions
reads as it starts (``use_newest``). Until a database has stored enough events to train one,
payloads are compressed without a dictionary. Payloads stored before compression
(``raw_events.payload``, text) are read as they are.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import zstandard

from headwater.db.pool import database_key
from headwater.db.queries import QUERIES

if TYPE_CHECKING:
    import asyncpg

# Events stored without a dictionary before one is trained, and how many of the latest events (and
# bytes of them) a dictionary is trained on: enough to see what an integration's events share (zstd
# asks for about a hundred times the dictionary's size), little enough to train in a tenth of a
# second and a few MiB, beside ingest.
TRAIN_AFTER = 500
TRAIN_SAMPLES = 1_000
TRAIN_BYTES = 4 * 2**20
DICTIONARY_BYTES = 32 * 1024
# A new dictionary, from the latest events, once the newest is this old: what the integrations send
# changes (a new one, new facets), and the first dictionary only saw the first few hundred events.
RETRAIN_AFTER = dt.timedelta(days=7)
LEVEL = 3


log = logging.getLogger(__name__)


class PayloadError(Exception):
    """A stored payload that cannot be read back (its dictionary is missing)."""


@dataclass
class _Codec:
    """What one process knows of one database's dictionaries."""

    # id -> (created_at, dictionary): the time tells a dictionary from another one given the same id
    # by a database dropped and made again under the same name.
    dictionaries: dict[int, tuple[dt.datetime, zstandard.ZstdCompressionDict]] = field(
        default_factory=dict
    )
    # Id 0: frames made without a dictionary.
    decompressors: dict[int, zstandard.ZstdDecompressor] = field(
        default_factory=lambda: {0: zstandard.ZstdDecompressor()}
    )
    compressor: zstandard.ZstdCompressor = field(default_factory=lambda: _compressor(None))
    current: int | None = None
    stored_without: int = 0
    training: bool = False

    def learn(self, dictionary_id: int, created_at: dt.datetime, data: bytes) -> None:
        d = zstandard.ZstdCompressionDict(data)
        self.dictionaries[dictionary_id] = (created_at, d)
        self.decompressors[dictionary_id] = zstandard.ZstdDecompressor(dict_data=d)

    def write_with(self, dictionary_id: int | None) -> None:
        self.current = dictionary_id
        self.compressor = _compressor(
            None if dictionary_id is None else self.dictionaries[dictionary_id][1]
        )


def _compressor(dictionary: zstandard.ZstdCompressionDict | None) -> zstandard.ZstdCompressor:
    # The checksum (4 bytes a frame) makes a frame read with the wrong dictionary an error, never
    # other text.
    return zstandard.ZstdCompressor(
        level=LEVEL, dict_data=dictionary, write_content_size=True, write_checksum=True
    )


_codecs: dict[tuple[object, str], _Codec] = {}


def _codec(conn: asyncpg.Connection) -> _Codec:
    key = database_key(conn)
    codec = _codecs.get(key)
    if codec is None:
        codec = _codecs[key] = _Codec()
    return codec


async def _load(conn: asyncpg.Connection, codec: _Codec, ids: set[int]) -> None:
    rows = await conn.fetch(QUERIES["fetch_payload_dictionaries"], sorted(ids))
    for r in rows:
        codec.learn(r["dictionary_id"], r["created_at"], r["dictionary"])


async def use_newest(
    conn: asyncpg.Connection, newest: int | None, created_at: dt.datetime | None
) -> None:
    """Write with the database's newest dictionary (``newest``, made at ``created_at``; None: there is
    none yet), as the ingest transaction just read them: what its payloads are compressed against
    is always a dictionary the database holds."""
    codec = _codec(conn)
    if newest is not None and codec.dictionaries.get(newest, (None,))[0] != created_at:
        await _load(conn, codec, {newest})
    if newest != codec.current:
        codec.write_with(newest)


def compress(conn: asyncpg.Connection, payloads: Sequence[str]) -> list[bytes]:
    """Payloads as zstd frames, against the dictionary ``use_newest`` set (if any)."""
    codec = _codec(conn)
    if codec.current is None:
        codec.stored_without += len(payloads)
    compress_one = codec.compressor.compress
    return [compress_one(p.encode()) for p in payloads]


async def decompress(conn: asyncpg.Connection, frames: Sequence[bytes | None]) -> list[str | None]:
    """Frames back to the payloads' text (None stays None), loading the dictionaries they name."""
    return [None if b is None else b.decode() for b in await _decompressed(conn, frames)]


async def _decompressed(conn: asyncpg.Connection, frames: Sequence[bytes | None]) -> list[bytes | None]:
    codec = _codec(conn)
    named = [None if f is None else zstandard.get_frame_parameters(f).dict_id for f in frames]
    wanted = {n for n in named if n is not None}
    if wanted - codec.decompressors.keys():
        await _load(conn, codec, wanted - codec.decompressors.keys())
    missing = wanted - codec.decompressors.keys()
    if missing:
        raise PayloadError(f"payload dictionaries missing from payload_dictionaries: {sorted(missing)}")
    out: list[bytes | None] = []
    for f, n in zip(frames, named, strict=True):
        if f is None or n is None:
            out.append(None)
            continue
        try:
            out.append(codec.decompressors[n].decompress(f))
        except zstandard.ZstdError:
            if n == 0:
                raise
            # A dictionary known under this id that is not this database's: read it again.
            await _load(conn, codec, {n})
            out.append(codec.decompressors[n].decompress(f))
    return out


async def payload_texts(
    conn: asyncpg.Connection,
    rows: Sequence[asyncpg.Record],
    text: str = "payload",
    frame: str = "payload_zstd",
) -> list[str]:
    """The payload of each raw_events row read with both of its columns (one of them is set)."""
    frames = await decompress(conn, [r[frame] for r in rows])
    return [r[text] if f is None else f for r, f in zip(rows, frames, strict=True)]


async def _latest_payloads(conn: asyncpg.Connection) -> list[bytes | bytearray | memoryview] | None:
    """The latest stored payloads, up to ``TRAIN_SAMPLES`` of them and ``TRAIN_BYTES`` in all: what
    a dictionary is trained on, kept small (a consumer under a backlog must stay within its memory).
    None while fewer than ``TRAIN_AFTER`` are stored."""
    rows = await conn.fetch(QUERIES["fetch_latest_payloads"], TRAIN_SAMPLES)
    if len(rows) < TRAIN_AFTER:
        return None
    frames = [r["payload_zstd"] for r in rows]
    texts = [r["payload"] for r in rows]
    del rows
    samples: list[bytes | bytearray | memoryview] = []
    total = 0
    for start in range(0, len(frames), 100):
        chunk = await _decompressed(conn, frames[start : start + 100])
        for text, payload in zip(texts[start : start + 100], chunk, strict=True):
            sample = text.encode() if payload is None else payload
            total += len(sample)
            if total > TRAIN_BYTES:
                return samples
            samples.append(sample)
    return samples


async def dictionary_due(conn: asyncpg.Connection, older_than: dt.timedelta = RETRAIN_AFTER) -> bool:
    """Whether the database has no dictionary yet, or its newest is older than ``older_than``."""
    return bool(
        await conn.fetchval(QUERIES["payload_dictionary_due"], dt.datetime.now(dt.UTC) - older_than)
    )


def wants_dictionary(conn: asyncpg.Connection) -> bool:
    """Whether this process has stored enough payloads without a dictionary to train one now."""
    codec = _codec(conn)
    return codec.current is None and codec.stored_without >= TRAIN_AFTER and not codec.training


async def train_dictionary(conn: asyncpg.Connection, force: bool = False) -> int | None:
    """Train a dictionary on the latest stored payloads and make it the newest; its id, or None
    when another process is training one, there is one already (unless ``force``) or there are
    fewer than ``TRAIN_AFTER`` payloads to learn from."""
    codec = _codec(conn)
    codec.training = True
    # Declined or failed, it is tried again after as many payloads more.
    codec.stored_without = 0
    try:
        if not await conn.fetchval(QUERIES["try_lock_payload_training"]):
            return None
        try:
            newest = await conn.fetchval(QUERIES["fetch_newest_payload_dictionary_id"])
            if newest is not None and not force:
                return None
            samples = await _latest_payloads(conn)
            if samples is None:
                return None
            dictionary_id = int(await conn.fetchval(QUERIES["next_payload_dictionary_id"]))
            # A tenth of a second of CPU: off the event loop.
            trained = await asyncio.to_thread(
                zstandard.train_dictionary, DICTIONARY_BYTES, samples, dict_id=dictionary_id, level=LEVEL
            )
            await conn.execute(
                QUERIES["insert_payload_dictionary"],
                dictionary_id,
                trained.as_bytes(),
                len(samples),
            )
            log.info("raw event payloads: dictionary %d trained", dictionary_id)
            # Ingest writes with it from its next transaction (``use_newest``).
            return dictionary_id
        finally:
            await conn.execute(QUERIES["unlock_payload_training"])
    finally:
        codec.training = False


async def train_dictionary_beside_ingest(conn: asyncpg.Connection) -> None:
    """``train_dictionary`` from an ingest path: a failure is logged, not raised (payloads stay
    compressed without a dictionary, ingest goes on, and training is tried again after as many
    payloads more)."""
    try:
        await train_dictionary(conn)
    except Exception:
        log.exception("training a payload dictionary failed; payloads stay compressed without one")
