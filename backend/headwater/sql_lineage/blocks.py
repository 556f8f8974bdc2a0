"""Procedures and scripted blocks, flattened into the statements they run.

T-SQL, PL/SQL, PL/pgSQL, BigQuery and Snowflake scripting wrap statements in control flow
(BEGIN … END, IF … THEN, loops, exception handlers) and declarations. The lineage of a body is
that of every statement in it, whichever branch runs, so the control flow is dropped: each
statement is kept, a condition, declaration or assignment is kept for the queries it runs (their
tables are inputs), and a body given as a string (`AS $$ … $$`, `EXECUTE IMMEDIATE '…'`) is read
as SQL of the same dialect. What cannot be followed (a called procedure, dynamic SQL built at run
time, a body in JavaScript) is a warning, never a silent gap.

Inside a body, `SELECT … INTO v` assigns variables (T-SQL's creates a table) and T-SQL needs no
semicolons between statements: a statement ends where a word that can only start the next one
begins.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlglot.dialects.bigquery import BigQuery
from sqlglot.dialects.tsql import TSQL
from sqlglot.tokenizer_core import Token, TokenType

from headwater.sql_lineage.dialects import position_of, readable_tokens, tokens_moved_to
from headwater.sql_lineage.model import SqlError
from headwater.sql_lineage.rewrites import matching_paren

if TYPE_CHECKING:
    from sqlglot.dialects.dialect import Dialect

_STRINGS = {
    TokenType.STRING,
    TokenType.RAW_STRING,
    TokenType.HEREDOC_STRING,
    TokenType.NATIONAL_STRING,
}
_QUERY_WORDS = {"SELECT", "WITH"}
_ROUTINES = {"PROCEDURE", "PROC", "FUNCTION", "TRIGGER", "PACKAGE", "EVENT"}
_PARAMETER_MODES = {"IN", "OUT", "INOUT", "VARIADIC"}
# Words that end a routine's header, before its body.
_HEADER_ENDS = {"AS", "IS", "BEGIN", "RETURNS", "RETURN", "LANGUAGE"}
# Declarations of other things than variables.
_NOT_VARIABLES = {"CURSOR", "TYPE", "SUBTYPE", "PRAGMA", "PROCEDURE", "FUNCTION", "EXCEPTION"}
# Words after END that close a construct: END IF, END LOOP, END TRY …
_ENDED = {"IF", "LOOP", "WHILE", "FOR", "CASE", "TRY", "CATCH", "REPEAT"}
# A condition runs up to the word that opens its branch.
_BRANCHES = {"THEN", "LOOP", "DO"}
# Statements that move no data but may run queries (RETURN (SELECT …), ASSERT (SELECT …) > 0).
_NO_WRITES = {
    "RETURN",
    "PRINT",
    "RAISE",
    "RAISERROR",
    "THROW",
    "SIGNAL",
    "RESIGNAL",
    "BREAK",
    "LEAVE",
    "ITERATE",
    "CONTINUE",
    "EXIT",
    "GOTO",
    "GET",
    "ASSERT",
    "OPEN",
    "FETCH",
    "CLOSE",
    "DEALLOCATE",
    "NULL",
    "LET",
    "WAITFOR",
}
# Calls that refresh materialized views named in their first argument.
_REFRESH_CALLS = {
    "DBMS_MVIEW.REFRESH",
    "DBMS_SNAPSHOT.REFRESH",
    "BQ.REFRESH_MATERIALIZED_VIEW",
}
# Oracle's system packages write no tables a lineage graph shows.
_SYSTEM_CALL = re.compile(r"^(dbms_|utl_|apex_|raise_application_error$)", re.IGNORECASE)
_SQL_LANGUAGES = {"sql", "plpgsql", "plsql", "tsql"}
# Words some dialects' tokenizers read as an opaque command, taking the rest of the statement as
# one string (REFRESH MATERIALIZED VIEW writes the view, RENAME moves a table's rows).
_COMMAND_BLOCKS = {
    "BEGIN",
    "DO",
    "DECLARE",
    "EXECUTE",
    "EXEC",
    "CALL",
    "END",
    "FETCH",
    "EXCEPTION",
    "REFRESH",
    "RENAME",
}
# BEGIN followed by these starts a transaction, not a block.
_TRANSACTION = {"TRAN", "TRANSACTION", "WORK", "DISTRIBUTED", "ISOLATION", "READ"}

# T-SQL: words that start a statement, and words after which none of them does.
_TSQL_STARTS = {
    "INSERT",
    "UPDATE",
    "DELETE",
    "MERGE",
    "SELECT",
    "WITH",
    "CREATE",
    "ALTER",
    "DROP",
    "TRUNCATE",
    "DECLARE",
    "SET",
    "IF",
    "ELSE",
    "WHILE",
    "BEGIN",
    "END",
    "EXEC",
    "EXECUTE",
    "PRINT",
    "RETURN",
    "RAISERROR",
    "THROW",
    "OPEN",
    "FETCH",
    "CLOSE",
    "DEALLOCATE",
    "BREAK",
    "CONTINUE",
    "GOTO",
    "COMMIT",
    "ROLLBACK",
    "SAVE",
    "WAITFOR",
    "USE",
    "GRANT",
}
_TSQL_CONTINUES_AFTER = {
    "UNION",
    "INTERSECT",
    "EXCEPT",
    "ALL",
    "DISTINCT",
    "AS",
    "FOR",
    "THEN",
    "ON",
    "AFTER",
    "OF",
    "OR",
    "INTO",
    "FROM",
    "BY",
    "WITH",
    "NOT",
    "TO",
    "IS",
    "AND",
    "IN",
    "WHEN",
    "ROWS",
    "ROW",
    "BULK",
    "GRANT",
    "DELETE",
    "UPDATE",
    "INSERT",
}
_TSQL_OPERATORS = {
    TokenType.COMMA,
    TokenType.DOT,
    TokenType.PARAMETER,
    TokenType.EQ,
    TokenType.NEQ,
    TokenType.LT,
    TokenType.GT,
    TokenType.LTE,
    TokenType.GTE,
    TokenType.PLUS,
    TokenType.DASH,
    TokenType.STAR,
    TokenType.SLASH,
}
_DML = {"INSERT", "UPDATE", "DELETE", "MERGE", "SELECT"}
_STATEMENT_WORDS = _DML | {"WITH", "CREATE", "ALTER", "DROP", "TRUNCATE", "COMMIT", "ROLLBACK"}


# Tokens that are never a keyword, whatever their text.
_NOT_WORDS = {*_STRINGS, TokenType.IDENTIFIER}


def _word(token: Token) -> str:
    return "" if token.token_type in _NOT_WORDS else token.text.upper()


@dataclass(slots=True)
class Flattened:
    """The statements of a script to parse, in order, with the control flow of blocks dropped.

    `records` maps a statement (its index in `statements`) that is the query of a loop to the
    names of the loop's record variables: `r.id` in the loop's body is column `id` of that query.
    """

    statements: list[list[Token]]
    warnings: list[SqlError]
    records: dict[int, set[str]] = field(default_factory=dict)
    # Bodies and dynamic SQL that cannot be read (a quote never closed): what is wrong, and where.
    errors: list[SqlError] = field(default_factory=list)
    # The variables (lower-cased) declared where each statement runs (by index in `statements`):
    # a bare name in its query that is one of these is the variable rather than a column, unless a
    # table is known to have such a column.
    variables: dict[int, frozenset[str]] = field(default_factory=dict)


def split_statements(tokens: list[Token], sql: str, dialect: Dialect) -> Flattened:
    """The statements to parse, in order, with the control flow of blocks dropped, and warnings."""
    flattener = _Flattener(sql, dialect)
    flattener.script(flattener.client_commands(tokens))
    return Flattened(
        flattener.out,
        flattener.warnings,
        records=flattener.records,
        variables=flattener.scopes,
        errors=flattener.errors,
    )


def without_client_delimiters(sql: str) -> str:
    """A script with the mysql client's `DELIMITER //` lines blanked and each `//` after them
    made a semicolon, at the same offsets so that positions still point into the script."""
    if not _DELIMITER_LINE.search(sql):
        return sql
    out: list[str] = []
    delimiter = ";"
    for line in sql.splitlines(keepends=True):
        match = _DELIMITER_LINE.match(line)
        if match:
            delimiter = match.group(1)
            out.append(re.sub(r"[^\n]", " ", line))
        else:
            out.append(_replace_unquoted(line, delimiter) if delimiter != ";" else line)
    return "".join(out)


_DELIMITER_LINE = re.compile(r"^[ \t]*DELIMITER[ \t]+(\S+)[ \t]*$", re.IGNORECASE | re.MULTILINE)


def _replace_unquoted(line: str, delimiter: str) -> str:
    """`line` with `delimiter` outside quotes and comments replaced by `;` and spaces."""
    out = []
    i = 0
    quote = ""
    while i < len(line):
        char = line[i]
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"`":
            quote = char
        elif line.startswith("--", i) or char == "#":
            out.append(line[i:])
            break
        elif line.startswith(delimiter, i):
            out.append(";" + " " * (len(delimiter) - 1))
            i += len(delimiter)
            continue
        out.append(char)
        i += 1
    return "".join(out)


def _split(tokens: list[Token]) -> list[list[Token]]:
    semicolon = TokenType.SEMICOLON
    ends = [
        i
        for i, token in enumerate(tokens)
        # Only a two-letter word can be GO.
        if token.token_type == semicolon or (len(token.text) == 2 and _is_batch_separator(tokens, i))
    ]
    chunks: list[list[Token]] = []
    start = 0
    for end in [*ends, len(tokens)]:
        if end > start:
            chunks.append(tokens[start:end])
        start = end + 1
    return chunks


def _is_batch_separator(tokens: list[Token], i: int) -> bool:
    """T-SQL's GO, alone on its line, ends a batch like a semicolon ends a statement."""
    token = tokens[i]
    if token.text.upper() != "GO" or token.token_type in (TokenType.STRING, TokenType.IDENTIFIER):
        return False
    before = tokens[i - 1].line if i > 0 else 0
    after = tokens[i + 1].line if i + 1 < len(tokens) else token.line + 1
    return before < token.line < after


def _find(tokens: list[Token], words: set[str], start: int = 0) -> int | None:
    """The first of `words` outside parentheses and CASE … END, from `start`."""
    depth = 0
    cases = 0
    for i in range(start, len(tokens)):
        kind = tokens[i].token_type
        if kind == TokenType.L_PAREN:
            depth += 1
        elif kind == TokenType.R_PAREN:
            depth -= 1
        elif depth == 0:
            word = _word(tokens[i])
            if word == "CASE":
                cases += 1
            elif word == "END" and cases:
                cases -= 1
            elif word in words and not cases:
                return i
    return None


@dataclass
class _Flattener:
    sql: str
    dialect: Dialect
    out: list[list[Token]] = field(default_factory=list)
    warnings: list[SqlError] = field(default_factory=list)
    errors: list[SqlError] = field(default_factory=list)
    # Inside a procedure body or block: control words, assignments and calls are understood.
    procedural: bool = False
    # In a declaration section (after DECLARE or a routine's AS/IS, before BEGIN).
    declaring: bool = False
    # The statement (index in `out`) of each loop's query: the names of its record variables.
    records: dict[int, set[str]] = field(default_factory=dict)
    # The statement of each declared cursor's query, by the cursor's lower-cased name.
    cursors: dict[str, int] = field(default_factory=dict)
    # Declared variables and routine parameters in scope, lower-cased; and for each statement
    # (index in `out`) those in scope where it runs.
    variables: set[str] = field(default_factory=set)
    scopes: dict[int, frozenset[str]] = field(default_factory=dict)

    @property
    def _tsql(self) -> bool:
        return isinstance(self.dialect, TSQL)

    def script(self, tokens: list[Token]) -> None:
        """Flatten the statements of a script or body."""
        for chunk in _split(tokens):
            chunk = self._uncommand(chunk)
            for statement in self._tsql_statements(chunk) if self._tsql else [chunk]:
                self._piece(statement)

    def client_commands(self, tokens: list[Token]) -> list[Token]:
        """psql's backslash commands, which end at the end of their line: `\\copy` is COPY run by
        the client (a statement of its own), `\\i file` runs another script (a warning), the
        others change no table."""
        if "\\" not in self.sql:
            return tokens
        out: list[Token] = []
        i = 0
        while i < len(tokens):
            token = tokens[i]
            if token.token_type != TokenType.BACKSLASH or i + 1 >= len(tokens):
                out.append(token)
                i += 1
                continue
            end = i + 1
            while end < len(tokens) and tokens[end].line == token.line:
                end += 1
            command = tokens[i + 1].text.lower()
            if command == "copy":
                last = tokens[end - 1]
                ending = Token(TokenType.SEMICOLON, ";", last.line, last.col, last.end, last.end)
                out.extend([tokens[i + 1], *tokens[i + 2 : end], ending])
            elif command in {"i", "ir", "include", "include_relative"}:
                self._warn(token, "a script run by the client: its lineage is not derived")
            i = end
        return out

    def _warn(self, token: Token, message: str) -> None:
        line = self.sql.count("\n", 0, token.start) + 1
        col = token.start - self.sql.rfind("\n", 0, token.start)
        self.warnings.append(SqlError(message, line, col, token.text))

    # Tokens ------------------------------------------------------------------------------

    def _tokens_at(self, start: int, text: str) -> list[Token]:
        """`text`, found at offset `start` of the SQL, as tokens located in the SQL; when a token
        of it cannot be read, an error located there and the tokens of the statements before."""
        line, col = position_of(self.sql, start)
        tokens, unreadable = readable_tokens(text, self.dialect)
        if unreadable is not None and unreadable.line is not None and unreadable.col is not None:
            self.errors.append(
                SqlError(
                    unreadable.message,
                    unreadable.line + line,
                    unreadable.col + col if unreadable.line == 1 else unreadable.col,
                    unreadable.highlight,
                )
            )
        return tokens_moved_to(tokens, self.sql, start)

    def _uncommand(self, chunk: list[Token]) -> list[Token]:
        """A statement sqlglot's tokenizer kept as one string after a word, in tokens.

        Some dialects read BEGIN, DO, DECLARE or EXECUTE at the start of a statement (or after
        BEGIN) as an opaque command and the rest of the statement as a single string; the block
        inside must be read word by word.
        """
        if (
            len(chunk) >= 2
            and chunk[-1].token_type == TokenType.STRING
            and _word(chunk[-2]) in _COMMAND_BLOCKS
            and chunk[-2].token_type in self.dialect.tokenizer_class.COMMANDS
        ):
            start = chunk[-2].end + 1
            return [*chunk[:-1], *self._tokens_at(start, self.sql[start : chunk[-1].end + 1])]
        return chunk

    def _body(self, token: Token) -> None:
        """The statements of a body given as a string: `$$ … $$`, `$tag$ … $tag$`, `'…'`."""
        text = self.sql[token.start : token.end + 1]
        quote = re.match(r"\$\w*\$|[Nn]?'", text)
        start = token.start + (quote.end() if quote else 0)
        saved = (self.procedural, self.declaring)
        self.procedural, self.declaring = True, False
        try:
            self.script(self._tokens_at(start, token.text))
        finally:
            self.procedural, self.declaring = saved

    # Pieces ------------------------------------------------------------------------------

    def _piece(self, tokens: list[Token]) -> None:
        """Drop the control words a statement starts with, and keep what it runs."""
        if tokens[0].token_type == TokenType.SLASH:
            # SQL*Plus runs a PL/SQL block with / on a line of its own: the block is over.
            self.procedural = self.declaring = False
            tokens = tokens[1:]
        while tokens:
            word = _word(tokens[0])
            rest = self._control(word, tokens)
            if rest is None:
                self._statement(tokens)
                return
            tokens = rest

    def _control(self, word: str, tokens: list[Token]) -> list[Token] | None:
        """What is left of `tokens` after the control words at its start; None: a statement."""
        handler = _CONTROL.get(word)
        if handler is not None:
            rest = handler(self, tokens)
            if rest is not None:
                return rest
        if not self.procedural:
            return None
        return self._procedural(word, tokens)

    def _begin(self, tokens: list[Token]) -> list[Token] | None:
        second = _word(tokens[1]) if len(tokens) > 1 else ""
        if not second or second in _TRANSACTION:
            return []  # a transaction: no lineage
        self.procedural, self.declaring = True, False
        return tokens[2:] if second in {"TRY", "CATCH", "ATOMIC"} else tokens[1:]

    def _end(self, tokens: list[Token]) -> list[Token] | None:
        if not self.procedural and len(tokens) == 1:
            return None  # Redshift's END: a COMMIT
        rest = tokens[2:] if len(tokens) > 1 and _word(tokens[1]) in _ENDED else tokens[1:]
        # END name; closes a named PL/SQL routine or a labelled block.
        return rest[1:] if len(rest) == 1 and rest[0].token_type == TokenType.VAR else rest

    def _do(self, tokens: list[Token]) -> list[Token] | None:
        if len(tokens) > 1 and tokens[1].token_type in _STRINGS:
            # PostgreSQL's DO $$ … $$ [LANGUAGE l]: an anonymous block
            if not self._other_language(tokens, "this block"):
                self._body(tokens[1])
            return []
        return tokens[1:] if self.procedural else None  # WHILE … DO

    def _execute(self, tokens: list[Token]) -> list[Token] | None:
        self._call(tokens)
        return []

    def _condition(self, tokens: list[Token]) -> list[Token] | None:
        """IF, ELSIF, WHILE, UNTIL and WHEN: the condition's queries, then the branch."""
        word = _word(tokens[0])
        if word == "WHEN" and not self.procedural:
            return None
        self.procedural = True
        branch = _find(tokens, _BRANCHES | ({"END"} if word == "UNTIL" else set()), 1)
        self._reads(tokens[1:branch])
        return [] if branch is None else tokens[branch + 1 :]

    def _opening(self, tokens: list[Token]) -> list[Token] | None:
        """ELSE, LOOP, REPEAT, EXCEPTION open a branch; CASE x WHEN … a CASE statement."""
        if not self.procedural:
            return None
        if _word(tokens[0]) != "CASE":
            return tokens[1:]
        branch = _find(tokens, {"WHEN"}, 1)
        return [] if branch is None else tokens[branch:]

    def _declare(self, tokens: list[Token]) -> list[Token] | None:
        if _find(tokens, {"CURSOR"}) is None:
            # Oracle, PostgreSQL and Snowflake declare a section of variables until BEGIN;
            # T-SQL and BigQuery declare one statement at a time.
            self.procedural = True
            self.declaring = not self._tsql and not isinstance(self.dialect, BigQuery)
        self._declaration(tokens, 1)
        return []

    def _set(self, tokens: list[Token]) -> list[Token] | None:
        if not any(_word(t) in _QUERY_WORDS for t in tokens):
            return None
        self._reads(tokens[1:])  # SET @x = (SELECT …)
        return []

    def _perform(self, tokens: list[Token]) -> list[Token] | None:
        if not self.procedural:
            return None
        self._reads(tokens[1:], query=True)  # PL/pgSQL's PERFORM: a SELECT, result unused
        return []

    def _for(self, tokens: list[Token]) -> list[Token] | None:
        # Outside a block, FOR x IN … DO is BigQuery scripting; FOR alone may be T-SQL's FOR XML.
        loop = (
            len(tokens) > 3 and _word(tokens[2]) == "IN" and _find(tokens, {"LOOP", "DO"}, 3) is not None
        )
        if not (self.procedural or loop):
            return None
        self.procedural = True
        return self._loop(tokens)

    def _procedural(self, word: str, tokens: list[Token]) -> list[Token] | None:
        """Labels, assignments, declarations and bare calls, which only blocks have."""
        kind = tokens[0].token_type
        second = tokens[1] if len(tokens) > 1 else None
        if kind == TokenType.VAR and second is not None and second.token_type == TokenType.COLON:
            return tokens[2:]  # label: LOOP
        if kind == TokenType.LT and len(tokens) >= 5 and tokens[1].token_type == TokenType.LT:
            return tokens[5:]  # <<label>>
        if (
            word in _NO_WRITES
            or (second is not None and second.token_type == TokenType.EQ)
            or _find(tokens, {":="}) is not None
        ):
            if word == "LET" and second is not None and second.token_type in _NAMES:
                self.variables.add(second.text.lower())
            self._reads(tokens[1:])
            return []
        if self.declaring and word not in _STATEMENT_WORDS:
            self._declaration(tokens, 1)
            return []
        if kind == TokenType.VAR and (
            second is None or second.token_type in {TokenType.DOT, TokenType.L_PAREN}
        ):
            self._bare_call(tokens)
            return []
        return None

    def _routine(self, tokens: list[Token]) -> list[Token] | None:
        """CREATE PROCEDURE/FUNCTION/TRIGGER/PACKAGE: the body, after the header, is what runs."""
        # The words before the first parenthesis, at most 8, name what is created.
        head_end = next((i for i, t in enumerate(tokens[:8]) if t.token_type == TokenType.L_PAREN), 8)
        head = {_word(t) for t in tokens[:head_end]}
        if not _ROUTINES & head:
            return None
        opening = next(
            (i for i, t in enumerate(tokens) if t.token_type == TokenType.L_PAREN),
            8,
        )
        if "EVENT" in head or ("TRIGGER" in head and _find(tokens, {"EACH"}) is not None):
            return self._event(tokens) if "EVENT" in head else self._row_trigger(tokens)
        self.variables = set()  # a routine's names are its own
        if self._other_language(tokens, "this routine"):
            return []
        for i, token in enumerate(tokens):
            if token.token_type in _STRINGS and i > 0 and _word(tokens[i - 1]) == "AS":
                self._parameters(tokens, opening)
                self._body(token)
                self.variables = set()  # the body's names end with it
                return []
        found = _find(tokens, {"AS", "IS", "BEGIN"})
        while found is not None and _word(tokens[found - 1]) == "EXECUTE":
            found = _find(tokens, {"AS", "IS", "BEGIN"}, found + 1)  # WITH EXECUTE AS OWNER
        if found is None:
            return []  # a declaration without a body (a package specification)
        body = tokens[found:] if _word(tokens[found]) == "BEGIN" else tokens[found + 1 :]
        self.procedural = True
        # PL/SQL declares the routine's variables between AS/IS and BEGIN.
        self.declaring = not self._tsql and _word(tokens[found]) != "BEGIN"
        if body and body[0].token_type == TokenType.L_PAREN:
            # A function of one expression: AS (x + 1), AS (SELECT …).
            self._reads(body)
            return []
        self._parameters(tokens, opening)
        return body

    def _other_language(self, tokens: list[Token], what: str) -> bool:
        """Whether the body of a routine or block is in another language than SQL (a warning
        says so)."""
        language = _find(tokens, {"LANGUAGE"})
        if language is None or language + 1 >= len(tokens):
            return False
        name = tokens[language + 1].text
        if name.lower() in _SQL_LANGUAGES:
            return False
        self._warn(tokens[0], f"the body of {what} is in {name}: its lineage is not derived")
        return True

    def _row_trigger(self, tokens: list[Token]) -> list[Token]:
        """`CREATE TRIGGER t {BEFORE|AFTER} … ON tbl FOR EACH ROW body` (MySQL, PostgreSQL,
        Oracle): the body runs for each changed row of tbl, which it reads through NEW and OLD."""
        on = _find(tokens, {"ON"})
        each = _find(tokens, {"EACH"})
        if on is None or each is None or each + 1 >= len(tokens):
            return []
        name_end = on + 1
        while name_end < len(tokens) and tokens[name_end].token_type in {*_NAMES, TokenType.DOT}:
            name_end += 1
        on_token = tokens[on]
        query = len(self.out)
        self._statement(
            [
                Token(
                    TokenType.SELECT, "SELECT", on_token.line, on_token.col, on_token.start, on_token.end
                ),
                Token(TokenType.STAR, "*", on_token.line, on_token.col, on_token.start, on_token.end),
                Token(TokenType.FROM, "FROM", on_token.line, on_token.col, on_token.start, on_token.end),
                *tokens[on + 1 : name_end],
            ]
        )
        self.records.setdefault(query, set()).update({"NEW", "OLD"})
        body = tokens[each + 2 :]
        if body and _word(body[0]) in {"FOLLOWS", "PRECEDES"}:
            body = body[2:]
        if (
            body
            and _word(body[0]) == "WHEN"
            and len(body) > 1
            and body[1].token_type == TokenType.L_PAREN
        ):
            close = matching_paren(body, 1)
            body = body[close + 1 :] if close is not None else []
        if len(body) > 2 and _word(body[0]) == "EXECUTE":
            self._bare_call(body[2:])  # PostgreSQL's EXECUTE FUNCTION f(): the body is elsewhere
            return []
        self.procedural = True
        return body

    def _event(self, tokens: list[Token]) -> list[Token]:
        """MySQL's `CREATE EVENT e ON SCHEDULE … DO statement | DO BEGIN … END`."""
        do = _find(tokens, {"DO"})
        if do is None:
            return []
        self.procedural = True
        return tokens[do + 1 :]

    def _parameters(self, tokens: list[Token], opening: int) -> None:
        """A routine's parameter names: each first name after `(` or `,` in its parameter list."""
        header = _find(tokens, _HEADER_ENDS)
        if opening >= len(tokens) or (header is not None and header < opening):
            return  # no parameter list: the parenthesis is in the body
        close = matching_paren(tokens, opening)
        if close is None:
            return
        expecting = True
        depth = 0
        for token in tokens[opening + 1 : close]:
            if token.token_type == TokenType.L_PAREN:
                depth += 1
            elif token.token_type == TokenType.R_PAREN:
                depth -= 1
            elif depth == 0 and token.token_type == TokenType.COMMA:
                expecting = True
            elif depth == 0 and expecting and _word(token) not in _PARAMETER_MODES:
                if token.token_type in _NAMES:
                    self.variables.add(token.text.lower())
                expecting = False

    def _loop(self, tokens: list[Token]) -> list[Token]:
        """FOR r IN (query) LOOP, FOR r IN query DO, FORALL i IN 1 .. n statement."""
        in_ = _find(tokens, {"IN"}, 1)
        if in_ is None:
            return tokens[1:]
        if _word(tokens[0]) == "FORALL":
            body = _find(tokens, {"INSERT", "UPDATE", "DELETE", "MERGE", "EXECUTE"}, in_ + 1)
            return [] if body is None else tokens[body:]
        branch = _find(tokens, {"LOOP", "DO"}, in_ + 1)
        source = tokens[in_ + 1 : branch]
        query = len(self.out)
        self._reads(source)
        if in_ == 2 and tokens[1].token_type in _NAMES:
            # FOR r IN (SELECT …) binds r to the query's rows, FOR r IN c to cursor c's.
            if len(self.out) == query + 1:
                self.records.setdefault(query, set()).add(tokens[1].text)
            elif source and source[0].token_type in _NAMES:
                cursor = self.cursors.get(source[0].text.lower())
                if cursor is not None:
                    self.records.setdefault(cursor, set()).add(tokens[1].text)
        return [] if branch is None else tokens[branch + 1 :]

    def _declaration(self, tokens: list[Token], start: int) -> None:
        """A declaration's queries; a cursor's query is remembered for the loops over it."""
        self._declared(
            tokens[start - 1 : start] if start == 1 and _word(tokens[0]) != "DECLARE" else tokens[start:]
        )
        query = len(self.out)
        self._reads(tokens[start:])
        cursor = _find(tokens, {"CURSOR"})
        if cursor is None or len(self.out) != query + 1:
            return
        name = _cursor_name(tokens, cursor)
        if name is not None:
            self.cursors[name.lower()] = query

    def _declared(self, names: list[Token]) -> None:
        """The variables a declaration names: `a, b INT64 …` (BigQuery), `v NUMBER := …`."""
        for i, token in enumerate(names):
            if _word(token) in _NOT_VARIABLES:
                return
            if token.token_type not in _NAMES or (i > 0 and names[i - 1].token_type != TokenType.COMMA):
                if i > 0:
                    return
                continue
            self.variables.add(token.text.lower())

    def _reads(self, tokens: list[Token], *, query: bool = False) -> None:
        """Keep the queries in an expression: `(SELECT …)` groups, or `SELECT …` to the end."""
        if query and tokens:
            first = tokens[0]
            select = Token(TokenType.SELECT, "SELECT", first.line, first.col, first.start, first.start)
            self._statement([select, *tokens])
            return
        i = 0
        while i < len(tokens):
            word = _word(tokens[i])
            if (
                tokens[i].token_type == TokenType.L_PAREN
                and i + 1 < len(tokens)
                and _word(tokens[i + 1]) in _QUERY_WORDS
            ):
                close = matching_paren(tokens, i)
                close = len(tokens) - 1 if close is None else close
                self._statement(tokens[i : close + 1])
                i = close + 1
            elif word == "SELECT" or (
                word == "WITH" and i + 2 < len(tokens) and _word(tokens[i + 2]) == "AS"
            ):
                self._statement(tokens[i:])
                return
            else:
                i += 1

    def _call(self, tokens: list[Token]) -> None:
        """EXECUTE IMMEDIATE 'sql', EXEC sp_executesql N'sql', EXEC('sql'): the string is SQL."""
        rest = tokens[1:]
        if len(rest) > 3 and rest[0].token_type == TokenType.PARAMETER:
            rest = rest[3:]  # EXEC @status = procedure
        first = _word(rest[0]) if rest else ""
        if first == "AS":
            return  # EXECUTE AS USER: a change of user
        if first == "SP_RENAME" and self._sp_rename(rest[1:]):
            return
        if first == "TASK" and len(rest) > 1:
            # Snowflake's EXECUTE TASK t runs the statement t was created with.
            task = "".join(t.text for t in rest[1:])
            self._warn(rest[1], f"run of task {task}: the lineage of what it runs is not derived")
            return
        # PL/pgSQL's EXECUTE always runs a string.
        dynamic = first in {"IMMEDIATE", "SP_EXECUTESQL"} or (
            self.procedural and _word(tokens[0]) == "EXECUTE" and not self._tsql
        )
        if first in {"IMMEDIATE", "SP_EXECUTESQL"}:
            rest = rest[1:]
        argument = rest[: _find(rest, {",", "INTO", "USING"})]
        at = _find(argument, {"AT"})
        if at is not None and at + 1 < len(argument):
            # EXEC ('…') AT server: SQL run on a linked server.
            server = argument[at + 1].text
            self._warn(tokens[0], f"SQL run on linked server {server}: its lineage is not derived")
            return
        if argument and argument[0].token_type == TokenType.L_PAREN:
            argument = argument[1:-1]
            dynamic = True
        if len(argument) == 1 and argument[0].token_type in _STRINGS:
            self._body(argument[0])
        elif dynamic or not argument or argument[0].token_type != TokenType.VAR:
            self._warn(tokens[0], "dynamic SQL: the lineage of the SQL it runs is not derived")
        else:
            self._bare_call(argument)

    def _bare_call(self, tokens: list[Token]) -> None:
        """A procedure called by name: what it does is not in the SQL at hand."""
        end = next(
            (i for i, t in enumerate(tokens) if t.token_type not in {TokenType.VAR, TokenType.DOT}),
            len(tokens),
        )
        name = "".join(t.text for t in tokens[:end])
        if name.upper() in _REFRESH_CALLS and self._refresh_call(tokens, end):
            return
        if name and not _SYSTEM_CALL.match(name):
            self._warn(tokens[0], f"call of {name}: the lineage of what it runs is not derived")

    def _sp_rename(self, arguments: list[Token]) -> bool:
        """T-SQL's `EXEC sp_rename 'schema.old', 'new' [, 'OBJECT']`: a table renamed, as by
        RENAME; a column's or an index's rename ('COLUMN', 'INDEX') moves no data."""
        strings = [t for t in arguments if t.token_type in _STRINGS]
        if len(strings) < 2 or len(strings) > 3:
            return False
        if len(strings) == 3:
            return strings[2].text.upper() != "OBJECT"
        old, new = strings[:2]
        first = arguments[0]
        rename = Token(TokenType.VAR, "RENAME", first.line, first.col, first.start, first.end)
        to = Token(TokenType.VAR, "TO", new.line, new.col, new.start, new.start)
        self._emit([rename, *self._string_tokens(old), to, *self._string_tokens(new)])
        return True

    def _string_tokens(self, token: Token) -> list[Token]:
        """The text of a string literal, read as SQL where it stands in the script."""
        quote = re.match(r"[Nn]?'", self.sql[token.start : token.end + 1])
        return self._tokens_at(token.start + (quote.end() if quote else 0), token.text)

    def _refresh_call(self, tokens: list[Token], end: int) -> bool:
        """`DBMS_MVIEW.REFRESH('a, b', …)`, `BQ.REFRESH_MATERIALIZED_VIEW('p.d.v')`: one REFRESH
        MATERIALIZED VIEW statement per view named in the first argument."""
        if end + 1 >= len(tokens) or tokens[end].token_type != TokenType.L_PAREN:
            return False
        names = tokens[end + 1]
        if names.token_type not in _STRINGS:
            return False
        call = tokens[0]
        words = [
            Token(TokenType.VAR, word, call.line, call.col, call.start, call.end)
            for word in ("REFRESH", "MATERIALIZED", "VIEW")
        ]
        offset = self.sql.find(names.text, names.start)
        offset = offset if offset >= 0 else names.start
        position = 0
        for part in names.text.split(","):
            stripped = part.strip()
            if stripped:
                start = offset + position + part.index(stripped)
                self.out.append([*words, *self._tokens_at(start, stripped)])
            position += len(part) + 1
        return True

    def _statement(self, tokens: list[Token]) -> None:
        if self.procedural and not self._tsql:
            tokens = _without_into_variables(tokens)
        if self._tsql and _word(tokens[0]) == "INSERT":
            # INSERT INTO t EXEC proc: the rows come from what the procedure runs.
            call = _find(tokens, {"EXEC", "EXECUTE"})
            if call is not None:
                remote = _find(tokens, {"AT"}, call) is not None
                query = None if remote else self._exec_query(tokens[call + 1 :])
                if query is not None:
                    # INSERT INTO t EXEC('SELECT …'): the rows are the query's.
                    self._emit(tokens[:call] + query)
                    return
                self._call(tokens[call:])
        self._emit(tokens)

    def _emit(self, tokens: list[Token]) -> None:
        if self.variables:
            self.scopes[len(self.out)] = frozenset(self.variables)
        self.out.append(tokens)

    def _exec_query(self, argument: list[Token]) -> list[Token] | None:
        """The query of `EXEC('SELECT …')` or `EXEC sp_executesql N'SELECT …'`, if it is one query."""
        if argument and _word(argument[0]) == "SP_EXECUTESQL":
            argument = argument[1:2]
        if len(argument) == 3 and argument[0].token_type == TokenType.L_PAREN:
            argument = argument[1:2]
        if len(argument) != 1 or argument[0].token_type not in _STRINGS:
            return None
        inner = self._string_tokens(argument[0])
        if not inner or _word(inner[0]) not in {"SELECT", "WITH"}:
            return None
        if any(t.token_type == TokenType.SEMICOLON for t in inner[:-1]):
            return None
        return inner[:-1] if inner[-1].token_type == TokenType.SEMICOLON else inner

    # T-SQL -------------------------------------------------------------------------------

    def _tsql_statements(self, chunk: list[Token]) -> list[list[Token]]:
        """A T-SQL chunk cut where a statement starts without the semicolon before it."""
        statements: list[list[Token]] = []
        start = 0
        head = _word(chunk[0])
        seen_query = False
        seen_set = False
        depth = 0
        cases = 0
        for i in range(1, len(chunk)):
            token = chunk[i]
            kind = token.token_type
            if kind == TokenType.L_PAREN:
                depth += 1
                continue
            if kind == TokenType.R_PAREN:
                depth -= 1
                continue
            word = _word(token)
            if depth or not word:
                continue
            if word == "CASE":
                cases += 1
                continue
            if word == "END" and cases:
                cases -= 1
                continue
            if word not in _TSQL_STARTS or cases:
                continue
            if self._tsql_continues(chunk, i, word, head, seen_query, seen_set):
                if head == "WITH" and word in _DML:
                    head = word  # the statement after the CTEs
                seen_query = seen_query or word in {"SELECT", "VALUES", "EXEC", "EXECUTE"}
                seen_set = seen_set or word == "SET"
                continue
            statements.append(chunk[start:i])
            start, head, seen_query, seen_set = i, word, False, False
        statements.append(chunk[start:])
        return statements

    @staticmethod
    def _tsql_continues(
        chunk: list[Token], i: int, word: str, head: str, seen_query: bool, seen_set: bool
    ) -> bool:
        """Whether `word`, a word that may start a statement, belongs to the one before it."""
        previous = chunk[i - 1]
        if previous.token_type in _TSQL_OPERATORS or _word(previous) in _TSQL_CONTINUES_AFTER:
            return True
        if word == "WITH":
            # WITH name AS (…) and WITH name (columns) AS (…) start a statement; WITH (NOLOCK),
            # WITH TIES and WITH EXECUTE AS do not.
            name, after = chunk[i + 1 : i + 2], chunk[i + 2 : i + 4]
            return not (
                name
                and name[0].token_type in {TokenType.VAR, TokenType.IDENTIFIER}
                and after
                and (
                    after[0].token_type == TokenType.L_PAREN
                    or (_word(after[0]) == "AS" and after[-1].token_type == TokenType.L_PAREN)
                )
            )
        if head == "WITH" and word in _DML:
            return True
        if head == "INSERT" and word in {"SELECT", "EXEC", "EXECUTE"} and not seen_query:
            return True
        if word == "SET":
            return (head == "UPDATE" and not seen_set) or head in {"ALTER", "MERGE"}
        return word == "IF" and head in {"DROP", "CREATE", "ALTER"}


_NAMES = {TokenType.VAR, TokenType.IDENTIFIER}
# Words between a cursor's name and CURSOR: PostgreSQL's `c NO SCROLL CURSOR FOR …`.
_CURSOR_OPTIONS = {"NO", "SCROLL", "INSENSITIVE", "BINARY"}


def _cursor_name(tokens: list[Token], cursor: int) -> str | None:
    """The name a cursor declaration gives: `CURSOR c IS …` (PL/SQL), `c CURSOR FOR …` (others)."""
    after = tokens[cursor + 1 : cursor + 3]
    if len(after) == 2 and after[0].token_type in _NAMES and _word(after[1]) in {"IS", "("}:
        return after[0].text
    i = cursor - 1
    while i >= 0 and _word(tokens[i]) in _CURSOR_OPTIONS:
        i -= 1
    return tokens[i].text if i >= 0 and tokens[i].token_type in _NAMES else None


def _without_into_variables(tokens: list[Token]) -> list[Token]:
    """`SELECT … [BULK COLLECT] INTO v FROM …` and `… RETURNING … INTO v` assign variables."""
    if not tokens or _word(tokens[0]) not in {"SELECT", "WITH", "INSERT", "UPDATE", "DELETE"}:
        return tokens
    returning = _find(tokens, {"RETURNING"})
    if returning is not None:
        into = _find(tokens, {"INTO"}, returning)
        return tokens if into is None else tokens[:into]
    if _word(tokens[0]) not in {"SELECT", "WITH"}:
        return tokens
    into = _find(tokens, {"INTO", "BULK COLLECT INTO"})
    if into is None:
        return tokens
    end = _find(tokens, {"FROM", "WHERE", "GROUP", "ORDER", "UNION", "LIMIT"}, into)
    return tokens[:into] + (tokens[end:] if end is not None else [])


_Handler = Callable[[_Flattener, list[Token]], "list[Token] | None"]
_CONTROL: dict[str, _Handler] = {
    "CREATE": _Flattener._routine,
    "PROCEDURE": _Flattener._routine,
    "PROC": _Flattener._routine,
    "FUNCTION": _Flattener._routine,
    "TRIGGER": _Flattener._routine,
    "BEGIN": _Flattener._begin,
    "END": _Flattener._end,
    "DO": _Flattener._do,
    "EXEC": _Flattener._execute,
    "EXECUTE": _Flattener._execute,
    "CALL": _Flattener._execute,
    "IF": _Flattener._condition,
    "ELSIF": _Flattener._condition,
    "ELSEIF": _Flattener._condition,
    "WHILE": _Flattener._condition,
    "UNTIL": _Flattener._condition,
    "WHEN": _Flattener._condition,
    "ELSE": _Flattener._opening,
    "LOOP": _Flattener._opening,
    "REPEAT": _Flattener._opening,
    "EXCEPTION": _Flattener._opening,
    "CASE": _Flattener._opening,
    "DECLARE": _Flattener._declare,
    "SET": _Flattener._set,
    "PERFORM": _Flattener._perform,
    "FOR": _Flattener._for,
    "FORALL": _Flattener._for,
}
