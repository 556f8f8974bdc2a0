"""Split a SQL script into statements and parse each alone, so a bad statement costs only itself."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlglot import exp
from sqlglot.errors import ErrorLevel, ParseError, TokenError
from sqlglot.tokenizer_core import Token, TokenType

from headwater.sql_lineage.dialects import get_dialect
from headwater.sql_lineage.model import SqlError
from headwater.sql_lineage.rewrites import rewrite_statement

if TYPE_CHECKING:
    from sqlglot.dialects.dialect import Dialect
    from sqlglot.parser import Parser

# Statements sqlglot leaves as an opaque Command although they move data: lineage would be
# silently missing, so they are reported instead of skipped like SET or GRANT.
_WRITING_COMMANDS = {"INSERT", "UPDATE", "DELETE", "MERGE", "CREATE", "REPLACE", "COPY", "UNLOAD"}

_MISSING_DELIMITER = re.compile(r"from (\d+):(\d+)$")
# sqlglot puts a token's repr in some messages; users need only its text.
_TOKEN_REPR = re.compile(
    r"<Token token_type: [^,]+, text: (.*?), line: \d+, col: \d+, start: \d+, end: \d+, "
    r"comments: \[.*?\]>"
)


@dataclass(slots=True)
class ParsedScript:
    """The statements of a script that parsed, in order, and an error for each that did not."""

    statements: list[exp.Expr] = field(default_factory=list)
    errors: list[SqlError] = field(default_factory=list)


def parse_script(sql: str, dialect: str | None) -> ParsedScript:
    """Parse every statement of `sql`, keeping the ones that parse and locating the others."""
    result = ParsedScript()
    target = get_dialect(dialect)
    tokens = _tokenize(sql, target, result.errors)
    parser = target.parser(error_level=ErrorLevel.IMMEDIATE)
    for chunk in _split(tokens):
        _parse_chunk(chunk, sql, target, parser, result)
    return result


def _tokenize(sql: str, dialect: Dialect, errors: list[SqlError]) -> list[Token]:
    try:
        return dialect.tokenize(sql)
    except TokenError as error:
        offset = _token_error_offset(error, len(sql))
        errors.append(_located(f"Cannot tokenize: {error.__cause__ or error}", sql, offset))
        # The statements before the bad one still count: tokenize up to it and drop the
        # statement it interrupts.
        try:
            head = dialect.tokenize(sql[:offset])
        except TokenError:
            return []
        last = max((i for i, t in enumerate(head) if t.token_type == TokenType.SEMICOLON), default=-1)
        return head[: last + 1]


def _token_error_offset(error: TokenError, size: int) -> int:
    match = _MISSING_DELIMITER.search(str(error.__cause__ or ""))
    if match:
        return int(match.group(2))
    return min(error.end if error.end is not None else size, size)


def _located(message: str, sql: str, offset: int) -> SqlError:
    line = sql.count("\n", 0, offset) + 1
    col = offset - sql.rfind("\n", 0, offset)
    return SqlError(message=message, line=line, col=col, highlight=sql[offset : offset + 20] or None)


def _split(tokens: list[Token]) -> list[list[Token]]:
    chunks: list[list[Token]] = [[]]
    for i, token in enumerate(tokens):
        if token.token_type == TokenType.SEMICOLON or _is_batch_separator(tokens, i):
            chunks.append([])
        else:
            chunks[-1].append(token)
    return [chunk for chunk in chunks if chunk]


def _is_batch_separator(tokens: list[Token], i: int) -> bool:
    """T-SQL's GO, alone on its line, ends a batch like a semicolon ends a statement."""
    token = tokens[i]
    if token.text.upper() != "GO" or token.token_type in (TokenType.STRING, TokenType.IDENTIFIER):
        return False
    before = tokens[i - 1].line if i > 0 else 0
    after = tokens[i + 1].line if i + 1 < len(tokens) else token.line + 1
    return before < token.line < after


def _parse_chunk(
    chunk: list[Token], sql: str, dialect: Dialect, parser: Parser, result: ParsedScript
) -> None:
    failure: SqlError | None = None
    statement: exp.Expr | None = None
    try:
        parsed = parser.parse(chunk, sql)
        statement = parsed[0] if parsed else None
    except ParseError as error:
        failure = _parse_error(error)
    except Exception:
        failure = _at(chunk[0], "Cannot parse statement")
    if failure is None and statement is None:
        failure = _at(chunk[0], "Cannot parse statement")

    if failure is not None or isinstance(statement, exp.Command):
        rewritten = rewrite_statement(chunk, sql, dialect)
        if rewritten is not None:
            result.statements.extend(rewritten)
            return
    if failure is not None:
        result.errors.append(failure)
    elif isinstance(statement, exp.Command):
        if str(statement.this).upper() in _WRITING_COMMANDS:
            message = f"Unsupported syntax in {chunk[0].text.upper()} statement"
            result.errors.append(_at(chunk[0], message))
    elif statement is not None:
        result.statements.append(statement)


def _at(token: Token, message: str) -> SqlError:
    """An error located at a token, the way sqlglot locates its own (column of its last character)."""
    return SqlError(message=message, line=token.line, col=token.col, highlight=token.text)


def _parse_error(error: ParseError) -> SqlError:
    if not error.errors:
        return SqlError(message=str(error))
    first = error.errors[0]
    return SqlError(
        message=_TOKEN_REPR.sub(r"\1", str(first.get("description") or error)),
        line=first.get("line"),
        col=first.get("col"),
        highlight=first.get("highlight"),
    )
