"""The tokens of RocketMQ's SQL92 message selectors (its ``SelectorParser`` grammar, 4.9).

Keywords are case-insensitive (``and`` is ``AND``); property names keep their case. Literals:
``'text'`` (``''`` is a quote inside it), decimal integers (``5``, ``5L``; an ``l``/``L`` suffix is
dropped), and floating point numbers (``5.5``, ``5.``, ``.5``, ``5E10``, ``5.5e-3``). Names are
``[A-Za-z_$][A-Za-z0-9_$]*``. Blanks separate tokens; ``-- comment`` runs to the end of its line and
``/* comment */`` may span lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from rocketq.filter.errors import FilterExpressionError

KEYWORDS: Final = frozenset({"NOT", "AND", "OR", "BETWEEN", "IN", "TRUE", "FALSE", "NULL", "IS"})
OPERATORS: Final = ("<>", "<=", ">=", "=", "<", ">", "(", ")", ",", "+", "-")

_PATTERNS: Final = (
    ("BLANK", r"[ \t\n\r\f]+"),
    ("LINE_COMMENT", r"--[^\n\r]*(?:\r\n|\n|\r)"),
    ("BLOCK_COMMENT", r"/\*[\s\S]*?\*/"),
    ("FLOAT", r"(?:[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)"),
    ("DECIMAL", r"(?:0|[1-9][0-9]*)[lL]?"),
    ("STRING", r"'(?:''|[^'])*'"),
    ("NAME", r"[A-Za-z_$][A-Za-z0-9_$]*"),
    ("OPERATOR", "|".join(re.escape(op) for op in OPERATORS)),
)
_TOKEN: Final = re.compile("|".join(f"(?P<{name}>{pattern})" for name, pattern in _PATTERNS))
_SKIPPED: Final = frozenset({"BLANK", "LINE_COMMENT", "BLOCK_COMMENT"})


@dataclass(frozen=True, slots=True)
class Token:
    """``kind`` is a keyword (``"AND"``), ``"NAME"``, ``"DECIMAL"``, ``"FLOAT"``, ``"STRING"``, an
    operator's own text (``"<="``) or ``"END"``; ``text`` is as written; ``column`` counts from 1."""

    kind: str
    text: str
    column: int

    def describe(self) -> str:
        return "the end of the expression" if self.kind == "END" else f"{self.text!r} at column {self.column}"


def tokenize(expression: str) -> list[Token]:
    """The expression's tokens, ending with an ``END`` token.

    Raises:
        FilterExpressionError: A character that starts no token (the column is in the message).
    """
    tokens: list[Token] = []
    position = 0
    while position < len(expression):
        match = _TOKEN.match(expression, position)
        if match is None or match.end() == position:
            raise FilterExpressionError(f"unexpected character {expression[position]!r} at column {position + 1}")
        kind = match.lastgroup
        assert kind is not None
        text = match.group()
        if kind == "NAME" and text.upper() in KEYWORDS:
            kind = text.upper()
        elif kind == "OPERATOR":
            kind = text
        if kind not in _SKIPPED:
            tokens.append(Token(kind, text, position + 1))
        position = match.end()
    tokens.append(Token("END", "", len(expression) + 1))
    return tokens


def string_value(token: Token) -> str:
    """The text of a ``'...'`` literal: the quotes removed, each ``''`` made one quote."""
    return token.text[1:-1].replace("''", "'")
