"""Event archives: find the files behind the given paths and read them as located text rows.

A file holds JSON lines (one event, or one JSON array of events, per line) or a single JSON array
of events; gzip or not. Which of the two is decided by the file's first non-blank byte. Paths are
anything Hadoop's FileSystem reads (local paths, ``file:``, ``hdfs:``, ``s3a:`` ...), with globs and
folders; files whose name starts with ``_`` or ``.`` are skipped, as Spark does (``_SUCCESS``).

Each row is ``(file_index, line, item, text)``: the line number (1-based) in a JSON-lines file, or
the position of the event in a JSON-array file. The driver only lists files and sniffs their first
bytes; every file is read by an executor.
"""

from __future__ import annotations

import bz2
import gzip
import io
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from collections.abc import Iterator

    from pyspark import RDD
    from pyspark.sql import SparkSession

# Rows of the archive: (file_index, line or None, item or None, text).
ArchiveRow = tuple[int, int | None, int | None, str]

_TEXT_INPUT = "org.apache.hadoop.mapreduce.lib.input.TextInputFormat"
# One split per file: line numbers are then counted by the task that reads the whole file.
_ONE_SPLIT = {"mapreduce.input.fileinputformat.split.minsize": str(2**62)}
_BLANKS = b" \t\r\n\xef\xbb\xbf"  # with the bytes of a UTF-8 byte order mark
# Bytes read one by one, then at a time, while looking for a file's first non-blank byte.
_SNIFF_BYTES = 4096


class ArchiveNotFoundError(Exception):
    """A path given on the command line matches no file."""


class ArchiveUnreadableError(Exception):
    """An archive file that cannot be read to its end: a truncated or corrupt gzip or bz2 file, or
    a JSON-array file larger than a task reads whole (``ARRAY_FILE_MAX_BYTES``)."""


# A JSON-array file is read whole by one task and decoded at once (its events then take several
# times its size): past this, decompressed, it is refused, naming the file. A 1.5 MB .json.gz of
# 1.5 GB took the backfill to 3.2 GB of memory. JSON-lines files are read a line at a time.
ARRAY_FILE_MAX_BYTES = 256 * 1024 * 1024


def _too_large(path: str, limit: int) -> ArchiveUnreadableError:
    return ArchiveUnreadableError(
        f"{path} is a JSON array of more than {limit:,} bytes (decompressed), which is read whole: "
        "write it as JSON lines, one event a line, or split it. Nothing was written."
    )


@dataclass(frozen=True)
class ArchiveFile:
    index: int
    path: str
    size: int
    is_array: bool


def _hadoop(spark: SparkSession) -> tuple[Any, Any, Any]:
    """The JVM, Hadoop's configuration and its compression codec factory, as the driver sees them."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    return jvm, conf, jvm.org.apache.hadoop.io.compress.CompressionCodecFactory(conf)


def _open_decompressed(fs: Any, codecs: Any, path: Any) -> Any:
    """A Java input stream of the file's content, decompressed by the codec its name says (if any)."""
    stream = fs.open(path)
    codec = codecs.getCodec(path)
    return stream if codec is None else codec.createInputStream(stream)


def find_archive_files(spark: SparkSession, paths: list[str]) -> list[ArchiveFile]:
    """Expand paths (globs, folders) into files, in the order given, and sniff each file's format."""
    jvm, conf, codecs = _hadoop(spark)
    found: list[tuple[str, int, bool]] = []
    for given in paths:
        path = jvm.org.apache.hadoop.fs.Path(given)
        fs = path.getFileSystem(conf)
        statuses = fs.globStatus(path)
        if statuses is None or len(statuses) == 0:
            raise ArchiveNotFoundError(f"No file matches {given!r}.")
        for status in sorted(statuses, key=lambda s: s.getPath().toString()):
            for file_status in _walk(fs, status):
                file_path = file_status.getPath()
                is_array = _starts_with_array(fs, codecs, file_path)
                size = file_status.getLen()
                if is_array and codecs.getCodec(file_path) is None and size > ARRAY_FILE_MAX_BYTES:
                    raise _too_large(file_path.toString(), ARRAY_FILE_MAX_BYTES)
                found.append((file_path.toString(), size, is_array))
    return [ArchiveFile(i, p, size, is_array) for i, (p, size, is_array) in enumerate(found)]


def _walk(fs: Any, status: Any) -> Iterator[Any]:
    name = status.getPath().getName()
    if name.startswith(("_", ".")):
        return
    if not status.isDirectory():
        yield status
        return
    for child in sorted(fs.listStatus(status.getPath()), key=lambda s: s.getPath().getName()):
        yield from _walk(fs, child)


def _starts_with_array(fs: Any, codecs: Any, path: Any) -> bool:
    """Whether the first non-blank byte is ``[`` (a JSON array file) rather than ``{`` (JSON lines),
    however many blanks come first (an indented array may begin with thousands)."""
    stream = _open_decompressed(fs, codecs, path)
    try:
        # A byte at a time first: reading ahead would reach the end of a short file, and of a
        # truncated compressed one fail here instead of where the read names the file.
        for _ in range(_SNIFF_BYTES):
            byte: int = stream.read()  # java.io.InputStream.read: a byte, or -1 at the end
            if byte < 0:
                return False
            if byte not in _BLANKS:
                return byte == ord("[")
        # Then in blocks, past any number of blanks.
        while chunk := bytes(stream.readNBytes(_SNIFF_BYTES)):  # a Java byte[], copied once
            if rest := chunk.lstrip(_BLANKS):
                return rest[0] == ord("[")
        return False
    finally:
        stream.close()


def find_unreadable_archive(
    spark: SparkSession, files: list[ArchiveFile], array_limit: int = ARRAY_FILE_MAX_BYTES
) -> ArchiveUnreadableError | None:
    """The first compressed file that cannot be decompressed to its end, or is a JSON array larger
    than ``array_limit`` once decompressed, as an error naming it and why; None when there is none.
    Each is read through (in the JVM, one call a file): meant for after a read has failed, whose
    error does not say which file it was reading."""
    jvm, conf, codecs = _hadoop(spark)
    for f in files:
        path = jvm.org.apache.hadoop.fs.Path(f.path)
        if codecs.getCodec(path) is None:
            continue
        stream = _open_decompressed(path.getFileSystem(conf), codecs, path)
        try:
            size: int = stream.transferTo(jvm.java.io.OutputStream.nullOutputStream())
        except Exception as exc:  # py4j's error, carrying the Java one
            return ArchiveUnreadableError(
                f"{f.path} cannot be read to its end ({_java_cause(exc)}): a truncated or corrupt "
                "compressed file. Nothing was written; repair or remove it and run again."
            )
        finally:
            stream.close()
        if f.is_array and size > array_limit:
            return _too_large(f.path, array_limit)
    return None


def _java_cause(exc: Exception) -> str:
    """The innermost cause of a Java exception raised through py4j, else the exception itself."""
    cause = getattr(exc, "java_exception", None)
    if cause is None:
        return str(exc).splitlines()[0]
    while cause.getCause() is not None:
        cause = cause.getCause()
    return str(cause.toString())


def read_archive(spark: SparkSession, files: list[ArchiveFile]) -> RDD[ArchiveRow]:
    """All events of the files as located text rows; JSON-lines files are read by Hadoop's text input."""
    sc = spark.sparkContext
    parts: list[RDD[ArchiveRow]] = []
    for f in files:
        if f.is_array:
            rdd: RDD[tuple[str, bytes]] = sc.binaryFiles(f.path, minPartitions=1)
            parts.append(rdd.flatMap(partial(_file_array_rows, f.index)))
        else:
            lines: RDD[tuple[int, str]] = sc.newAPIHadoopFile(
                f.path,
                _TEXT_INPUT,
                "org.apache.hadoop.io.LongWritable",
                "org.apache.hadoop.io.Text",
                conf=_ONE_SPLIT,
            )
            parts.append(lines.mapPartitions(partial(_line_rows, f.index)))
    if not parts:
        return sc.emptyRDD()
    return sc.union(parts) if len(parts) > 1 else parts[0]


def _file_array_rows(file_index: int, file: tuple[str, bytes]) -> Iterator[ArchiveRow]:
    return _array_rows(file_index, file[0], file[1])


def _line_rows(file_index: int, lines: Iterator[tuple[int, str]]) -> Iterator[ArchiveRow]:
    for number, (_, text) in enumerate(lines, 1):
        yield file_index, number, None, text


def _array_rows(
    file_index: int, path: str, content: bytes, limit: int = ARRAY_FILE_MAX_BYTES
) -> Iterator[ArchiveRow]:
    """The events of a JSON-array file; a file that is not a JSON array is one row, rejected later.
    Decompressed at most to ``limit`` bytes: a larger file fails the task (the driver then names it,
    see ``find_unreadable_archive``)."""
    if path.endswith(".gz"):
        with gzip.GzipFile(fileobj=io.BytesIO(content)) as gz:
            content = gz.read(limit + 1)
    elif path.endswith(".bz2"):
        with bz2.BZ2File(io.BytesIO(content)) as bz:
            content = bz.read(limit + 1)
    if len(content) > limit:
        raise _too_large(path, limit)
    try:
        items = msgspec.json.decode(content)
    except (msgspec.DecodeError, RecursionError):
        # Let validation report it, with the decoder's message and a bounded copy of the text.
        yield file_index, None, None, content[:65536].decode("utf-8", "replace")
        return
    if not isinstance(items, list):
        yield file_index, None, None, content[:65536].decode("utf-8", "replace")
        return
    for position, item in enumerate(items):
        yield file_index, None, position, msgspec.json.encode(item).decode()
