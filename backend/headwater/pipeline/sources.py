"""Event archives: find the files behind the given paths and read them as located text rows.

A file holds JSON lines (one event, or one JSON array of events, per line) or a single JSON array
of events; gzip or not. Which of the two is decided by the file's first non-blank byte. Paths are
anything Hadoop's FileSystem reads (local paths, ``file:``, ``hdfs:``, ``s3a:`` ...), with globs and
folders; files whose name starts with ``_`` or ``.`` are skipped, as Spark does (``_SUCCESS``).

Each row is ``(file_index, line, item, text)``: the line number (1-based) in a JSON-lines file, or
the position of the event in a JSON-array file. The driver only lists files and sniffs their first
bytes; every file is read by an executor.

A line longer than an event may be is not read (``LongLines``): Hadoop's reader skips it, holding
no more of it than the limit, and the driver then counts the lines where it may have skipped some.
"""

from __future__ import annotations

import bz2
import gzip
import io
from bisect import bisect_left
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec

if TYPE_CHECKING:
    from collections.abc import Iterator

    from pyspark import RDD, Accumulator, SparkContext
    from pyspark.sql import SparkSession

# Rows of the archive: (file_index, line or None, item or None, text).
ArchiveRow = tuple[int, int | None, int | None, str]

# The old API's text input, read through sc.hadoopRDD (see read_archive).
_TEXT_INPUT = "org.apache.hadoop.mapred.TextInputFormat"
# One split per file: line numbers are then counted by the task that reads the whole file.
_ONE_SPLIT = {"mapreduce.input.fileinputformat.split.minsize": str(2**62)}
# Hadoop's line reader skips a line that takes this many bytes or more with its line break, holding
# no more of it than that, and says so only in its log.
_READER_MAX_LINE = "mapreduce.input.linerecordreader.line.maxlength"
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
    is_compressed: bool


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
    found: list[tuple[str, int, bool, bool]] = []
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
                is_compressed = codecs.getCodec(file_path) is not None
                size = file_status.getLen()
                if is_array and not is_compressed and size > ARRAY_FILE_MAX_BYTES:
                    raise _too_large(file_path.toString(), ARRAY_FILE_MAX_BYTES)
                found.append((file_path.toString(), size, is_array, is_compressed))
    return [ArchiveFile(i, *file) for i, file in enumerate(found)]


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


def read_archive(spark: SparkSession, files: list[ArchiveFile], max_line_bytes: int) -> ArchiveRead:
    """All events of the files as located text rows; JSON-lines files are read by Hadoop's text
    input, a line of more than ``max_line_bytes`` left out (see ``ArchiveRead.long_lines``)."""
    sc = spark.sparkContext
    jvm, conf, _ = _hadoop(spark)
    skipped = _set_union(sc)
    too_long = _set_union(sc)
    parts: list[RDD[ArchiveRow]] = []
    for f in files:
        if f.is_array:
            rdd: RDD[tuple[str, bytes]] = sc.binaryFiles(f.path, minPartitions=1)
            parts.append(rdd.flatMap(partial(_file_array_rows, f.index)))
        else:
            # The old API's reader gives each line its own offset; the new one gives a line after
            # skipped ones the offset of the first of them. And sc.hadoopFile would read the path
            # with the context's configuration, leaving this one out: hence hadoopRDD, told the path.
            path = jvm.org.apache.hadoop.fs.Path(f.path)
            qualified = path.getFileSystem(conf).makeQualified(path).toString()
            read_conf = {
                **_ONE_SPLIT,
                _READER_MAX_LINE: str(_reader_max_line(max_line_bytes)),
                # A list of paths: commas in one are escaped.
                "mapreduce.input.fileinputformat.inputdir": str(
                    jvm.org.apache.hadoop.util.StringUtils.escapeString(qualified)
                ),
            }
            lines: RDD[tuple[int, str]] = sc.hadoopRDD(
                _TEXT_INPUT,
                "org.apache.hadoop.io.LongWritable",
                "org.apache.hadoop.io.Text",
                conf=read_conf,
            )
            end = None if f.is_compressed else f.size
            parts.append(
                lines.mapPartitions(partial(_line_rows, f.index, end, max_line_bytes, skipped, too_long))
            )
    if not parts:
        rows: RDD[ArchiveRow] = sc.emptyRDD()
    else:
        rows = sc.union(parts) if len(parts) > 1 else parts[0]
    return ArchiveRead(rows, spark, files, max_line_bytes, skipped, too_long)


def _reader_max_line(max_line_bytes: int) -> int:
    """Hadoop's limit counts the line break (\\r\\n: 2 bytes) and keeps a line only below it: a line of
    ``max_line_bytes`` is kept, one of 1 or 2 bytes more may be (``_line_rows`` leaves it out)."""
    return max_line_bytes + 3


class _SkippedSpan(NamedTuple):
    """Bytes of a JSON-lines file in which the reader may have skipped lines: from the start of the
    line it numbered ``line`` (0: the start of the file, no line read there) to ``end`` (the start of
    the next line read; None: the end of the file)."""

    file_index: int
    line: int
    start: int
    end: int | None


def _set_union(sc: SparkContext) -> Accumulator[set[Any]]:
    """An accumulator of sets merged by union: a task run again (a retry, a lost cached block)
    adds nothing twice."""
    from pyspark.accumulators import AccumulatorParam

    class SetUnion(AccumulatorParam[set[Any]]):
        def zero(self, _value: set[Any]) -> set[Any]:
            return set()

        def addInPlace(self, value1: set[Any], value2: set[Any]) -> set[Any]:  # noqa: N802
            value1 |= value2
            return value1

    return sc.accumulator(set(), SetUnion())


@dataclass(frozen=True)
class LongLines:
    """Lines of JSON-lines files longer than an event may be, which were not read, and the numbers
    of the lines read in those files: the reader numbered them as if the skipped lines were not."""

    max_line_bytes: int
    # (file_index, line), in the files' own numbering.
    lines: list[tuple[int, int]]
    # Per file: the reader's numbers of the lines after which it skipped some, ascending, and how
    # many it had skipped by then.
    skipped_after: dict[int, tuple[list[int], list[int]]]

    @property
    def reason(self) -> str:
        return (
            f"longer than the {self.max_line_bytes:,} bytes an event may have "
            "(HEADWATER_MAX_BODY_BYTES): the line is not read"
        )

    def line_number(self, file_index: int, line: int) -> int:
        """The number in its file of the line the reader numbered ``line``."""
        if file_index not in self.skipped_after:
            return line
        after, skipped = self.skipped_after[file_index]
        spans_before = bisect_left(after, line)
        return line + skipped[spans_before - 1] if spans_before else line


@dataclass(frozen=True)
class ArchiveRead:
    """The rows of ``read_archive``, and what its readers found too long to read."""

    rows: RDD[ArchiveRow]
    spark: SparkSession
    files: list[ArchiveFile]
    max_line_bytes: int
    skipped: Accumulator[set[_SkippedSpan]]
    too_long: Accumulator[set[tuple[int, int]]]

    def long_lines(self) -> LongLines:
        """The lines longer than ``max_line_bytes``, once the rows have been read through. The
        driver counts the lines of each span where the reader may have skipped some: in the JVM, a
        block at a time, as far as the span goes (a compressed file's last span goes to its end,
        which only reading the file tells: such a file is read through)."""
        jvm, conf, codecs = _hadoop(self.spark)
        reader_max_line = _reader_max_line(self.max_line_bytes)
        spans_by_file: dict[int, list[_SkippedSpan]] = {}
        for span in self.skipped.value:
            spans_by_file.setdefault(span.file_index, []).append(span)
        skipped_lines: list[tuple[int, int]] = []
        skipped_after: dict[int, tuple[list[int], list[int]]] = {}
        for file_index, spans in spans_by_file.items():
            path = jvm.org.apache.hadoop.fs.Path(self.files[file_index].path)
            after: list[int] = []
            total: list[int] = []
            for span, span_lines, span_bytes in _count_lines(jvm, conf, codecs, path, spans):
                # A line read is shorter than the reader's limit and a skipped one is not: a shorter
                # span skipped nothing (a file of a byte order mark alone, which the reader takes
                # for an empty one, has a line to count).
                if span_bytes < reader_max_line:
                    continue
                # The span begins with the line read there, if any; the others were skipped.
                skipped = span_lines - (1 if span.line else 0)
                if not skipped:
                    continue
                skipped_before = total[-1] if total else 0
                first = span.line + skipped_before + 1
                skipped_lines += [(file_index, first + i) for i in range(skipped)]
                after.append(span.line)
                total.append(skipped_before + skipped)
            if after:
                skipped_after[file_index] = (after, total)
        found = LongLines(self.max_line_bytes, skipped_lines, skipped_after)
        # The lines read whole, numbered by the reader: renumbered as the rows are.
        read_whole = [(i, found.line_number(i, line)) for i, line in self.too_long.value]
        return replace(found, lines=sorted(skipped_lines + read_whole))


def _count_lines(
    jvm: Any, conf: Any, codecs: Any, path: Any, spans: list[_SkippedSpan]
) -> Iterator[tuple[_SkippedSpan, int, int]]:
    """Each span, in the file's order, with its number of lines (split where Hadoop's reader splits
    them: at \\n, \\r or \\r\\n; an unterminated last one counts) and of bytes. Counted in the JVM, a
    block at a time: a compressed file from its start, an uncompressed one from each span's."""
    fs = path.getFileSystem(conf)
    codec = codecs.getCodec(path)
    stream = fs.open(path)
    latin1 = jvm.java.nio.charset.StandardCharsets.ISO_8859_1  # a char a byte

    def reader_of(source: Any) -> Any:
        return jvm.java.io.LineNumberReader(jvm.java.io.InputStreamReader(source, latin1), 1 << 16)

    try:
        reader: Any = None if codec is None else reader_of(codec.createInputStream(stream))
        position = 0
        for span in sorted(spans, key=lambda s: s.start):
            if codec is None:
                stream.seek(span.start)
                reader = reader_of(stream)
            else:
                reader.skip(span.start - position)
            lines_before = reader.getLineNumber()
            length = 2**63 - 1 if span.end is None else span.end - span.start
            span_bytes: int = reader.skip(length)
            position = span.start + span_bytes
            yield span, reader.getLineNumber() - lines_before, span_bytes
    finally:
        stream.close()


def _file_array_rows(file_index: int, file: tuple[str, bytes]) -> Iterator[ArchiveRow]:
    return _array_rows(file_index, file[0], file[1])


def _line_rows(
    file_index: int,
    end: int | None,
    max_line_bytes: int,
    skipped: Accumulator[set[_SkippedSpan]],
    too_long: Accumulator[set[tuple[int, int]]],
    lines: Iterator[tuple[int, str]],
) -> Iterator[ArchiveRow]:
    """The rows of a JSON-lines file, numbered as read: a line the reader skipped is not counted.
    Where it may have skipped some is told by the offsets of the lines it gave (each line read is
    shorter than its limit, each skipped one is not), or of the file's end when known: those spans
    go to ``skipped``, for the driver to count their lines. A line read but longer than
    ``max_line_bytes`` goes to ``too_long``."""
    reader_max_line = _reader_max_line(max_line_bytes)
    spans: set[_SkippedSpan] = set()
    long_lines: set[tuple[int, int]] = set()
    number, start = 0, 0
    for offset, text in lines:
        if offset - start >= (reader_max_line if number else 1):
            spans.add(_SkippedSpan(file_index, number, start, offset))
        number, start = number + 1, offset
        # A character is at most 4 bytes of UTF-8: most lines need no encoding to be measured.
        if 4 * len(text) > max_line_bytes and len(text.encode()) > max_line_bytes:
            long_lines.add((file_index, number))
            continue
        yield file_index, number, None, text
    if end is None or end - start >= reader_max_line:
        # To the end of the file: read up to there, an unterminated last line is counted too.
        spans.add(_SkippedSpan(file_index, number, start, None))
    skipped.add(spans)
    too_long.add(long_lines)


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
