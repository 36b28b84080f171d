"""Docstrings in the compiled build. mypyc gives a compiled method or class its signature (CPython's
``__text_signature__`` form) but not its docstring, so ``help()`` of a compiled ``SyncProducer`` would
show no documentation. ``add_docstrings`` writes them into the C code mypyc generated, before it is
compiled: after each method's and class's signature, the docstring read from the plain source. The
compiled and the plain build then answer ``__doc__`` and ``inspect.signature`` alike
(``tests/native/test_docstrings.py`` holds them to it).

An ``async def`` method is the exception: mypyc makes it a function object of its own whose ``__doc__``
is read-only and whose signature ``inspect`` reads as ``()``; ``rocketq.native.coroutines`` documents the
public clients' ones (``Producer.send_batch``) when their module is loaded.

Build-time only (``rocketq.native.build``). It edits the method tables (``static PyMethodDef
<Class>_methods[]``) and type templates (``.tp_doc``) mypyc writes, matched by the class names in
``.tp_name``; a class name defined in two compiled modules is left without docstrings, as is anything
the patterns do not find (the build then still works; the test says what is missing).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path

MethodKey = tuple[str, str | None]
"""(class, method), or (class, None) for the class's own docstring."""

_TABLE = re.compile(r"static PyMethodDef (\w+)_methods\[\] = \{(.*?)\n\};", re.S)
_ENTRY = re.compile(r'(\{"(\w+)",\s*\(PyCFunction\)\w+,\s*[\w |]+,\s*)PyDoc_STR\((NULL|"(?:[^"\\]|\\.)*")\)')
_TEMPLATE = re.compile(r"static PyTypeObject \w+_template_ = \{(.*?)\n\};", re.S)
_TP_NAME = re.compile(r'\.tp_name = "(\w+)"')
_TP_METHODS = re.compile(r"\.tp_methods = (\w+)_methods,")
_TP_DOC = re.compile(r'\.tp_doc = PyDoc_STR\((NULL|"(?:[^"\\]|\\.)*")\)')


def class_docstrings(paths: Iterable[Path]) -> dict[MethodKey, str]:
    """The docstrings of the top-level classes of these sources and of their methods, as the interpreter
    keeps them (uncleaned). A class name found in two sources is left out."""
    found: dict[MethodKey, str] = {}
    seen: set[str] = set()
    twice: set[str] = set()
    for path in paths:
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if not isinstance(node, ast.ClassDef):
                continue
            (twice if node.name in seen else seen).add(node.name)
            doc = ast.get_docstring(node, clean=False)
            if doc:
                found[(node.name, None)] = doc
            for member in node.body:
                if isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef):
                    doc = ast.get_docstring(member, clean=False)
                    if doc:
                        found[(node.name, member.name)] = doc
    return {key: doc for key, doc in found.items() if key[0] not in twice}


def c_text(text: str) -> str:
    """``text`` as the inside of a C string literal (UTF-8, escaped byte by byte where needed)."""
    out = []
    for byte in text.encode("utf-8"):
        char = chr(byte)
        if char in '"\\?':
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif 32 <= byte < 127:
            out.append(char)
        else:
            out.append(f"\\{byte:03o}")
    return "".join(out)


def _with_doc(literal: str, doc: str | None) -> str:
    """A ``PyDoc_STR`` argument (``NULL`` or a literal holding the signature) with ``doc`` after it."""
    if doc is None:
        return literal
    if literal == "NULL":
        return f'"{c_text(doc)}"'
    return literal[:-1] + c_text(doc) + '"'


def add_docstrings(c_files: Iterable[Path], docs: dict[MethodKey, str]) -> int:
    """Write ``docs`` into mypyc's generated ``c_files``; returns how many docstrings went in."""
    added = 0
    for path in c_files:
        code = path.read_text(encoding="utf-8")
        patched, count = patch_c(code, docs)
        if count:
            path.write_text(patched, encoding="utf-8")
            added += count
    return added


def patch_c(code: str, docs: dict[MethodKey, str]) -> tuple[str, int]:
    """``code`` (one generated C file) with ``docs`` written in, and how many went in."""
    classes: dict[str, str] = {}  # C prefix of a method table -> its class name
    for found in _TEMPLATE.finditer(code):
        name, methods = _TP_NAME.search(found.group(1)), _TP_METHODS.search(found.group(1))
        if name is not None and methods is not None:
            classes[methods.group(1)] = name.group(1)
    added: list[str] = []

    def doc_of(cls: str, member: str | None) -> str | None:
        doc = docs.get((cls, member))
        if doc is not None:
            added.append(f"{cls}.{member}")
        return doc

    def table(match: re.Match[str]) -> str:
        cls = classes.get(match.group(1))
        if cls is None:
            return match.group(0)
        return _ENTRY.sub(
            lambda e: f"{e.group(1)}PyDoc_STR({_with_doc(e.group(3), doc_of(cls, e.group(2)))})", match.group(0)
        )

    def template(match: re.Match[str]) -> str:
        name = _TP_NAME.search(match.group(1))
        doc = None if name is None else doc_of(name.group(1), None)
        return _TP_DOC.sub(lambda t: f".tp_doc = PyDoc_STR({_with_doc(t.group(1), doc)})", match.group(0))

    return _TEMPLATE.sub(template, _TABLE.sub(table, code)), len(added)
