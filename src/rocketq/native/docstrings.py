"""Docstrings in the compiled build. mypyc gives a compiled function or class its signature (CPython's
``__text_signature__`` form) but not its docstring, so ``help()`` of a compiled ``SyncProducer`` would show
no documentation. ``keep_docstrings`` makes the C code mypyc writes carry both: the signature as mypyc
writes it, then the docstring read from the plain source. The compiled and the plain build then answer
``__doc__`` and ``inspect.signature`` alike (``tests/native/test_docstrings.py`` holds them to it).

Build-time only (``rocketq.native.build`` calls it before ``mypycify``); it hooks mypyc's two functions
that write these texts, and leaves mypyc as it was when they are missing (an older or newer mypyc: the
build still works, without docstrings).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path
from typing import Any

DocKey = tuple[str, str | None, str]
"""(module, class or None, function or class name)."""


def source_docstrings(modules: Iterable[tuple[str, Path]]) -> dict[DocKey, str]:
    """The docstrings of the top-level classes and functions of ``modules`` (name, source path), and of
    the classes' methods, as the interpreter keeps them (uncleaned)."""
    found: dict[DocKey, str] = {}
    for module, path in modules:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            _note(found, module, None, node)
            if isinstance(node, ast.ClassDef):
                for member in node.body:
                    _note(found, module, node.name, member)
    return found


def _note(found: dict[DocKey, str], module: str, owner: str | None, node: ast.stmt) -> None:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        doc = ast.get_docstring(node, clean=False)
        if doc:
            found[(module, owner, node.name)] = doc


def keep_docstrings(docs: dict[DocKey, str]) -> bool:
    """Make the mypyc of this process write ``docs`` into the compiled functions and classes; False when
    this mypyc does not have the functions hooked."""
    try:
        from mypyc.codegen import emit, emitclass, emitmodule
        from mypyc.codegen.cstring import c_string_initializer
        from mypyc.ir.func_ir import get_text_signature
    except ImportError:
        return False
    if not all(
        hasattr(emitclass, name) for name in ("native_function_doc_initializer", "native_class_doc_initializer")
    ):
        return False

    def text(signature: str | None, doc: str | None) -> str:
        if signature is None and doc is None:
            return "NULL"
        head = "" if signature is None else f"{signature}\n--\n\n"
        return str(c_string_initializer((head + (doc or "")).encode("utf-8")))

    def function_doc(fn: Any) -> str:
        return text(get_text_signature(fn), docs.get((fn.decl.module_name, fn.class_name, fn.name)))

    def class_doc(cl: Any) -> str:
        init = cl.get_method("__init__")
        if init is None:
            signature: str | None = f"{cl.name}()"
        else:
            signature = get_text_signature(init, bound=True)
            signature = None if signature is None else signature.replace("__init__", cl.name, 1)
        return text(signature, docs.get((cl.module_name, None, cl.name)))

    for module in (emit, emitclass, emitmodule):
        if hasattr(module, "native_function_doc_initializer"):
            module.native_function_doc_initializer = function_doc  # type: ignore[attr-defined]
    emitclass.native_class_doc_initializer = class_doc
    return True
