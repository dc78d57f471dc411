"""GBNF grammars (llama.cpp's format for constrained decoding): parse, validate, match.

llama-cpp-python does not check a grammar when it is built (``LlamaGrammar.from_string`` only
stores the text); a malformed one fails inside llama.cpp at sampling time and can take the
process down. So every grammar a request carries is parsed here first (``validate_gbnf``), and
tests check a grammar's language with ``GbnfMatcher`` without a model.

Supported (llama.cpp's grammar syntax, ``grammars/README.md``): rules ``name ::= ...`` (names of
letters, digits and ``-``), ``root`` required; ``|`` alternatives; sequences; ``( )`` groups;
``"..."`` literals and ``[...]`` / ``[^...]`` character classes with the escapes ``\\n \\r
\\t \\\\ \\" \\[ \\] \\- \\xHH \\uHHHH``; ``.`` (any character); the repetitions ``* + ?``
and ``{m}``, ``{m,}``, ``{m,n}``; ``#`` comments. Newlines end a rule except inside groups and
after ``|``. The matcher needs a non-recursive grammar (all grammars built here are).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from adapt.errors import GrammarError as GrammarError

_NAME = re.compile(r"[a-zA-Z0-9-]+")
_RULE_START = re.compile(r"[a-zA-Z0-9-]+\s*::=")
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", '"': '"', "[": "[", "]": "]",
            "-": "-"}
_HEX = {"x": 2, "u": 4, "U": 8}


@dataclass(frozen=True, slots=True)
class _Node:
    kind: str  # lit | cls | any | ref | seq | alt | rep
    text: str = ""  # lit: the string; cls: a Python regex class; ref: the rule name
    items: tuple[_Node, ...] = ()
    low: int = 0
    high: int | None = None


class _Parser:
    def __init__(self, text: str) -> None:
        self.text, self.pos = text, 0
        self.refs: list[tuple[str, int]] = []

    def fail(self, what: str) -> GrammarError:
        line = self.text.count("\n", 0, self.pos) + 1
        near = self.text[self.pos:self.pos + 20]
        return GrammarError(f"malformed GBNF grammar at line {line}: {what} (near {near!r})")

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def space(self, newlines: bool) -> None:
        while self.pos < len(self.text):
            c = self.text[self.pos]
            if c == "#":
                end = self.text.find("\n", self.pos)
                self.pos = len(self.text) if end < 0 else end
            elif c in " \t" or (newlines and c in "\r\n"):
                self.pos += 1
            else:
                return

    def rules(self) -> dict[str, _Node]:
        rules: dict[str, _Node] = {}
        self.space(True)
        while self.pos < len(self.text):
            m = _NAME.match(self.text, self.pos)
            if m is None:
                raise self.fail("expected a rule name")
            name, self.pos = m.group(0), m.end()
            self.space(False)
            if not self.text.startswith("::=", self.pos):
                raise self.fail(f"expected ::= after rule name {name!r}")
            self.pos += 3
            self.space(True)
            body = self.alternates(nested=False)
            if name in rules:
                raise self.fail(f"rule {name!r} defined twice")
            rules[name] = body
            self.space(False)
            if self.peek() not in ("", "\n", "\r"):
                raise self.fail("expected the end of the rule")
            self.space(True)
        if "root" not in rules:
            raise GrammarError("malformed GBNF grammar: no root rule (root ::= ...)")
        for ref, pos in self.refs:
            if ref not in rules:
                self.pos = pos
                raise self.fail(f"undefined rule {ref!r}")
        return rules

    def alternates(self, nested: bool) -> _Node:
        options = [self.sequence(nested)]
        while self.peek() == "|":
            self.pos += 1
            self.space(True)
            options.append(self.sequence(nested))
        return options[0] if len(options) == 1 else _Node("alt", items=tuple(options))

    def sequence(self, nested: bool) -> _Node:
        items: list[_Node] = []
        while True:
            self.space(nested)
            c = self.peek()
            if c == '"':
                items.append(_Node("lit", self.literal()))
            elif c == "[":
                items.append(_Node("cls", self.char_class()))
            elif c == ".":
                self.pos += 1
                items.append(_Node("any"))
            elif c == "(":
                self.pos += 1
                self.space(True)
                inner = self.alternates(nested=True)
                self.space(True)
                if self.peek() != ")":
                    raise self.fail("expected )")
                self.pos += 1
                items.append(inner)
            elif c and c in "*+?{":
                if not items:
                    raise self.fail(f"{c} repeats nothing")
                items[-1] = self.repeat(items[-1])
            elif c and _NAME.match(c):
                if not nested and _RULE_START.match(self.text, self.pos):
                    break
                m = _NAME.match(self.text, self.pos)
                if m is None:  # _RULE_START matched here, so a name does too
                    raise GrammarError(f"expected a rule name at {self.pos}")
                self.refs.append((m.group(0), self.pos))
                self.pos = m.end()
                items.append(_Node("ref", m.group(0)))
            else:
                break
        if not items:
            return _Node("lit", "")
        return items[0] if len(items) == 1 else _Node("seq", items=tuple(items))

    def repeat(self, node: _Node) -> _Node:
        c = self.text[self.pos]
        self.pos += 1
        if c != "{":
            low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
            return _Node("rep", items=(node,), low=low, high=high)
        m = re.compile(r"\s*(\d+)\s*(?:(,)\s*(\d*)\s*)?\}").match(self.text, self.pos)
        if m is None:
            raise self.fail("expected {m}, {m,} or {m,n}")
        self.pos = m.end()
        low = int(m.group(1))
        high = low if m.group(2) is None else (int(m.group(3)) if m.group(3) else None)
        if high is not None and high < low:
            raise self.fail("repetition {m,n} with n < m")
        return _Node("rep", items=(node,), low=low, high=high)

    def char(self, end: str) -> str:
        if self.pos >= len(self.text) or self.text[self.pos] in "\r\n":
            what = "literal" if end == '"' else "character class"
            raise self.fail(f"unterminated {what}")
        c = self.text[self.pos]
        if c != "\\":
            self.pos += 1
            return c
        e = self.text[self.pos + 1:self.pos + 2]
        if e in _ESCAPES:
            self.pos += 2
            return _ESCAPES[e]
        if e in _HEX:
            digits = self.text[self.pos + 2:self.pos + 2 + _HEX[e]]
            if len(digits) != _HEX[e] or not all(d in "0123456789abcdefABCDEF" for d in digits):
                raise self.fail(f"bad \\{e} escape")
            self.pos += 2 + _HEX[e]
            return chr(int(digits, 16))
        raise self.fail(f"unknown escape \\{e}")

    def literal(self) -> str:
        self.pos += 1
        out = []
        while self.peek() != '"':
            out.append(self.char('"'))
        self.pos += 1
        return "".join(out)

    def char_class(self) -> str:
        self.pos += 1
        negate = self.peek() == "^"
        if negate:
            self.pos += 1
        parts: list[str] = []
        while self.peek() != "]":
            first = self.char("]")
            if self.peek() == "-" and self.text[self.pos + 1:self.pos + 2] not in ("]", ""):
                self.pos += 1
                last = self.char("]")
                if ord(last) < ord(first):
                    raise self.fail("reversed character range")
                parts.append(f"{re.escape(first)}-{re.escape(last)}")
            else:
                parts.append(re.escape(first))
        self.pos += 1
        if not parts:
            raise self.fail("empty character class")
        return "[" + ("^" if negate else "") + "".join(parts) + "]"


def parse_gbnf(text: str) -> dict[str, _Node]:
    """The rules of a GBNF grammar. Raises ``GrammarError`` naming the problem."""
    return _Parser(text).rules()


def validate_gbnf(text: str) -> str:
    """``text`` if it is a well-formed GBNF grammar with a ``root`` rule, else ``GrammarError``."""
    parse_gbnf(text)
    return text


class GbnfMatcher:
    """Whether a text is in a (non-recursive) GBNF grammar's language: ``matches(text)``."""

    def __init__(self, text: str) -> None:
        self.rules = parse_gbnf(text)
        self.pattern = re.compile(self._regex(self.rules["root"], ()), re.DOTALL)

    def matches(self, text: str) -> bool:
        return self.pattern.fullmatch(text) is not None

    def _regex(self, node: _Node, trail: tuple[str, ...]) -> str:
        if node.kind == "lit":
            return re.escape(node.text)
        if node.kind == "cls":
            return node.text
        if node.kind == "any":
            return "."
        if node.kind == "ref":
            if node.text in trail:
                raise GrammarError(f"GbnfMatcher: rule {node.text!r} is recursive")
            return "(?:" + self._regex(self.rules[node.text], (*trail, node.text)) + ")"
        if node.kind == "seq":
            return "".join(self._regex(i, trail) for i in node.items)
        if node.kind == "alt":
            return "(?:" + "|".join(self._regex(i, trail) for i in node.items) + ")"
        high = "" if node.high is None else str(node.high)
        return "(?:" + self._regex(node.items[0], trail) + "){" + f"{node.low},{high}" + "}"


def gbnf_literal(text: str) -> str:
    """``text`` as a GBNF string literal (quotes, backslashes and newlines escaped)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'
