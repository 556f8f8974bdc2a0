"""Dialect names as users and OpenLineage producers write them, mapped to sqlglot dialects."""

from __future__ import annotations

import re
import threading
from functools import lru_cache
from typing import TYPE_CHECKING

from sqlglot.dialects.athena import Athena, _tokenize_as_hive, _TrinoTokenizer
from sqlglot.dialects.dialect import Dialect, Dialects
from sqlglot.dialects.hive import Hive
from sqlglot.dialects.trino import Trino
from sqlglot.errors import ErrorLevel, TokenError
from sqlglot.tokenizer_core import Token, TokenType

from headwater.sql_lineage.model import SqlError, located

if TYPE_CHECKING:
    from sqlglot.parser import Parser
    from sqlglot.tokens import Tokenizer

# Spellings seen in producers' job facets and in the wild. Keys are normalized by
# `_normalize`: lower case without spaces, dashes, underscores or dots.
_ALIASES: dict[str, str | None] = {
    "ansi": None,
    "generic": None,
    "sql": None,
    "standard": None,
    "default": None,
    "none": None,
    "sparksql": "spark",
    "spark3": "spark",
    "pyspark": "spark",
    "databrickssql": "databricks",
    "dbsql": "databricks",
    "hiveql": "hive",
    "impala": "hive",
    "postgresql": "postgres",
    "pg": "postgres",
    "psql": "postgres",
    "greenplum": "postgres",
    "cockroachdb": "postgres",
    "timescaledb": "postgres",
    "alloydb": "postgres",
    "aurorapostgresql": "postgres",
    "vertica": "postgres",
    "netezza": "postgres",
    "mariadb": "mysql",
    "auroramysql": "mysql",
    "tidb": "mysql",
    "memsql": "singlestore",
    "bq": "bigquery",
    "googlesql": "bigquery",
    "standardsql": "bigquery",
    "mssql": "tsql",
    "sqlserver": "tsql",
    "microsoftsqlserver": "tsql",
    "azuresql": "tsql",
    "synapse": "tsql",
    "azuresynapse": "tsql",
    "plsql": "oracle",
    "motherduck": "duckdb",
    "starburst": "trino",
    "prestodb": "presto",
    "awsathena": "athena",
    "sqlite3": "sqlite",
}

# Not SQL: a DAX or PRQL "dialect" would only turn SQL into nonsense errors.
_EXCLUDED = {"dax", "prql"}
_KNOWN = {d.value for d in Dialects if d.value and d.value not in _EXCLUDED}


def _normalize(name: str) -> str:
    return re.sub(r"[\s\-_.]", "", name.lower())


def known_dialects() -> list[str]:
    """The sqlglot dialects Headwater reads SQL in, by their names (aliases such as spark map to them)."""
    return sorted(_KNOWN)


@lru_cache(maxsize=256)
def dialect_name(name: str | None) -> str | None:
    """The sqlglot dialect for a user-facing name; None (generic SQL) when unknown."""
    if not name:
        return None
    key = _normalize(name)
    if key in _KNOWN:
        return key
    return _ALIASES.get(key)


class _AthenaDml(_TrinoTokenizer):
    """Athena's tokenizer for DML, which it runs on Trino, with its Hive DDL's backtick quotes."""

    IDENTIFIERS = [*_TrinoTokenizer.IDENTIFIERS, "`"]


class HeadwaterAthena(Athena):
    """Athena as users write it, statement by statement.

    sqlglot picks Athena's engine (Hive for most DDL, Trino for the rest) once for a whole text
    and reads backticks only in Hive DDL; users quote with backticks in queries too (`INSERT INTO
    `db`.`t` SELECT …`), and a script mixes both engines' statements. So a script is tokenized as
    Trino's SQL with backticks, and each statement Athena would route to Hive is tokenized again
    as Hive's (`engine_tokens`).
    """

    class Tokenizer(Athena.Tokenizer):
        def __init__(self, dialect: Dialect | str | None = None) -> None:
            super().__init__(dialect=dialect)
            self._trino_tokenizer = _AthenaDml(Trino())

        def tokenize(self, sql: str) -> list[Token]:
            try:
                return self._trino_tokenizer.tokenize(sql)
            except TokenError:
                # A literal only Hive reads (a backslash escape): the statement is Hive's.
                return self._hive_tokenizer.tokenize(sql)

    def engine_tokens(self, chunk: list[Token], sql: str) -> list[Token]:
        """The tokens of one statement as the engine Athena routes it to reads them."""
        if not _tokenize_as_hive(chunk):
            return chunk
        start = chunk[0].start
        text = sql[start : chunk[-1].end + 1]
        try:
            tokens = tokenize(text, _HIVE)
        except TokenError:
            return chunk
        located = tokens_moved_to(tokens, sql, start)
        return [Token(TokenType.HIVE_TOKEN_STREAM, "", start=start, end=start), *located]


def position_of(sql: str, start: int) -> tuple[int, int]:
    """The lines of ``sql`` before offset ``start`` and the characters of its line before it: what
    a position read in the text at ``start`` (line 1 and its columns, then later lines) moves by."""
    return sql.count("\n", 0, start), start - sql.rfind("\n", 0, start) - 1


def tokens_moved_to(tokens: list[Token], sql: str, start: int) -> list[Token]:
    """Tokens read from the text at offset ``start`` of ``sql``, located in ``sql``."""
    line, col = position_of(sql, start)
    return [
        Token(
            t.token_type,
            t.text,
            t.line + line,
            t.col + col if t.line == 1 else t.col,
            t.start + start,
            t.end + start,
            t.comments,
        )
        for t in tokens
    ]


# Dialects where a select item may name an earlier item's alias (`SELECT a + 1 AS b, b * 2 AS c`);
# elsewhere `b` there is a column of the FROM clause.
_LATERAL_ALIASES = {"snowflake", "databricks", "spark", "redshift", "duckdb", "teradata", "clickhouse"}


def has_lateral_aliases(name: str | None) -> bool:
    """Whether a select item may refer to an earlier item's alias in this dialect."""
    return dialect_name(name) in _LATERAL_ALIASES


@lru_cache(maxsize=64)
def get_dialect(name: str | None) -> Dialect:
    """A cached sqlglot Dialect instance for a user-facing name (generic when unknown)."""
    resolved = dialect_name(name)
    if resolved == "athena":
        return HeadwaterAthena()
    return Dialect.get_or_raise(resolved)


_HIVE = Hive()

# sqlglot's Dialect.tokenize and Dialect.parser build a new tokenizer or parser on every call,
# which costs about a third of tokenizing a statement. Both reset themselves on every use, so one
# of each per dialect serves every script; per thread, as they hold the text they work on.
_CACHED = threading.local()


def tokenize(sql: str, dialect: Dialect) -> list[Token]:
    """The tokens of `sql` in `dialect`, as `dialect.tokenize(sql)` gives them."""
    tokenizers: dict[type[Dialect], Tokenizer] | None = getattr(_CACHED, "tokenizers", None)
    if tokenizers is None:
        tokenizers = _CACHED.tokenizers = {}
    found = tokenizers.get(type(dialect))
    if found is None:
        found = tokenizers[type(dialect)] = dialect.tokenizer()
    return found.tokenize(sql)


_MISSING_DELIMITER = re.compile(r"^Missing (\S+) from (\d+):(\d+)$")


def readable_tokens(sql: str, dialect: Dialect) -> tuple[list[Token], SqlError | None]:
    """The tokens of `sql`; when one cannot be read (a quote never closed), the tokens of the
    statements before the one it interrupts, which still count, and the error, located in `sql`."""
    try:
        return tokenize(sql, dialect), None
    except TokenError as error:
        failure, offset = _token_error(error, sql)
    try:
        head = tokenize(sql[:offset], dialect)
    except TokenError:
        return [], failure
    last = max((i for i, t in enumerate(head) if t.token_type == TokenType.SEMICOLON), default=-1)
    return head[: last + 1], failure


def _token_error(error: TokenError, sql: str) -> tuple[SqlError, int]:
    """The error and the offset where the token that could not be read starts."""
    # The tokenizer's own error is the cause; compiled by mypyc (sqlglot[c]), sqlglot raises
    # `from` it without setting __cause__, and it is only the context.
    missing = _MISSING_DELIMITER.match(str(error.__cause__ or error.__context__ or ""))
    if missing:
        offset = int(missing.group(3))
        delimiter = missing.group(1)
        failure = located(f"no closing {delimiter} for the {delimiter}", sql, offset, delimiter)
        return failure, offset
    offset = min(error.end if error.end is not None else len(sql), len(sql))
    return located("unreadable SQL", sql, offset, sql[offset : offset + 1]), offset


def statement_parser(dialect: Dialect) -> Parser:
    """This thread's parser of `dialect` that raises at the first error, for whole scripts.

    Its state (`_curr`, the errors) is that of its last parse only until its next one: only
    `parsing.parse_script` uses it, never while another of its parses may be read.
    """
    parsers: dict[type[Dialect], Parser] | None = getattr(_CACHED, "parsers", None)
    if parsers is None:
        parsers = _CACHED.parsers = {}
    found = parsers.get(type(dialect))
    if found is None:
        found = parsers[type(dialect)] = dialect.parser(error_level=ErrorLevel.IMMEDIATE)
    return found
