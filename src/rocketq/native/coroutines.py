"""Docstrings and signatures for the compiled build's ``async def`` methods.

mypyc turns a compiled coroutine method (``Producer.send_batch``) into a function object of its own type whose
``__doc__`` cannot be set and whose signature ``inspect`` reads as ``()``; the C-level patching of
``rocketq.native.docstrings`` cannot reach it. So the build records, for each public ``async def``
method of a compiled class, its docstring and its parameters as written in the source
(``coroutine_methods``, kept in the build's manifest), and when a compiled module is loaded,
``document_module`` puts in the class, under the method's name, a small ``async def`` that awaits the
compiled one and carries that docstring and signature. ``help(Producer)``, ``inspect.signature`` and
``inspect.iscoroutinefunction`` then answer as in the plain build.

Only calls made through the class attribute (user code: ``await producer.send_batch(ms)``) go through the
wrapper, one coroutine frame more per call; compiled code calls the compiled method directly.
"""

from __future__ import annotations
import __future__

import ast
import inspect
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

Entry = dict[str, str]
"""What is recorded of one method: ``doc``, ``parameters`` (the source text between the parentheses)
and ``returns`` (the return annotation's source text, or empty)."""


def coroutine_methods(path: Path) -> dict[str, Entry]:
    """``"Class.method"`` -> its entry, for every public ``async def`` method of a top-level class of
    the source at ``path`` that has a docstring."""
    found: dict[str, Entry] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if not isinstance(node, ast.ClassDef):
            continue
        for member in node.body:
            if not isinstance(member, ast.AsyncFunctionDef) or member.name.startswith("_") or member.decorator_list:
                continue  # private, or a class/static method, which an instance method cannot stand in for
            doc = ast.get_docstring(member, clean=False)
            if doc:
                returns = "" if member.returns is None else ast.unparse(member.returns)
                found[f"{node.name}.{member.name}"] = {
                    "doc": doc,
                    "parameters": ast.unparse(member.args),
                    "returns": returns,
                }
    return found


def signature_of(name: str, entry: Entry, namespace: dict[str, Any]) -> inspect.Signature:
    """The signature the source gives the method: a stub with its parameters, compiled with postponed
    annotations (as the sources are) and run in a copy of the module's namespace, so that defaults
    naming module constants take their values."""
    returns = f" -> {entry['returns']}" if entry["returns"] else ""
    source = f"def {name}({entry['parameters']}){returns}: pass"
    code = compile(source, f"<signature of {name}>", "exec", flags=__future__.annotations.compiler_flag)
    scope = dict(namespace)
    exec(code, scope)  # our own source's parameter list, as the build recorded it
    return inspect.signature(scope[name])


def documented(compiled: Callable[..., Awaitable[Any]], owner: type, name: str, entry: Entry) -> Callable[..., Any]:
    """An ``async def`` that awaits ``compiled`` and says what the source says about it."""

    async def method(*args: Any, **kwargs: Any) -> Any:
        return await compiled(*args, **kwargs)

    module = inspect.getmodule(owner)
    method.__name__ = name
    method.__qualname__ = f"{owner.__qualname__}.{name}"
    method.__module__ = owner.__module__
    method.__doc__ = entry["doc"]
    method.__signature__ = signature_of(name, entry, vars(module) if module else {})  # type: ignore[attr-defined]
    return method


def document_module(module: ModuleType, entries: dict[str, Entry]) -> list[str]:
    """Put the documented wrappers in ``module``'s classes; returns the methods it could not find (a
    class or method renamed since the build, which the loader's hash check makes unlikely)."""
    missing = []
    for qualified, entry in entries.items():
        class_name, name = qualified.split(".", 1)
        owner = getattr(module, class_name, None)
        compiled = None if owner is None else vars(owner).get(name)
        if owner is None or compiled is None or not callable(compiled):
            missing.append(qualified)
            continue
        setattr(owner, name, documented(compiled, owner, name, entry))
    return missing


def public_client_classes(package_init: Path) -> set[str]:
    """The class names ``rocketq.client`` exports (its ``__all__``): whose coroutine methods are
    documented so. The other compiled coroutines are called by rocketq's own code, which the wrapper's
    extra frame would only slow down."""
    for node in ast.parse(package_init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return {str(ast.literal_eval(element)) for element in getattr(node.value, "elts", [])}
    return set()


def build_entries(modules: Iterable[tuple[str, Path]], public: set[str]) -> dict[str, dict[str, Entry]]:
    """Module name -> the coroutine methods of its ``public`` classes, for the build's manifest (modules
    with none left out)."""
    entries = {
        module: {name: entry for name, entry in coroutine_methods(path).items() if name.split(".")[0] in public}
        for module, path in modules
    }
    return {module: found for module, found in entries.items() if found}
