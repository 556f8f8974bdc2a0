"""Split a SQL script into statements and parse each alone, so a bad statement costs only itself.

Statements inside procedures and blocks are split out of them first (see `blocks`).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlglot import exp
from sqlglot.errors import ParseError
from sqlglot.tokenizer_core import Token, TokenType

from headwater.sql_lineage.blocks import split_statements, without_client_delimiters
from headwater.sql_lineage.dialects import (
    HeadwaterAthena,
    get_dialect,
    readable_tokens,
    statement_parser,
)
from headwater.sql_lineage.model import SqlError, located
from headwater.sql_lineage.rewrites import moves_data, normalize, rewrite_statement

if TYPE_CHECKING:
    from sqlglot.dialects.dialect import Dialect
    from sqlglot.parser import Parser

# sqlglot logs a warning for each statement it keeps as an opaque Command: a script of 6,500
# `CREATE TASK … AS INSERT …` wrote 6,500 lines (720 KB) to the server's log. What such a statement
# means for lineage is in the result's errors and warnings (the run's, at ingest), so only sqlglot's
# errors reach the log.
logging.getLogger("sqlglot").setLevel(logging.ERROR)

# Statements sqlglot leaves as an opaque Command although they move data: lineage would be
# silently missing, so they are reported instead of skipped like SET or GRANT.
_WRITING_COMMANDS = {"INSERT", "UPDATE", "DELETE", "MERGE", "CREATE", "REPLACE", "COPY", "UNLOAD"}

# Tokens a query may start with: sqlglot parses queries as expressions, not as statements. A
# parenthesis may open a query or an expression, so what follows it decides.
_QUERY_STARTS = {TokenType.SELECT, TokenType.WITH, TokenType.FROM, TokenType.VALUES, TokenType.TABLE}

# sqlglot puts a token's repr in some messages, and a class's in others; users need only a word.
_TOKEN_REPR = re.compile(
    r"<Token token_type: [^,]+, text: (.*?), line: \d+, col: \d+, start: \d+, end: \d+, "
    r"comments: \[.*?\]>"
)
_CLASS_REPR = re.compile(r"<class '(?:\w+\.)*(\w+)'>")
_EXPECTING = re.compile(r"^Expecting (\S+)$")
_CTE_WITHOUT_STATEMENT = "Failed to parse any statement following CTE"
_EXPECTED_NAME = re.compile(r"^Expected (table name|database name) but got ")


@dataclass(slots=True)
class ParsedScript:
    """The statements of a script that parsed, in order, and an error for each that did not."""

    sql: str
    statements: list[exp.Expr] = field(default_factory=list)
    errors: list[SqlError] = field(default_factory=list)
    # What was understood only in part: calls, dynamic SQL, bodies in other languages.
    warnings: list[SqlError] = field(default_factory=list)
    # The first token of the SQL each statement was parsed from, to locate it later.
    firsts: list[Token] = field(default_factory=list)
    # Loop queries (by statement index) and the record variables their rows are read through.
    records: dict[int, set[str]] = field(default_factory=dict)
    # The variables and parameters declared where each statement runs (by statement index).
    variables: dict[int, frozenset[str]] = field(default_factory=dict)

    def add(self, statements: list[exp.Expr], first: Token) -> None:
        self.statements.extend(statements)
        self.firsts.extend([first] * len(statements))

    def statement_warning(self, index: int, message: str) -> SqlError:
        """A warning about statement `index`, located at its first word."""
        return _at(self.firsts[index], self.sql, message)

    def lineage_failure(self, index: int) -> SqlError:
        """The error to report when the lineage of a statement that parsed cannot be derived."""
        first = self.firsts[index]
        return _at(first, self.sql, f"cannot derive the lineage of the {first.text.upper()} statement")


def parse_script(sql: str, dialect: str | None) -> ParsedScript:
    """Parse every statement of `sql`, keeping the ones that parse and locating the others."""
    sql = without_client_delimiters(sql)
    result = ParsedScript(sql)
    target = get_dialect(dialect)
    tokens, unreadable = readable_tokens(sql, target)
    if unreadable is not None:
        result.errors.append(unreadable)
    parser = statement_parser(target)
    flattened = split_statements(tokens, sql, target)
    result.warnings = flattened.warnings
    result.errors.extend(flattened.errors)
    for index, chunk in enumerate(flattened.statements):
        before = len(result.statements)
        _parse_chunk(chunk, sql, target, parser, result)
        if index in flattened.records and len(result.statements) == before + 1:
            result.records[before] = flattened.records[index]
        if index in flattened.variables:
            for statement in range(before, len(result.statements)):
                result.variables[statement] = flattened.variables[index]
    return result


def _parse_chunk(
    chunk: list[Token], sql: str, dialect: Dialect, parser: Parser, result: ParsedScript
) -> None:
    chunk = normalize(chunk, dialect)
    if isinstance(dialect, HeadwaterAthena):
        chunk = dialect.engine_tokens(chunk, sql)
    first = _first(chunk)
    statement, failure = _parse(chunk, sql, dialect, parser)
    if failure is not None or isinstance(statement, exp.Command):
        rewritten = rewrite_statement(chunk, sql, dialect)
        if rewritten is not None:
            result.add(rewritten, first)
            return
    if failure is not None:
        result.errors.append(failure)
    elif isinstance(statement, exp.Command):
        command = str(statement.this).upper()
        if command in _WRITING_COMMANDS or (command == "ALTER" and moves_data(chunk)):
            message = f"unsupported form of {first.text.upper()} statement"
            result.errors.append(_at(first, sql, message))
    elif statement is not None:
        result.add([statement], first)


def _parse(
    chunk: list[Token], sql: str, dialect: Dialect, parser: Parser
) -> tuple[exp.Expr | None, SqlError | None]:
    """The statement of a chunk, or why it is not one."""
    first = _first(chunk)
    statement: exp.Expr | None = None
    failure: SqlError | None = None
    try:
        parsed = parser.parse(chunk, sql)
        statement = parsed[0] if parsed else None
    except ParseError as error:
        failure = _parse_error(error, chunk, sql, parser)
    except Exception:
        failure = _at(first, sql, f"cannot parse the {first.text.upper()} statement")
    if statement is None and failure is None:
        failure = _at(first, sql, f"cannot parse the {first.text.upper()} statement")
    if (
        _starts_statement(first, dialect, parser)
        or isinstance(statement, exp.Query)
        or (failure is not None and first.token_type == TokenType.L_PAREN)
    ):
        return statement, failure
    # sqlglot reads any expression as a statement (`selec oops` is the column `selec` aliased
    # `oops`), and its errors would point past the misspelt keyword that causes them.
    return None, _at(first, sql, f"unrecognized statement {_quote(first.text)}")


def _first(chunk: list[Token]) -> Token:
    """The first word of a statement, after the marker that makes Athena parse it as Hive."""
    return chunk[1] if chunk[0].token_type == TokenType.HIVE_TOKEN_STREAM else chunk[0]


def _starts_statement(token: Token, dialect: Dialect, parser: Parser) -> bool:
    return (
        token.token_type in parser.STATEMENT_PARSERS
        or token.token_type in dialect.tokenizer_class.COMMANDS
        or token.token_type in _QUERY_STARTS
        or token.text.upper() == "WHILE"
    )


def _at(token: Token, sql: str, message: str) -> SqlError:
    return located(message, sql, token.start, token.text)


def _quote(text: str) -> str:
    """SQL text for a message: one line, short, control characters escaped."""
    line = text.strip().split("\n", 1)[0]
    shown = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in line[:40])
    return f"'{shown}…'" if len(line) > 40 or line != text.strip() else f"'{shown}'"


def _parse_error(error: ParseError, chunk: list[Token], sql: str, parser: Parser) -> SqlError:
    """sqlglot's error in words a person can act on, at the start of the token it stopped at."""
    first = error.errors[0] if error.errors else {}
    line, col = first.get("line"), first.get("col")
    # sqlglot locates an error by the line and last column of a token of the statement.
    token = next((t for t in chunk if t.line == line and t.col == col), chunk[-1])
    description = _TOKEN_REPR.sub(r"\1", str(first.get("description") or ""))
    # With nothing left to read, sqlglot blames the last token: the statement is cut short.
    ended = token is chunk[-1] and (
        parser._curr is None or parser._curr.token_type == TokenType.SENTINEL
    )
    expected = _expected(description)
    text = _quote(token.text)
    if description == _CTE_WITHOUT_STATEMENT:
        message = f"no statement after the WITH clause that ends with {text}"
    elif ended and expected:
        message = f"expected {expected}, but the statement ends after {text}"
    elif ended:
        message = f"the statement ends too early, after {text}"
    elif expected:
        message = f"expected {expected} but found {text}"
    elif description.startswith(("Required keyword", "Invalid expression")):
        message = f"unexpected {text}"
    else:
        detail = _CLASS_REPR.sub(r"\1", description)
        if detail[1:2].islower():
            detail = detail[0].lower() + detail[1:]
        message = f"{detail}, near {text}"
    return located(message, sql, token.start, token.text)


def _expected(description: str) -> str | None:
    """What sqlglot's message says it expected, if it says so in a form worth repeating."""
    if match := _EXPECTING.match(description):
        return f"'{match.group(1)}'" if len(match.group(1)) == 1 else match.group(1)
    if match := _EXPECTED_NAME.match(description):
        return f"a {match.group(1)}"
    return None
