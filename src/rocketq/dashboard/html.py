"""HTML building blocks of the dashboard's pages: every value from the cluster (topic and group names,
message bodies, properties) goes through ``esc``; the pages are plain strings of escaped HTML.

``Html`` marks a string that is already HTML, so ``table`` and ``cell`` escape everything else and
nothing twice.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from urllib.parse import quote, urlencode

from rocketq import __version__


class Html(str):
    """A string of HTML, built from escaped parts (``esc``, ``link``, the page helpers)."""

    __slots__ = ()


def esc(value: object) -> Html:
    """``value`` as text in HTML: ``<``, ``>``, ``&`` and both quotes escaped; None is empty."""
    if isinstance(value, Html):
        return value
    return Html(html.escape("" if value is None else str(value), quote=True))


def join(parts: Iterable[Html], separator: str = "") -> Html:
    return Html(separator.join(parts))


def path(*segments: str) -> str:
    """A URL path of segments, each quoted (topic and group names may hold ``%`` and ``/``)."""
    return "/" + "/".join(quote(segment, safe="") for segment in segments)


def with_query(url: str, **params: object) -> str:
    return f"{url}?{urlencode({k: v for k, v in params.items() if v is not None})}" if params else url


def link(url: str, text: object, **attributes: str) -> Html:
    extra = "".join(f' {name.rstrip("_")}="{esc(value)}"' for name, value in attributes.items())
    return Html(f'<a href="{esc(url)}"{extra}>{esc(text)}</a>')


def cell(value: object) -> Html:
    """A table cell; numbers are right-aligned."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return Html(f'<td class="num">{esc(value)}</td>')
    return Html(f"<td>{esc(value)}</td>")


def table(headers: Sequence[str], rows: Iterable[Sequence[object]], *, test_id: str = "", empty: str = "") -> Html:
    """A table with a header row; ``empty``: the line shown instead when there is no row."""
    body = [Html(f"<tr>{join(cell(value) for value in row)}</tr>") for row in rows]
    if not body and empty:
        return Html(f'<p class="empty" data-testid="{esc(test_id)}">{esc(empty)}</p>')
    head = join(Html(f"<th>{esc(header)}</th>") for header in headers)
    return Html(
        f'<table data-testid="{esc(test_id)}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{join(body, chr(10))}</tbody></table>"
    )


def definitions(pairs: Iterable[tuple[str, object]], *, test_id: str = "") -> Html:
    """A list of name and value pairs (a message's headers)."""
    items = join(Html(f"<dt>{esc(name)}</dt><dd>{esc(value)}</dd>") for name, value in pairs)
    return Html(f'<dl data-testid="{esc(test_id)}">{items}</dl>')


def rate(value: float | None) -> str:
    """A TPS figure: two decimals, or "measuring" until there are two readings."""
    return "measuring" if value is None else f"{value:.2f}"


def percent(value: float | None) -> str:
    return "" if value is None else f"{value * 100:.1f}%"


def when(ms: int | None) -> str:
    """ms since the epoch as a local time; empty for none (0)."""
    return "" if not ms else datetime.fromtimestamp(ms / 1000).isoformat(sep=" ", timespec="milliseconds")


def field(
    label: str, name: str, value: object = "", *, kind: str = "text", required: bool = False, hint: str = ""
) -> Html:
    """A labelled ``<input>``."""
    extra = " required" if required else ""
    if hint:
        extra += f' placeholder="{esc(hint)}"'
    return Html(
        f'<label>{esc(label)} <input type="{esc(kind)}" name="{esc(name)}" value="{esc(value)}"{extra}></label>'
    )


def select(label: str, name: str, options: Sequence[tuple[str, str]], chosen: str = "") -> Html:
    """A labelled ``<select>`` of (value, text) options."""
    items = join(
        Html(f'<option value="{esc(value)}"{" selected" if value == chosen else ""}>{esc(text)}</option>')
        for value, text in options
    )
    return Html(f'<label>{esc(label)} <select name="{esc(name)}">{items}</select></label>')


def form(action: str, fields: Iterable[Html], button: str, *, method: str = "post", confirm: str = "") -> Html:
    """A form; ``confirm``: the question the browser asks before sending it (dashboard.js)."""
    ask = f' data-confirm="{esc(confirm)}"' if confirm else ""
    return Html(
        f'<form method="{esc(method)}" action="{esc(action)}"{ask}>{join(fields)}'
        f'<button type="submit">{esc(button)}</button></form>'
    )


HERE = ' class="here"'
NAVIGATION = (
    ("/", "Cluster"),
    ("/topics", "Topics"),
    ("/groups", "Consumers"),
    ("/messages", "Messages"),
    ("/send", "Send"),
)


def page(title: str, body: Html, *, section: str, lines: Mapping[str, str] | None = None, refresh_s: int = 0) -> Html:
    """A whole page: the navigation, the ``lines`` an action left (its ``notice`` or ``error``), the
    body. ``refresh_s``: the page offers to reload itself that often (for live rates)."""
    notice, error = (lines or {}).get("notice", ""), (lines or {}).get("error", "")
    nav = join(Html(f'<a href="{url}"{HERE if url == section else ""}>{esc(text)}</a>') for url, text in NAVIGATION)
    said = Html("")
    if notice:
        said = Html(f'<p class="notice" role="status">{esc(notice)}</p>')
    if error:
        said = Html(f'{said}<p class="error" role="alert">{esc(error)}</p>')
    reload = (
        Html(
            f'<label class="refresh"><input type="checkbox" data-refresh="{refresh_s}" checked>'
            f" refresh every {refresh_s} s</label>"
        )
        if refresh_s
        else Html("")
    )
    return Html(
        "<!doctype html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{esc(title)} · rocketq</title>'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="stylesheet" href="/static/dashboard.css"><script src="/static/dashboard.js" defer></script>'
        f'</head><body><header><span class="brand">rocketq</span><nav>{nav}</nav>{reload}</header>'
        f"<main><h1>{esc(title)}</h1>{said}{body}</main>"
        f"<footer>rocketq {esc(__version__)} dashboard</footer></body></html>\n"
    )
