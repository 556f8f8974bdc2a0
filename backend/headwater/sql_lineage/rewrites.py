"""Statements sqlglot cannot parse or keeps as an opaque Command, rebuilt into expressions it knows.

Each rewrite recognizes one statement shape and returns the equivalent AST: an UNLOAD becomes an
INSERT into a `Directory`, MySQL's REPLACE INTO an INSERT, RENAME TABLE one ALTER ... RENAME per
pair. None means "not mine", and the caller reports the original error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from sqlglot import exp
from sqlglot.dialects.bigquery import BigQuery
from sqlglot.dialects.teradata import Teradata
from sqlglot.dialects.tsql import TSQL
from sqlglot.errors import ErrorLevel, ParseError
from sqlglot.tokenizer_core import Token, TokenType

from headwater.sql_lineage.dialects import get_dialect, tokenize

if TYPE_CHECKING:
    from sqlglot.dialects.dialect import Dialect

_QUERY_STARTS = {TokenType.SELECT, TokenType.WITH, TokenType.FROM, TokenType.VALUES}


def normalize(chunk: list[Token], dialect: Dialect) -> list[Token]:
    """A statement's tokens with what sqlglot rejects or misreads rewritten to what it reads.

    Each form here carries no lineage of its own, or the same as its plain equivalent: T-SQL's
    `UPDATE TOP (n)` (which sqlglot would read as a table called TOP in a DELETE) and compound
    assignments `SET a += x`, and Teradata's column attributes `col (TITLE 'Name')`.
    """
    first = chunk[0].text.upper()
    tsql, bigquery = isinstance(dialect, TSQL), isinstance(dialect, BigQuery)
    # The words of the statement, for the rewrites that look for a word it may not have; no
    # rewrite adds a word, so the statement's words are enough to tell which can apply.
    words = {t.text.upper() for t in chunk} if tsql or bigquery or first == "CREATE" else set()
    if first in _DML_WORDS:
        chunk = _without_top(chunk)
    if tsql:
        chunk = _tsql(chunk, first, words)
    if first == "LOCKING":
        chunk = _without_locking(chunk)
    if first == "MERGE":
        chunk = _without_merge_deletes(chunk)
    if bigquery:
        chunk = _bigquery(chunk, dialect, words)
    if first == "CREATE":
        chunk = _create(chunk, words)
    if isinstance(dialect, Teradata):
        chunk = _without_column_attributes(chunk)
    return chunk


def _bigquery(chunk: list[Token], dialect: Dialect, words: set[str]) -> list[Token]:
    """BigQuery's ML functions and change history functions, in a statement with `words`."""
    if "MODEL" in words:
        chunk = _model_functions(chunk, dialect)
    if words & _CHANGE_FUNCTIONS:
        chunk = _change_functions(chunk)
    return chunk


def _create(chunk: list[Token], words: set[str]) -> list[Token]:
    """A CREATE's expectations, distribution and ON COMMIT, in a statement with `words`."""
    if "EXPECT" in words:
        chunk = _without_expectations(chunk)
    chunk = _without_distribution(chunk)
    return _without_on_commit(chunk) if "COMMIT" in words else chunk


def _tsql(chunk: list[Token], first: str, words: set[str]) -> list[Token]:
    """T-SQL's forms: `+=`, Synapse's CTAS options, OPENROWSET(BULK …), target table hints."""
    if first in _ASSIGNING:
        chunk = _compound_assignments(chunk)
    if first == "CREATE":
        chunk = _without_table_options(chunk)
    if first in {"INSERT", "MERGE", "WITH"}:
        chunk = _without_target_hints(chunk)
    return _bulk_rowsets(chunk) if "OPENROWSET" in words else chunk


_DML_WORDS = {"UPDATE", "DELETE", "INSERT", "MERGE"}
# Statements that may assign with `+=`: SET in UPDATE and MERGE, and of variables (SET @n += 1,
# SELECT @n += x FROM …).
_ASSIGNING = {"UPDATE", "MERGE", "SET", "SELECT"}


def _without_top(chunk: list[Token]) -> list[Token]:
    """UPDATE/DELETE/INSERT TOP (n) [PERCENT] …: how many rows changes no lineage."""
    if len(chunk) < 3 or chunk[1].text.upper() != "TOP" or chunk[2].token_type != TokenType.L_PAREN:
        return chunk
    close = matching_paren(chunk, 2)
    if close is None:
        return chunk
    end = close + 1
    if end < len(chunk) and chunk[end].text.upper() == "PERCENT":
        end += 1
    return chunk[:1] + chunk[end:]


# BigQuery's change history functions: the rows added to (or changed in) a table.
_CHANGE_FUNCTIONS = {"APPENDS", "CHANGES"}


def _change_functions(chunk: list[Token]) -> list[Token]:
    """BigQuery's `APPENDS(TABLE t, start, end)` and `CHANGES(TABLE t, …)`: t's rows, which sqlglot
    does not parse as a table argument; read as t itself."""
    for i in range(len(chunk) - 3):
        if (
            chunk[i].text.upper() in _CHANGE_FUNCTIONS
            and chunk[i + 1].token_type == TokenType.L_PAREN
            and chunk[i + 2].token_type == TokenType.TABLE
        ):
            close = matching_paren(chunk, i + 1)
            _, after = _table_at(chunk, i + 3)
            if close is None:
                return chunk
            return chunk[:i] + chunk[i + 3 : after] + _change_functions(chunk[close + 1 :])
    return chunk


def _model_functions(chunk: list[Token], dialect: Dialect) -> list[Token]:
    """BigQuery's ML.EVALUATE(MODEL m, TABLE t), ML.EXPLAIN_PREDICT(…) and the like, which sqlglot
    reads only for some names: read as ML.PREDICT, which reads the model and the rows alike."""
    parsers = dialect.parser_class.FUNCTION_PARSERS
    for i in range(2, len(chunk) - 2):
        token = chunk[i]
        if (
            chunk[i - 1].token_type == TokenType.DOT
            and chunk[i - 2].text.upper() in {"ML", "AI"}
            and chunk[i + 1].token_type == TokenType.L_PAREN
            and chunk[i + 2].text.upper() == "MODEL"
            and token.text.upper() not in parsers
        ):
            renamed = Token(token.token_type, "PREDICT", token.line, token.col, token.start, token.end)
            chunk = [*chunk[:i], renamed, *chunk[i + 1 :]]
    return chunk


def _without_expectations(chunk: list[Token]) -> list[Token]:
    """Delta Live Tables' `CONSTRAINT c EXPECT (cond) [ON VIOLATION DROP ROW | FAIL UPDATE]` in a
    table's column list: data quality rules, which move no data."""
    words = [t.text.upper() if t.token_type not in _QUOTED else "" for t in chunk]
    for i in range(len(chunk) - 3):
        if words[i] == "CONSTRAINT" and words[i + 2] == "EXPECT" and words[i + 3] == "(":
            close = matching_paren(chunk, i + 3)
            if close is None:
                return chunk
            end = close + 1
            if words[end : end + 2] == ["ON", "VIOLATION"]:
                end += 4 if words[end + 2 : end + 3] in (["DROP"], ["FAIL"]) else 2
            start = i
            if end < len(chunk) and chunk[end].token_type == TokenType.COMMA:
                end += 1
            elif chunk[i - 1].token_type == TokenType.COMMA:
                start -= 1
            if (
                chunk[start - 1].token_type == TokenType.L_PAREN
                and chunk[end].token_type == TokenType.R_PAREN
            ):
                start, end = start - 1, end + 1  # the list held only expectations
            return _without_expectations(chunk[:start] + chunk[end:])
    return chunk


def _without_target_hints(chunk: list[Token]) -> list[Token]:
    """T-SQL's `INSERT [INTO] t WITH (TABLOCK) …`: how the target is locked, which sqlglot reads
    as the start of a CTE."""
    # After the WITH clause, if the statement has one.
    insert = _top_level(chunk, {TokenType.INSERT, TokenType.MERGE})
    if not insert:
        return chunk
    at = min(insert.values())
    start = at + (2 if len(chunk) > at + 2 and chunk[at + 1].token_type == TokenType.INTO else 1)
    _, after = _table_at(chunk, start)
    if (
        after + 1 < len(chunk)
        and chunk[after].token_type == TokenType.WITH
        and chunk[after + 1].token_type == TokenType.L_PAREN
    ):
        close = matching_paren(chunk, after + 1)
        if close is not None:
            return chunk[:after] + chunk[close + 1 :]
    return chunk


# Teradata's lock modes: LOCKING [TABLE|ROW|…] [name] FOR|IN <mode> [MODE] [NOWAIT].
_LOCK_MODES = {"ACCESS", "READ", "WRITE", "EXCLUSIVE", "SHARE", "CHECKSUM", "LOAD"}


def _without_locking(chunk: list[Token]) -> list[Token]:
    """Teradata's `LOCKING TABLE t FOR ACCESS <statement>`: how rows are locked while the
    statement runs; sqlglot reads it only before a SELECT."""
    while chunk and chunk[0].text.upper() == "LOCKING":
        words = [t.text.upper() for t in chunk]
        mode = next((i for i, w in enumerate(words) if w in _LOCK_MODES and i > 1), None)
        if mode is None:
            return chunk
        end = mode + 1
        while end < len(chunk) and words[end] in {"MODE", "NOWAIT"}:
            end += 1
        chunk = chunk[end:]
    return chunk


def _without_on_commit(chunk: list[Token]) -> list[Token]:
    """A temporary table's `ON COMMIT DROP | DELETE ROWS | PRESERVE ROWS`: how long its rows last,
    which sqlglot does not read before AS in every dialect."""
    words = [t.text.upper() for t in chunk]
    for i in range(len(words) - 2):
        if words[i : i + 2] == ["ON", "COMMIT"]:
            end = i + 3 if words[i + 2] == "DROP" else i + 4
            if (
                words[i + 2] in {"DROP", "DELETE", "PRESERVE"}
                and end < len(chunk)
                and words[end] == "AS"
            ):
                return chunk[:i] + chunk[end:]
    return chunk


def _without_distribution(chunk: list[Token]) -> list[Token]:
    """Greenplum's `CREATE TABLE … AS (query) DISTRIBUTED BY (k)` / `DISTRIBUTED RANDOMLY` at the
    end: where the rows are stored."""
    words = [t.text.upper() for t in chunk[-6:]]
    if "DISTRIBUTED" not in words:
        return chunk
    cut = len(chunk) - 6 + words.index("DISTRIBUTED")
    rest = [t.text.upper() for t in chunk[cut + 1 :]]
    if rest[:1] == ["RANDOMLY"] or rest[:1] == ["REPLICATED"] or rest[:2] == ["BY", "("]:
        return chunk[:cut]
    return chunk


def _bulk_rowsets(chunk: list[Token]) -> list[Token]:
    """T-SQL's `OPENROWSET(BULK 'file', FORMATFILE = '…', …)`: a read of the file, which sqlglot
    does not parse; the options only say how to read it."""
    i = 0
    while i + 3 < len(chunk):
        if (
            chunk[i].text.upper() == "OPENROWSET"
            and chunk[i + 1].token_type == TokenType.L_PAREN
            and chunk[i + 2].text.upper() == "BULK"
            and chunk[i + 3].token_type == TokenType.STRING
        ):
            close = matching_paren(chunk, i + 1)
            if close is None:
                return chunk
            chunk = [*chunk[: i + 2], chunk[i + 3], *chunk[close:]]
        i += 1
    return chunk


def _without_merge_deletes(chunk: list[Token]) -> list[Token]:
    """Oracle's `WHEN MATCHED THEN UPDATE SET … DELETE WHERE cond`: rows removed after the update,
    which moves no data; sqlglot does not read it."""
    words = [t.text.upper() if t.token_type not in _QUOTED else "" for t in chunk]
    depth = 0
    for i, token in enumerate(chunk[:-1]):
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
        elif depth == 0 and words[i] == "DELETE" and words[i + 1] == "WHERE" and words[i - 1] != "THEN":
            end = next(
                (j for j in range(i + 2, len(chunk)) if words[j] == "WHEN" and _depth(chunk, j) == 0),
                len(chunk),
            )
            return chunk[:i] + _without_merge_deletes(chunk[end:]) if end < len(chunk) else chunk[:i]
    return chunk


def _depth(tokens: list[Token], index: int) -> int:
    depth = 0
    for token in tokens[:index]:
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
    return depth


def _without_table_options(chunk: list[Token]) -> list[Token]:
    """Synapse's and Fabric's `CREATE TABLE t WITH (DISTRIBUTION = …, CLUSTERED COLUMNSTORE INDEX)
    AS SELECT …`: how the table is stored, in options sqlglot does not all read."""
    for i, token in enumerate(chunk[:-1]):
        if token.token_type == TokenType.WITH and chunk[i + 1].token_type == TokenType.L_PAREN:
            close = matching_paren(chunk, i + 1)
            if close is not None and close + 1 < len(chunk) and chunk[close + 1].text.upper() == "AS":
                return chunk[:i] + chunk[close + 1 :]
            return chunk
        if token.token_type in {TokenType.ALIAS, TokenType.L_PAREN}:
            return chunk  # past the table's name: a column list or the query
    return chunk


_COMPOUND = {
    TokenType.PLUS,
    TokenType.DASH,
    TokenType.STAR,
    TokenType.SLASH,
    TokenType.MOD,
    TokenType.AMP,
    TokenType.PIPE,
    TokenType.CARET,
}
# Words that end a SET clause's last assignment.
_SET_ENDS = {"FROM", "WHERE", "OUTPUT", "OPTION", "WHEN"}


def _compound_assignments(chunk: list[Token]) -> list[Token]:
    """T-SQL's `SET a += x` is `SET a = a + (x)`: a is read as well as written (`@n` likewise)."""
    out: list[Token] = []
    i = 0
    while i < len(chunk):
        token = chunk[i]
        following = chunk[i + 1] if i + 1 < len(chunk) else None
        if (
            token.token_type in _COMPOUND
            and following is not None
            and following.token_type == TokenType.EQ
            and following.start == token.end + 1
        ):
            target = _assigned(out)
            if target:
                end = _assignment_end(chunk, i + 2)
                value = chunk[i + 2 : end]
                out.append(following)
                out.extend(target)
                out.append(token)
                out.append(_synthetic(TokenType.L_PAREN, "(", value[0] if value else following))
                out.extend(value)
                out.append(_synthetic(TokenType.R_PAREN, ")", chunk[end - 1]))
                i = end
                continue
        out.append(token)
        i += 1
    return out


def _assigned(before: list[Token]) -> list[Token]:
    """The column or variable at the end of `before` if an assignment starts there."""
    i = len(before) - 1
    while i >= 1 and before[i - 1].token_type == TokenType.DOT:
        i -= 2
    if i >= 1 and before[i - 1].token_type == TokenType.PARAMETER:
        i -= 1  # @n
    if i < 1 or before[i - 1].text.upper() not in {"SET", "SELECT", ","}:
        return []
    return before[i:]


def _assignment_end(chunk: list[Token], start: int) -> int:
    """The index after an assigned value: at the next comma or clause outside parentheses."""
    depth = 0
    for i in range(start, len(chunk)):
        kind = chunk[i].token_type
        if kind == TokenType.L_PAREN:
            depth += 1
        elif kind == TokenType.R_PAREN:
            depth -= 1
            if depth < 0:
                return i
        elif depth == 0 and (kind == TokenType.COMMA or chunk[i].text.upper() in _SET_ENDS):
            return i
    return len(chunk)


def _synthetic(kind: TokenType, text: str, at: Token) -> Token:
    return Token(kind, text, at.line, at.col, at.start, at.end)


# Teradata's column attributes, in parentheses after an expression: `name (TITLE 'Name')`,
# `amount (FORMAT 'ZZZ9.99')`, `x (NAMED y)`, `code (NOT CASESPECIFIC)`, and the data type
# conversion `day_text (DATE, FORMAT 'YYYY-MM-DD')`.
_ATTRIBUTES = {"TITLE", "FORMAT", "NAMED", "CASESPECIFIC", "NOT", "UPPERCASE", "UC"}
_TYPES = {
    "DATE",
    "TIME",
    "TIMESTAMP",
    "INTEGER",
    "INT",
    "SMALLINT",
    "BIGINT",
    "BYTEINT",
    "DECIMAL",
    "NUMERIC",
    "NUMBER",
    "FLOAT",
    "REAL",
    "CHAR",
    "CHARACTER",
    "VARCHAR",
}
_EXPRESSION_ENDS = {
    TokenType.VAR,
    TokenType.IDENTIFIER,
    TokenType.R_PAREN,
    TokenType.STRING,
    TokenType.NUMBER,
}


def _without_column_attributes(chunk: list[Token]) -> list[Token]:
    """Teradata's `expr (attributes)` is `expr`, or `expr AS y` for `(NAMED y)`."""
    out: list[Token] = []
    i = 0
    while i < len(chunk):
        token = chunk[i]
        close = matching_paren(chunk, i) if token.token_type == TokenType.L_PAREN else None
        if close is not None and out and out[-1].token_type in _EXPRESSION_ENDS:
            inner = chunk[i + 1 : close]
            if _is_attribute_list(inner):
                named = next((j for j, t in enumerate(inner[:-1]) if t.text.upper() == "NAMED"), None)
                if named is not None:
                    out.append(_synthetic(TokenType.ALIAS, "AS", inner[named]))
                    out.append(inner[named + 1])
                i = close + 1
                continue
        out.append(token)
        i += 1
    return out


def _is_attribute_list(inner: list[Token]) -> bool:
    """Whether the tokens inside parentheses are attributes (or a type), not a function's arguments."""
    if not inner:
        return False
    first = inner[0].text.upper() if inner[0].token_type != TokenType.STRING else ""
    if first in _ATTRIBUTES:
        return first != "NOT" or (len(inner) > 1 and inner[1].text.upper() == "CASESPECIFIC")
    if first not in _TYPES:
        return False
    # A type, its size in parentheses, then nothing or a comma and attributes.
    after = 1
    if len(inner) > 1 and inner[1].token_type == TokenType.L_PAREN:
        size = matching_paren(inner, 1)
        if size is None:
            return False
        after = size + 1
    return after == len(inner) or inner[after].token_type == TokenType.COMMA


def rewrite_statement(chunk: list[Token], sql: str, dialect: Dialect) -> list[exp.Expr] | None:
    """Rebuild a statement of a known shape that sqlglot could not represent, else None."""
    if chunk[0].token_type == TokenType.HIVE_TOKEN_STREAM and len(chunk) > 1:
        chunk = chunk[1:]  # Athena's marker for Hive DDL: the shapes below are read by tokens
    keyword = chunk[0].text.upper()
    rewrite = _REWRITES.get("QUERY" if keyword in _QUERY_WORDS else keyword)
    if rewrite is None:
        return None
    try:
        return rewrite(chunk, sql, dialect)
    except Exception:
        return None


def _rewrite_create(chunk: list[Token], sql: str, dialect: Dialect) -> list[exp.Expr] | None:
    return (
        _external_stage_table(chunk, sql)
        or _oracle_external(chunk, sql, dialect)
        or _create_clone(chunk)
        or _create_wrapper(chunk, sql, dialect)
        or _no_data(chunk, sql, dialect)
        or _view_options(chunk, sql, dialect)
    )


def _rewrite_replace(chunk: list[Token], sql: str, dialect: Dialect) -> list[exp.Expr] | None:
    text = _text(chunk, sql)
    if not text[7:].lstrip().upper().startswith("INTO"):
        return None
    return _parse(dialect, "INSERT" + text[7:])


def _text(chunk: list[Token], sql: str) -> str:
    return sql[chunk[0].start : chunk[-1].end + 1]


_REWRITES: dict[str, Callable[[list[Token], str, Dialect], list[exp.Expr] | None]] = {
    "REFRESH": lambda chunk, _sql, _dialect: _refresh(chunk),
    "CREATE": _rewrite_create,
    "QUERY": lambda chunk, sql, dialect: _into_file(chunk, sql, dialect),
    "UNLOAD": lambda chunk, sql, dialect: _unload(_text(chunk, sql), dialect),
    "REPLACE": _rewrite_replace,
    "RENAME": lambda chunk, _sql, _dialect: _rename_table(chunk),
    "INSERT": lambda chunk, sql, dialect: (
        _insert_directory(chunk, sql, dialect)
        or _insert_exec(chunk, sql, dialect)
        or _output_into(chunk, sql, dialect)
    ),
    "UPDATE": lambda chunk, sql, dialect: (
        _update_from_first(chunk, sql) or _output_into(chunk, sql, dialect)
    ),
    "DELETE": lambda chunk, sql, dialect: _output_into(chunk, sql, dialect),
    "LOAD": lambda chunk, _sql, _dialect: _load_file(chunk),
    "EXPORT": lambda chunk, sql, dialect: _export_table(chunk, sql, dialect),
    "IMPORT": lambda chunk, _sql, _dialect: _import_table(chunk),
    "APPLY": lambda chunk, _sql, _dialect: _apply_changes(chunk),
    "BULK": lambda chunk, _sql, _dialect: _load_file(chunk),
    "MERGE": lambda chunk, sql, dialect: _output_into(chunk, sql, dialect),
    "ALTER": lambda chunk, sql, _dialect: (
        _alter_refresh(chunk)
        or _alter_update(chunk, sql)
        or _partition_locations(chunk)
        or _alter_moves(chunk)
    ),
    "UPSERT": lambda chunk, sql, dialect: _parse(dialect, "INSERT" + _text(chunk, sql)[6:]),
}


def _parse(dialect: Dialect, text: str) -> list[exp.Expr] | None:
    parsed = dialect.parse(text, error_level=ErrorLevel.IMMEDIATE)
    if len(parsed) != 1 or parsed[0] is None or isinstance(parsed[0], exp.Command):
        return None
    return [parsed[0]]


def _directory_insert(path: str, query: exp.Expr) -> exp.Insert:
    return exp.Insert(
        this=exp.Directory(this=exp.Literal.string(path)), expression=query, overwrite=True
    )


def matching_paren(tokens: list[Token], open_index: int) -> int | None:
    """The index of the parenthesis closing the one at `open_index`, None if it is not closed."""
    depth = 0
    for i in range(open_index, len(tokens)):
        if tokens[i].token_type == TokenType.L_PAREN:
            depth += 1
        elif tokens[i].token_type == TokenType.R_PAREN:
            depth -= 1
            if depth == 0:
                return i
    return None


def _unload(text: str, dialect: Dialect) -> list[exp.Expr] | None:
    """Redshift `UNLOAD ('query') TO 's3://…'` and Athena/Trino `UNLOAD (query) TO 's3://…'`."""
    rest = text[len("UNLOAD") :]
    tokens = tokenize(rest, dialect)
    if not tokens or tokens[0].token_type != TokenType.L_PAREN:
        return None
    close = matching_paren(tokens, 0)
    if close is None:
        return None
    inner = tokens[1:close]
    if len(inner) == 1 and inner[0].token_type == TokenType.STRING:
        query = _parse(dialect, inner[0].text)
    else:
        query = [q for q in dialect.parser(error_level=ErrorLevel.IMMEDIATE).parse(inner, rest) if q]
    after = tokens[close + 1 : close + 3]
    if (
        not query
        or len(after) < 2
        or after[0].text.upper() != "TO"
        or after[1].token_type != TokenType.STRING
    ):
        return None
    return [_directory_insert(after[1].text, query[0])]


def _rename_table(chunk: list[Token]) -> list[exp.Expr] | None:
    """MySQL's `RENAME TABLE a TO b, c TO d` and Oracle's `RENAME a TO b`: one ALTER TABLE …
    RENAME per pair."""
    i = 2 if len(chunk) > 1 and chunk[1].text.upper() in {"TABLE", "TABLES"} else 1
    statements: list[exp.Expr] = []
    while i < len(chunk):
        old, after = _table_at(chunk, i)
        if old is None or after >= len(chunk) or chunk[after].text.upper() != "TO":
            return None
        new, i = _table_at(chunk, after + 1)
        if new is None:
            return None
        statements.append(_alter(old, exp.AlterRename(this=new)))
        if i < len(chunk) and chunk[i].token_type == TokenType.COMMA:
            i += 1
        elif i < len(chunk):
            return None
    return statements or None


def _top_level(tokens: list[Token], types: set[TokenType]) -> dict[TokenType, int]:
    """Index of the first token of each type outside parentheses."""
    found: dict[TokenType, int] = {}
    depth = 0
    for i, token in enumerate(tokens):
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
        elif depth == 0 and token.token_type in types and token.token_type not in found:
            found[token.token_type] = i
    return found


def _update_from_first(chunk: list[Token], sql: str) -> list[exp.Expr] | None:
    """Teradata `UPDATE t FROM s SET … WHERE …`: the usual order is SET before FROM."""
    found = _top_level(chunk, {TokenType.FROM, TokenType.SET, TokenType.WHERE})
    from_, set_ = found.get(TokenType.FROM), found.get(TokenType.SET)
    if from_ is None or set_ is None or from_ > set_:
        return None
    where = found.get(TokenType.WHERE, len(chunk))
    reordered = chunk[:from_] + chunk[set_:where] + chunk[from_:set_] + chunk[where:]
    # sqlglot's Teradata parser reads SET after FROM as a table alias, so the reordered tokens
    # go to the generic parser.
    statement = get_dialect(None).parser(error_level=ErrorLevel.IMMEDIATE).parse(reordered, sql)[0]
    return [statement] if statement is not None else None


def moves_data(chunk: list[Token]) -> bool:
    """Whether an ALTER statement moves rows between tables (EXCHANGE PARTITION, SWITCH, SWAP)."""
    return any(t.text.upper() in _MOVES for t in chunk if t.token_type not in _QUOTED)


_MOVES = {"EXCHANGE", "SWITCH", "SWAP", "APPEND"}
_QUOTED = {TokenType.STRING, TokenType.IDENTIFIER}
_NAME_PARTS = {TokenType.VAR, TokenType.IDENTIFIER}


def _alter_moves(chunk: list[Token]) -> list[exp.Expr] | None:
    """ALTER TABLE statements that replace a table's rows, or a partition's, by another table's.

    `ALTER TABLE t EXCHANGE PARTITION … WITH TABLE s` (Oracle, MySQL, Hive), T-SQL's
    `ALTER TABLE s SWITCH [PARTITION n] TO t`, PostgreSQL's `ALTER TABLE t ATTACH PARTITION s …`
    and ClickHouse's `ALTER TABLE t ATTACH PARTITION p FROM s` and `ALTER TABLE s MOVE PARTITION p
    TO TABLE t` become sqlglot's ReplacePartition of t from s; `ALTER TABLE t SWAP WITH s` where
    sqlglot does not read it (Snowflake's it does) a SwapTable. Both tables swap contents in some
    of these, but the one named as the source is the one that was loaded to be moved in: the
    lineage goes from it to the other.
    """
    words = [t.text.upper() if t.token_type not in _QUOTED else "" for t in chunk]
    start = 2
    if words[1:2] != ["TABLE"]:
        return None
    if words[start : start + 2] == ["IF", "EXISTS"]:
        start += 2
    altered, after = _table_at(chunk, start)
    if altered is None or after + 1 >= len(chunk):
        return None
    action = " ".join(words[after : after + 2])
    if action.startswith(("SWITCH", "SWAP WITH")):
        action = action.split()[0]
    other = _other_table(chunk, words, after, action)
    if other is None:
        return None
    if action == "SWAP":
        return [_alter(altered, exp.SwapTable(this=other))]
    if action in _MOVES_OUT:
        return [_alter(other, exp.ReplacePartition(source=altered))]
    return [_alter(altered, exp.ReplacePartition(source=other))]


def _other_table(chunk: list[Token], words: list[str], after: int, action: str) -> exp.Table | None:
    """The table an ALTER's action moves rows from or to, after the first word that may name it."""
    for word in _OTHER_TABLE_AFTER.get(action, ()):
        if word in words[after + 1 :]:
            other, _ = _table_at(chunk, words.index(word, after + 1) + 1)
            if other is not None:
                return other
    return None


_OTHER_TABLE_AFTER = {
    "EXCHANGE PARTITION": ("TABLE",),
    "EXCHANGE SUBPARTITION": ("TABLE",),
    "SWITCH": ("TO",),
    "SWAP": ("WITH",),
    # ClickHouse's ATTACH PARTITION p FROM s; PostgreSQL's ATTACH PARTITION s FOR VALUES …
    "ATTACH PARTITION": ("FROM", "PARTITION"),
    "MOVE PARTITION": ("TABLE",),
    # Redshift's ALTER TABLE t APPEND FROM s moves s's rows to the end of t.
    "APPEND FROM": ("FROM",),
}
# Actions whose altered table is the source, not the target.
_MOVES_OUT = {"SWITCH", "MOVE PARTITION"}


def _alter(table: exp.Table, action: exp.Expr) -> exp.Alter:
    return exp.Alter(this=table, kind="TABLE", actions=[action])


def _table_at(tokens: list[Token], start: int) -> tuple[exp.Table | None, int]:
    """The dotted table name starting at `start`, and the index of the token after it."""
    parts: list[exp.Identifier] = []
    i = start
    while i < len(tokens) and tokens[i].token_type in _NAME_PARTS:
        quoted = tokens[i].token_type == TokenType.IDENTIFIER
        parts.append(exp.Identifier(this=tokens[i].text, quoted=quoted))
        i += 1
        if i + 1 < len(tokens) and tokens[i].token_type == TokenType.DOT:
            i += 1
        else:
            break
    if not parts:
        return None, start
    if len(parts) > 3:
        parts = [exp.Identifier(this=".".join(p.name for p in parts[:-2])), *parts[-2:]]
    names = dict(zip(("this", "db", "catalog"), reversed(parts), strict=False))
    return exp.Table(**names), i


def _insert_exec(chunk: list[Token], sql: str, dialect: Dialect) -> list[exp.Expr] | None:
    """T-SQL's `INSERT [INTO] t [(columns)] EXEC proc …`: t is written with rows whose lineage is
    the procedure's (reported as a call that is not followed)."""
    words = [t.text.upper() if t.token_type not in _QUOTED else "" for t in chunk]
    call = next((i for i, w in enumerate(words) if w in {"EXEC", "EXECUTE"}), None)
    start = 2 if words[1:2] == ["INTO"] else 1
    if call is None or call <= start:
        return None
    opening = next((i for i in range(start, call) if words[i] == "("), call)
    table = exp.to_table(sql[chunk[start].start : chunk[opening - 1].end + 1], dialect=dialect)
    target: exp.Expr = table
    if opening < call:
        names = [t for t in chunk[opening + 1 : call - 1] if t.token_type in _NAME_PARTS]
        target = exp.Schema(
            this=table,
            expressions=[
                exp.Identifier(this=t.text, quoted=t.token_type == TokenType.IDENTIFIER) for t in names
            ],
        )
    return [exp.Insert(this=target)]


def _insert_directory(chunk: list[Token], sql: str, dialect: Dialect) -> list[exp.Expr] | None:
    """Spark `INSERT OVERWRITE [LOCAL] DIRECTORY ['path'] USING fmt [OPTIONS (...)] query`."""
    words = [t.text.upper() for t in chunk[:4]]
    if words[:2] != ["INSERT", "OVERWRITE"] or "DIRECTORY" not in words[2:4]:
        return None
    start = words.index("DIRECTORY") + 1
    path = None
    if start < len(chunk) and chunk[start].token_type == TokenType.STRING:
        path = chunk[start].text
    depth = 0
    query_start = None
    for i in range(start, len(chunk)):
        token = chunk[i]
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
        elif depth == 0 and token.token_type in _QUERY_STARTS:
            query_start = i
            break
        elif (
            path is None
            and depth == 1
            and token.token_type == TokenType.STRING
            and token.text.lower() == "path"
            and i + 2 < len(chunk)
        ):
            # OPTIONS ('path' 's3://…') or OPTIONS ('path' = 's3://…')
            value = chunk[i + 2] if chunk[i + 1].token_type == TokenType.EQ else chunk[i + 1]
            path = value.text
    if path is None or query_start is None:
        return None
    parser = dialect.parser(error_level=ErrorLevel.IMMEDIATE)
    query = parser.parse(chunk[query_start:], sql)[0]
    if query is None:
        return None
    return [_directory_insert(path, query)]


# Refreshes that run a stored query again: the kind of object, as REFRESH and ALTER … REFRESH
# name it. Spark's REFRESH TABLE only reloads cached metadata, and moves no rows.
REFRESHED = {"MATERIALIZED VIEW", "STREAMING TABLE", "DYNAMIC TABLE", "MATERIALIZED TABLE"}


def _refresh(chunk: list[Token]) -> list[exp.Expr] | None:
    """`REFRESH MATERIALIZED VIEW [CONCURRENTLY] v [WITH [NO] DATA]` (PostgreSQL, Redshift …)."""
    words = [t.text.upper() if t.token_type not in _QUOTED else "" for t in chunk]
    kind = " ".join(words[1:3])
    if kind not in REFRESHED:
        return None
    start = 4 if words[3:4] == ["CONCURRENTLY"] else 3
    table, _ = _table_at(chunk, start)
    return [exp.Refresh(this=table, kind=kind)] if table is not None else None


def _alter_refresh(chunk: list[Token]) -> list[exp.Expr] | None:
    """Snowflake's `ALTER DYNAMIC TABLE t REFRESH` and `ALTER MATERIALIZED VIEW v REFRESH`."""
    words = [t.text.upper() if t.token_type not in _QUOTED else "" for t in chunk]
    kind = " ".join(words[1:3])
    if kind not in REFRESHED or words[-1] != "REFRESH":
        return None
    table, after = _table_at(chunk, 3)
    if table is None or after != len(chunk) - 1:
        return None
    return [exp.Refresh(this=table, kind=kind)]


_QUERY_WORDS = {"SELECT", "WITH", "("}
_CLONES = {"CLONE", "COPY"}


def _create_clone(chunk: list[Token]) -> list[exp.Expr] | None:
    """`CREATE [OR REPLACE] [SNAPSHOT] TABLE [IF NOT EXISTS] t [SHALLOW|DEEP] CLONE s …` as of a
    point in time (BigQuery's FOR SYSTEM_TIME AS OF, Databricks' VERSION/TIMESTAMP AS OF) and
    BigQuery's `CREATE TABLE t COPY s`: t gets s's rows as they were then."""
    words = [t.text.upper() if t.token_type not in _QUOTED else "" for t in chunk]
    i = 1
    if words[i : i + 2] == ["OR", "REPLACE"]:
        i += 2
    if words[i : i + 1] == ["SNAPSHOT"]:
        i += 1
    if words[i : i + 1] != ["TABLE"]:
        return None
    i += 1
    if words[i : i + 3] == ["IF", "NOT", "EXISTS"]:
        i += 3
    target, after = _table_at(chunk, i)
    if after < len(words) and words[after] in {"SHALLOW", "DEEP"}:
        after += 1
    if target is None or after >= len(words) or words[after] not in _CLONES:
        return None
    source, _ = _table_at(chunk, after + 1)
    if source is None:
        return None
    return [exp.Create(this=target, kind="TABLE", clone=exp.Clone(this=source))]


# Objects whose definition wraps the statement they run: Snowflake's tasks and pipes.
_WRAPPERS = {"TASK", "PIPE"}


def _create_wrapper(chunk: list[Token], sql: str, dialect: Dialect) -> list[exp.Expr] | None:
    """`CREATE [OR REPLACE] TASK t … AS <statement>`, `CREATE PIPE p … AS COPY INTO …` (Snowflake)
    and `CREATE PIPELINE p AS LOAD DATA …` (SingleStore): the lineage is the statement's, run each
    time the task, pipe or pipeline fires."""
    words = [t.text.upper() if t.token_type not in _QUOTED else "" for t in chunk]
    i = 3 if words[1:3] == ["OR", "REPLACE"] else 1
    if words[i : i + 1] not in (["TASK"], ["PIPE"], ["PIPELINE"]):
        return None
    body = next((j for j in range(i + 1, len(chunk)) if words[j] == "AS"), None)
    if body is None or body + 1 >= len(chunk):
        return None
    try:
        parsed = dialect.parser(error_level=ErrorLevel.IMMEDIATE).parse(chunk[body + 1 :], sql)
    except ParseError:
        parsed = []
    statement = parsed[0] if parsed else None
    if statement is None or isinstance(statement, exp.Command):
        return rewrite_statement(chunk[body + 1 :], sql, dialect)
    return [statement]


def _no_data(chunk: list[Token], sql: str, dialect: Dialect) -> list[exp.Expr] | None:
    """`CREATE MATERIALIZED VIEW v AS … WITH [NO] DATA` (PostgreSQL), which sqlglot reads only
    for tables: the query without the clause, and the clause as a property."""
    words = [t.text.upper() if t.token_type not in _QUOTED else "" for t in chunk[-3:]]
    if words[-1] != "DATA" or "WITH" not in words:
        return None
    cut = len(chunk) - (3 if words[0] == "WITH" else 2)
    parsed = dialect.parser(error_level=ErrorLevel.IMMEDIATE).parse(chunk[:cut], sql)
    statement = parsed[0] if parsed else None
    if not isinstance(statement, exp.Create):
        return None
    if words[0] == "WITH":
        properties = statement.args.get("properties") or exp.Properties(expressions=[])
        properties.append("expressions", exp.WithDataProperty(no=True))
        statement.set("properties", properties)
    return [statement]


def _view_options(chunk: list[Token], sql: str, dialect: Dialect) -> list[exp.Expr] | None:
    """`CREATE MATERIALIZED VIEW v [(columns)] <options> AS query` with options sqlglot does not
    read (Oracle's BUILD DEFERRED REFRESH FAST ON DEMAND, Redshift's AUTO REFRESH YES …): how
    and when it refreshes, not what it holds."""
    words = [t.text.upper() if t.token_type not in _QUOTED else "" for t in chunk]
    i = 3 if words[1:3] == ["OR", "REPLACE"] else 1
    if words[i : i + 2] != ["MATERIALIZED", "VIEW"]:
        return None
    _, after = _table_at(chunk, i + 2)
    if after < len(chunk) and chunk[after].token_type == TokenType.L_PAREN:
        close = matching_paren(chunk, after)
        after = close + 1 if close is not None else after
    query = _top_level(chunk[after:], {TokenType.ALIAS}).get(TokenType.ALIAS)
    if query is None or query == 0:
        return None
    parsed = dialect.parser(error_level=ErrorLevel.IMMEDIATE).parse(
        chunk[:after] + chunk[after + query :], sql
    )
    statement = parsed[0] if parsed else None
    return [statement] if isinstance(statement, exp.Create) else None


# MySQL's export options between INTO OUTFILE 'file' and the rest of the query.
_EXPORT_OPTIONS = {
    "FIELDS",
    "COLUMNS",
    "LINES",
    "TERMINATED",
    "ENCLOSED",
    "OPTIONALLY",
    "ESCAPED",
    "STARTING",
    "BY",
    "CHARACTER",
    "SET",
}


def _into_file(chunk: list[Token], sql: str, dialect: Dialect) -> list[exp.Expr] | None:
    """MySQL's `SELECT … INTO OUTFILE 'file' [options] [FROM …]` and `INTO DUMPFILE`, before FROM
    or after the query: the query's rows written to a file on the server (`path:<file>`)."""
    depth = 0
    for i, token in enumerate(chunk[:-2]):
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
        elif (
            depth == 0
            and token.token_type == TokenType.INTO
            and chunk[i + 1].text.upper() in {"OUTFILE", "DUMPFILE"}
            and chunk[i + 2].token_type == TokenType.STRING
        ):
            end = i + 3
            while end < len(chunk) and (
                chunk[end].text.upper() in _EXPORT_OPTIONS
                or (end > 0 and chunk[end - 1].text.upper() in {"BY", "SET"})
            ):
                end += 1
            query = dialect.parser(error_level=ErrorLevel.IMMEDIATE).parse(chunk[:i] + chunk[end:], sql)[
                0
            ]
            if not isinstance(query, exp.Query):
                return None
            return [_directory_insert(chunk[i + 2].text, query)]
    return None


def _output_into(chunk: list[Token], sql: str, dialect: Dialect) -> list[exp.Expr] | None:
    """T-SQL's `OUTPUT … INTO schema.t [(columns)]`, whose qualified name or column list sqlglot
    does not read: the statement without the INTO, and the table put back in its place."""
    output = _top_level(chunk, {TokenType.RETURNING}).get(TokenType.RETURNING)
    if output is None:
        return None
    into = _top_level(chunk[output:], {TokenType.INTO}).get(TokenType.INTO)
    if into is None:
        if chunk[0].token_type != TokenType.DELETE:
            return None
        # DELETE FROM t OUTPUT deleted.* WHERE …: rows returned to the client, nothing written.
        parsed = dialect.parser(error_level=ErrorLevel.IMMEDIATE).parse(
            _returning_last(chunk, output), sql
        )
        return [parsed[0]] if parsed and parsed[0] is not None else None
    into += output
    table, end = _table_at(chunk, into + 1)
    variable = chunk[into + 1].token_type == TokenType.PARAMETER
    if variable:
        _, end = _table_at(chunk, into + 2)
    elif table is None:
        return None
    target: exp.Expr | None = table
    if end < len(chunk) and chunk[end].token_type == TokenType.L_PAREN:
        close = matching_paren(chunk, end)
        if close is None:
            return None
        names = [t for t in chunk[end + 1 : close] if t.token_type in _NAME_PARTS]
        target = exp.Schema(
            this=table,
            expressions=[
                exp.Identifier(this=t.text, quoted=t.token_type == TokenType.IDENTIFIER) for t in names
            ],
        )
        end = close + 1
    tokens = chunk[:into] + chunk[end:]
    if tokens[0].token_type == TokenType.DELETE:
        tokens = _returning_last(tokens, output)
    parsed = dialect.parser(error_level=ErrorLevel.IMMEDIATE).parse(tokens, sql)
    statement = parsed[0] if parsed else None
    returning = statement.args.get("returning") if statement is not None else None
    if statement is None or not isinstance(returning, exp.Returning):
        return None
    # Rows output INTO a table variable are not followed.
    returning.set("into", None if variable else target)
    return [statement]


def _returning_last(tokens: list[Token], output: int) -> list[Token]:
    """A DELETE's OUTPUT clause moved after its FROM and WHERE, where sqlglot reads it."""
    rest = _top_level(tokens[output:], {TokenType.WHERE, TokenType.FROM, TokenType.OPTION})
    end = output + min(rest.values(), default=len(tokens) - output)
    return tokens[:output] + tokens[end:] + tokens[output:end]


def _load_file(chunk: list[Token]) -> list[exp.Expr] | None:
    """MySQL's `LOAD DATA [LOCAL] INFILE 'file' [REPLACE] INTO TABLE t …` (SingleStore's `LOAD DATA
    S3 'path' … INTO TABLE t`) and T-SQL's `BULK INSERT t FROM 'file' …`: t loaded from the file."""
    words = [t.text.upper() if t.token_type not in _QUOTED else "" for t in chunk]
    if words[:2] == ["BULK", "INSERT"] and "FROM" in words:
        table, _ = _table_at(chunk, 2)
        path = words.index("FROM") + 1
    elif words[:2] == ["LOAD", "DATA"] and "TABLE" in words:
        # MySQL's INFILE 'f'; SingleStore's S3|FS|GCS|AZURE|HDFS|LINK … 'path' in a pipeline.
        table, _ = _table_at(chunk, words.index("TABLE") + 1)
        path = next((i for i, t in enumerate(chunk) if t.token_type == TokenType.STRING), len(chunk))
    else:
        return None
    if table is None or path >= len(chunk) or chunk[path].token_type != TokenType.STRING:
        return None
    return [exp.LoadData(this=table, inpath=exp.Literal.string(chunk[path].text))]


def _export_table(chunk: list[Token], sql: str, dialect: Dialect) -> list[exp.Expr] | None:
    """Hive's `EXPORT TABLE t [PARTITION (…)] TO 'path'`: t's rows (and metadata) copied there;
    Vertica's `EXPORT TO PARQUET (directory = 'path', …) AS query`: the query's rows."""
    words = [t.text.upper() if t.token_type not in _QUOTED else "" for t in chunk]
    if words[1:2] == ["TO"]:
        return _export_to(chunk, words, sql, dialect)
    if "INTO" in words and words[1:2] != ["TABLE"]:
        return _exasol_export(chunk, words, sql, dialect)
    if words[1:2] != ["TABLE"] or "TO" not in words:
        return None
    table, _ = _table_at(chunk, 2)
    path = words.index("TO") + 1
    if table is None or path >= len(chunk) or chunk[path].token_type != TokenType.STRING:
        return None
    return [_directory_insert(chunk[path].text, exp.select("*").from_(table))]


def _exasol_export(
    chunk: list[Token], words: list[str], sql: str, dialect: Dialect
) -> list[exp.Expr] | None:
    """Exasol's `EXPORT t | (query) INTO CSV|FBV AT 'location' FILE 'f'`: the rows written there."""
    into = words.index("INTO")
    if chunk[1].token_type == TokenType.L_PAREN:
        parsed = dialect.parser(error_level=ErrorLevel.IMMEDIATE).parse(chunk[2 : into - 1], sql)
        query = parsed[0] if parsed else None
    else:
        table, _ = _table_at(chunk, 1)
        query = exp.select("*").from_(table) if table is not None else None
    files = _exasol_files(chunk, words, into)
    if not isinstance(query, exp.Query) or not files:
        return None
    return [_directory_insert(f, query) for f in files]


def _export_to(
    chunk: list[Token], words: list[str], sql: str, dialect: Dialect
) -> list[exp.Expr] | None:
    directory = next((i for i, w in enumerate(words) if w == "DIRECTORY"), None)
    query = _top_level(chunk, {TokenType.ALIAS}).get(TokenType.ALIAS)
    if directory is None or query is None or directory + 2 >= len(chunk):
        return None
    path = chunk[directory + 2]
    if path.token_type != TokenType.STRING:
        return None
    parsed = dialect.parser(error_level=ErrorLevel.IMMEDIATE).parse(chunk[query + 1 :], sql)[0]
    return [_directory_insert(path.text, parsed)] if isinstance(parsed, exp.Query) else None


def _partition_locations(chunk: list[Token]) -> list[exp.Expr] | None:
    """Hive's and Athena's `ALTER TABLE t ADD [IF NOT EXISTS] PARTITION (…) LOCATION 'path' …`:
    the files at each location become a partition of t, its rows."""
    words = [t.text.upper() if t.token_type not in _QUOTED else "" for t in chunk]
    if words[1:2] != ["TABLE"]:
        return None
    table, after = _table_at(chunk, 2)
    if table is None or words[after : after + 1] != ["ADD"] or "PARTITION" not in words:
        return None
    paths = [
        chunk[i + 1].text
        for i, word in enumerate(words[:-1])
        if word == "LOCATION" and chunk[i + 1].token_type == TokenType.STRING
    ]
    return [
        _alter(table, exp.ReplacePartition(source=exp.Table(this=exp.Literal.string(path))))
        for path in paths
    ] or None


def _exasol_files(chunk: list[Token], words: list[str], start: int) -> list[str]:
    """The files of Exasol's `… CSV|FBV AT 'location' FILE 'a' FILE 'b'`, as locations."""
    at = next((i for i in range(start, len(words) - 1) if words[i] == "AT"), None)
    if at is None or chunk[at + 1].token_type != TokenType.STRING:
        return []
    base = chunk[at + 1].text.rstrip("/")
    return [
        f"{base}/{chunk[i + 1].text}"
        for i in range(at + 2, len(words) - 1)
        if words[i] == "FILE" and chunk[i + 1].token_type == TokenType.STRING
    ]


def _exasol_import(chunk: list[Token], words: list[str]) -> list[exp.Expr] | None:
    """Exasol's `IMPORT INTO t FROM CSV|FBV AT 'location' FILE 'f' …`: t loaded from the files."""
    table, after = _table_at(chunk, 2)
    if table is None:
        return None
    files = _exasol_files(chunk, words, after)
    if not files:
        return None  # IMPORT … FROM JDBC|ORA|EXA: a query on another database
    statements: list[exp.Expr] = [exp.LoadData(this=table, inpath=exp.Literal.string(f)) for f in files]
    return statements


def _import_table(chunk: list[Token]) -> list[exp.Expr] | None:
    """Hive's `IMPORT [EXTERNAL] TABLE t [PARTITION (…)] FROM 'path'`: t loaded from an export;
    Exasol's `IMPORT INTO t FROM CSV AT …`."""
    words = [t.text.upper() if t.token_type not in _QUOTED else "" for t in chunk]
    if words[1:2] == ["INTO"]:
        return _exasol_import(chunk, words)
    start = 3 if words[1:3] == ["EXTERNAL", "TABLE"] else 2
    if words[start - 1] != "TABLE" or "FROM" not in words:
        return None
    table, _ = _table_at(chunk, start)
    path = words.index("FROM") + 1
    if table is None or path >= len(chunk) or chunk[path].token_type != TokenType.STRING:
        return None
    return [exp.LoadData(this=table, inpath=exp.Literal.string(chunk[path].text))]


def _apply_changes(chunk: list[Token]) -> list[exp.Expr] | None:
    """Delta Live Tables' `APPLY CHANGES INTO t FROM [STREAM](s) KEYS (…) SEQUENCE BY …`: the
    change feed s applied to t, every column."""
    words = [t.text.upper() if t.token_type not in _QUOTED else "" for t in chunk]
    if words[1:3] != ["CHANGES", "INTO"] or "FROM" not in words:
        return None
    target, _ = _table_at(chunk, 3)
    start = words.index("FROM") + 1
    if words[start : start + 1] == ["STREAM"]:
        start += 1
    if start < len(chunk) and chunk[start].token_type == TokenType.L_PAREN:
        start += 1
    source, _ = _table_at(chunk, start)
    if target is None or source is None:
        return None
    return [exp.Insert(this=target, expression=exp.select("*").from_(source), by_name=True)]


def _oracle_external(chunk: list[Token], sql: str, dialect: Dialect) -> list[exp.Expr] | None:
    """Oracle's `CREATE TABLE t (…) ORGANIZATION EXTERNAL (… LOCATION ('a.csv', dir:'b.csv'))`:
    a name for the files, as other engines' external tables."""
    words = [t.text.upper() if t.token_type not in _QUOTED else "" for t in chunk]
    at = next(
        (i for i in range(len(words) - 2) if words[i : i + 2] == ["ORGANIZATION", "EXTERNAL"]), None
    )
    if at is None or chunk[at + 2].token_type != TokenType.L_PAREN:
        return None
    close = matching_paren(chunk, at + 2)
    location = next((i for i in range(at, close or 0) if words[i] == "LOCATION"), None)
    if close is None or location is None or (close + 1 < len(chunk) and words[close + 1] == "AS"):
        return None
    files = [t.text for t in chunk[location:close] if t.token_type == TokenType.STRING]
    parsed = dialect.parser(error_level=ErrorLevel.IMMEDIATE).parse(chunk[:at], sql)
    statement = parsed[0] if parsed else None
    if not isinstance(statement, exp.Create) or not files:
        return None
    properties = statement.args.get("properties") or exp.Properties(expressions=[])
    for f in files:
        properties.append("expressions", exp.LocationProperty(this=exp.Literal.string(f)))
    statement.set("properties", properties)
    return [statement]


def _external_stage_table(chunk: list[Token], sql: str) -> list[exp.Expr] | None:
    """Snowflake's `CREATE [OR REPLACE] EXTERNAL TABLE t […] WITH LOCATION = @stage/path …`: a
    name for the staged files."""
    words = [t.text.upper() if t.token_type not in _QUOTED else "" for t in chunk]
    i = 3 if words[1:3] == ["OR", "REPLACE"] else 1
    if words[i : i + 2] != ["EXTERNAL", "TABLE"]:
        return None
    i += 2
    if words[i : i + 3] == ["IF", "NOT", "EXISTS"]:
        i += 3
    table, _ = _table_at(chunk, i)
    at = next(
        (j for j in range(i, len(words) - 2) if words[j : j + 2] == ["LOCATION", "="]),
        None,
    )
    if table is None or at is None:
        return None
    first = at + 2
    end = first + 1
    # The location runs on until the next option's name (TYPE = …, FILE_FORMAT = …).
    while end < len(chunk) and not (end + 1 < len(chunk) and chunk[end + 1].token_type == TokenType.EQ):
        end += 1
    location = sql[chunk[first].start : chunk[end - 1].end + 1].strip()
    properties = exp.Properties(
        expressions=[exp.ExternalProperty(), exp.LocationProperty(this=exp.Literal.string(location))]
    )
    return [exp.Create(this=table, kind="TABLE", properties=properties)]


def _alter_update(chunk: list[Token], sql: str) -> list[exp.Expr] | None:
    """ClickHouse's mutation `ALTER TABLE t UPDATE a = x WHERE …`: an UPDATE of t."""
    words = [t.text.upper() if t.token_type not in _QUOTED else "" for t in chunk]
    if words[1:2] != ["TABLE"]:
        return None
    table, after = _table_at(chunk, 2)
    if table is None or after >= len(chunk) or words[after] != "UPDATE":
        return None
    update = chunk[after]
    set_ = Token(TokenType.SET, "SET", update.line, update.col, update.start, update.end)
    tokens = [update, *chunk[2:after], set_, *chunk[after + 1 :]]
    statement = get_dialect(None).parser(error_level=ErrorLevel.IMMEDIATE).parse(tokens, sql)[0]
    return [statement] if isinstance(statement, exp.Update) else None
