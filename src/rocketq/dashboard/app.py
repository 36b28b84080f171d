"""The dashboard's web server: aiohttp handlers that read the cluster with ``AdminClient``, send with a
``Producer``, and answer with the pages of ``rocketq.dashboard.pages``.

Actions are HTML forms posted to the server. Those on topics redirect back to a page (post, redirect,
get) with a one-line notice or error in the query string, so a reload does not repeat them; a reset and
a send answer with the page showing their result (the new offsets, the send's ids). Every page works
without JavaScript. An error of the cluster (an unknown topic, a broker that refuses) is
shown on the page, never as a server error.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from rocketq.client.admin import AdminClient
from rocketq.client.config import ClientConfig, ProducerConfig
from rocketq.client.errors import MQClientError
from rocketq.client.message import Message, MessageExt
from rocketq.client.message_query import offset_id_address
from rocketq.client.producer import Producer
from rocketq.dashboard import pages
from rocketq.dashboard.figures import (
    RateMeter,
    broker_rates,
    disk_ratio,
    is_system_topic,
    parse_properties,
    parse_time_field,
)
from rocketq.dashboard.html import Html, path, when, with_query
from rocketq.remoting import RemotingError

log = logging.getLogger(__name__)

STATIC = Path(__file__).parent / "static"
PRODUCER_GROUP = "DASHBOARD_PRODUCER"
"""The producer group of the test messages the dashboard sends."""

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
CLUSTER_ERRORS = (MQClientError, RemotingError, OSError, TimeoutError, ValueError)
"""What a request to the cluster (or a form's value) may fail with: shown on the page."""


class Dashboard:
    """The dashboard of the cluster behind ``namesrv_addr``, served at ``host:port`` (port 0: any free
    one; ``address`` says which after ``start``). ``clock``: seconds, monotonic, for the rates;
    ``wall_clock``: seconds since the epoch, for "now" in forms. ``access_key``/``secret_key``: an ACL
    account (an admin one to change topics and offsets)."""

    def __init__(
        self,
        namesrv_addr: str,
        *,
        host: str = "127.0.0.1",
        port: int = 8080,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        access_key: str = "",
        secret_key: str = "",
    ) -> None:
        self.namesrv_addr = namesrv_addr
        self.host = host
        self.port = port
        self._wall_clock = wall_clock
        self._credentials = (access_key, secret_key)
        self.admin = AdminClient(namesrv_addr, access_key=access_key, secret_key=secret_key)
        self.meter = RateMeter(clock)
        self._producer: Producer | None = None
        self._producer_starting = asyncio.Lock()
        self._runner: web.AppRunner | None = None

    @property
    def address(self) -> str:
        """host:port the dashboard listens on (after ``start``)."""
        if self._runner is None or not self._runner.addresses:
            raise RuntimeError("the dashboard is not started")
        host, port = self._runner.addresses[0][:2]
        return f"{host}:{port}"

    @property
    def url(self) -> str:
        return f"http://{self.address}/"

    def app(self) -> web.Application:
        """The aiohttp application (routes and static files)."""
        app = web.Application()
        routes = [
            web.get("/", self._cluster),
            web.get("/topics", self._topics),
            web.post("/topics", self._create_topic),
            web.get("/topics/{topic}", self._topic),
            web.post("/topics/{topic}/queues", self._change_queues),
            web.post("/topics/{topic}/delete", self._delete_topic),
            web.get("/groups", self._groups),
            web.get("/groups/{group}", self._group),
            web.post("/groups/{group}/reset", self._reset),
            web.get("/messages", self._messages),
            web.get("/message", self._message),
            web.get("/send", self._send_form),
            web.post("/send", self._send),
            web.get("/api/cluster", self._cluster_json),
        ]
        app.add_routes(routes)
        app.router.add_static("/static", STATIC)
        return app

    async def start(self) -> Dashboard:
        runner = web.AppRunner(self.app(), access_log=None)
        await runner.setup()
        try:
            await web.TCPSite(runner, self.host, self.port).start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        log.info("dashboard serving at %s", self.url)
        return self

    async def aclose(self) -> None:
        """Stop serving; close the producer and the admin client."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._producer is not None:
            await self._producer.aclose()
            self._producer = None
        await self.admin.aclose()

    async def __aenter__(self) -> Dashboard:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- cluster ----------------------------------------------------------------------------------------

    async def broker_rows(self) -> list[pages.BrokerRow]:
        """Every broker the NameServers know, with its version, rates and disk (an unreachable one says so)."""
        info = await self.admin.cluster_info()
        rows = []
        for cluster, names in sorted(info.cluster_addr_table.items()):
            for name in sorted(names):
                data = info.broker_addr_table.get(name)
                for broker_id, address in sorted(data.broker_addrs.items()) if data else []:
                    try:
                        table = await self.admin.broker_runtime_info(address)
                    except CLUSTER_ERRORS as exc:
                        log.info("broker %s did not answer: %s", address, exc)
                        rows.append(pages.BrokerRow(cluster, name, broker_id, address, "unreachable", None, None, None))
                        continue
                    rates = broker_rates(address, table, self.meter)
                    version = table.get("brokerVersionDesc", "")
                    rows.append(
                        pages.BrokerRow(
                            cluster,
                            name,
                            broker_id,
                            address,
                            version,
                            rates.put_tps,
                            rates.get_tps,
                            disk_ratio(table),
                            table.get("brokerRole", ""),
                        )
                    )
        return rows

    async def _cluster(self, request: web.Request) -> web.Response:
        return await self._show(request, self._cluster_html)

    async def _cluster_html(self, lines: dict[str, str]) -> Html:
        return pages.cluster_page(self.namesrv_addr, await self.broker_rows(), lines=lines)

    async def _cluster_json(self, request: web.Request) -> web.Response:
        try:
            rows = await self.broker_rows()
        except CLUSTER_ERRORS as exc:
            return web.json_response({"namesrv": self.namesrv_addr, "error": str(exc)}, status=502)
        return web.json_response(
            {
                "namesrv": self.namesrv_addr,
                "brokers": [
                    {
                        "cluster": r.cluster,
                        "brokerName": r.name,
                        "brokerId": r.broker_id,
                        "role": r.role,
                        "address": r.address,
                        "version": r.version,
                        "putTps": r.put_tps,
                        "getTps": r.get_tps,
                        "diskRatio": r.disk,
                    }
                    for r in rows
                ],
            }
        )

    # -- topics -----------------------------------------------------------------------------------------

    async def _topics(self, request: web.Request) -> web.Response:
        showing_system = request.query.get("system") == "1"

        async def render(lines: dict[str, str]) -> Html:
            info = await self.admin.cluster_info()
            names = {*info.cluster_addr_table, *info.broker_addr_table}
            shown = [t for t in await self.admin.topic_list() if showing_system or not is_system_topic(t, names)]
            rows = await asyncio.gather(*(self._topic_row(topic) for topic in shown))
            return pages.topics_page(rows, showing_system=showing_system, lines=lines)

        return await self._show(request, render)

    async def _topic_row(self, topic: str) -> pages.TopicRow:
        try:
            statuses = await self.admin.topic_status(topic)
        except CLUSTER_ERRORS:  # a topic only the NameServers know of (a cluster's or broker's name)
            return pages.TopicRow(topic, 0, 0, None)
        stored = sum(s.max_offset for s in statuses)
        return pages.TopicRow(
            topic,
            len(statuses),
            sum(s.max_offset - s.min_offset for s in statuses),
            self.meter.rate(("topic", topic), stored),
        )

    async def _topic(self, request: web.Request) -> web.Response:
        topic = request.match_info["topic"]

        async def render(lines: dict[str, str]) -> Html:
            route = await self.admin.topic_route(topic)
            statuses = await self.admin.topic_status(topic)
            tps = self.meter.rate(("topic", topic), sum(s.max_offset for s in statuses))
            groups = await self.admin.groups_consuming(topic)
            return pages.topic_page(topic, route.queue_datas, statuses, tps, groups, lines=lines)

        return await self._show(request, render, fallback="/topics")

    async def _create_topic(self, request: web.Request) -> web.Response:
        form = await request.post()
        topic = str(form.get("topic", "")).strip()

        async def act() -> str:
            read, write = _queue_counts(form)
            brokers = await self.admin.update_topic(topic, read_queues=read, write_queues=write)
            return f"Topic {topic} created on {len(brokers)} broker(s)."

        return await self._act(act, done=path("topics", topic), failed="/topics")

    async def _change_queues(self, request: web.Request) -> web.Response:
        topic = request.match_info["topic"]
        form = await request.post()

        async def act() -> str:
            read, write = _queue_counts(form)
            route = await self.admin.topic_route(topic)
            perms = {q.broker_name: q.perm for q in route.queue_datas}
            masters = await self.admin.master_addresses()
            for broker_name, perm in perms.items():
                if broker_name in masters:
                    await self.admin.update_topic(
                        topic, broker_addr=masters[broker_name], read_queues=read, write_queues=write, perm=perm
                    )
            return f"Topic {topic} now has {read} read and {write} write queues on each of its brokers."

        here = path("topics", topic)
        return await self._act(act, done=here, failed=here)

    async def _delete_topic(self, request: web.Request) -> web.Response:
        topic = request.match_info["topic"]

        async def act() -> str:
            await self.admin.delete_topic(topic)
            return f"Topic {topic} deleted."

        return await self._act(act, done="/topics", failed=path("topics", topic))

    # -- consumer groups --------------------------------------------------------------------------------

    async def _groups(self, request: web.Request) -> web.Response:
        async def render(lines: dict[str, str]) -> Html:
            return pages.groups_page(await self.admin.groups_overview(), lines=lines)

        return await self._show(request, render)

    async def _group(self, request: web.Request) -> web.Response:
        return await self._show(
            request, lambda lines: self._group_html(request.match_info["group"], (), lines), fallback="/groups"
        )

    async def _group_html(self, group: str, reset: Any, lines: dict[str, str]) -> Html:
        try:
            connection = await self.admin.consumer_connection(group)
        except MQClientError:  # no member online
            connection = None
        stats = await self.admin.consume_stats(group)
        topics = {r.topic for r in stats.offset_table}
        if connection is not None:
            topics.update(connection.subscription_table)
        ordered = sorted(topics, key=lambda topic: (is_system_topic(topic), topic))  # its retry topic last
        return pages.group_page(group, connection, stats, ordered, reset, lines=lines)

    async def _reset(self, request: web.Request) -> web.Response:
        """Reset, then show the group's page with the new offsets (not a redirect: they are shown once)."""
        group = request.match_info["group"]
        form = await request.post()
        topic = str(form.get("topic", ""))
        lines: dict[str, str] = {}
        reset = []
        try:
            when_ms = parse_time_field(str(form.get("time", "")), int(self._wall_clock() * 1000))
            reset = await self.admin.reset_offset_by_time(group, topic, when_ms, force=form.get("force") == "1")
            lines["notice"] = f"Offsets of {group} on {topic} reset to {when(when_ms)}: {len(reset)} queue(s)."
        except CLUSTER_ERRORS as exc:
            lines["error"] = f"Reset failed: {exc}"
        try:
            return _html(await self._group_html(group, reset, lines))
        except CLUSTER_ERRORS as exc:
            raise web.HTTPSeeOther(with_query("/groups", error=str(exc))) from exc

    # -- messages ---------------------------------------------------------------------------------------

    async def _messages(self, request: web.Request) -> web.Response:
        params = dict(request.query)
        lines = _lines(request)
        found: list[MessageExt] | None = None
        if params.get("key") or params.get("by") in ("offset", "time"):
            try:
                found = await self.search(params)
            except CLUSTER_ERRORS as exc:
                lines["error"] = f"Search failed: {exc}"
        return _html(pages.messages_page(params, found, lines=lines))

    async def search(self, params: dict[str, str]) -> list[MessageExt]:
        """The messages a search form asks for (``pages.SEARCHES``)."""
        by, topic, key = params.get("by", "id"), params.get("topic", "").strip(), params.get("key", "").strip()
        if by == "id":
            if not topic and offset_id_address(key) is None:
                raise ValueError(f"{key!r} is not an offset message id; for a client message id, give its topic")
            return await self.admin.query_by_id(topic or None, key)
        if not topic:
            raise ValueError("give the topic")
        if by == "key":
            return await self.admin.query_by_key(topic, key)
        if by == "unique":
            return await self.admin.query_by_unique_key(topic, key)
        if by == "offset":
            queue, offset = int(params.get("queue") or 0), int(params.get("offset") or 0)
            return [await self.admin.query_by_offset(topic, params.get("broker", "").strip(), queue, offset)]
        if by == "time":
            now = int(self._wall_clock() * 1000)
            end = parse_time_field(params.get("end", ""), now)
            begin = parse_time_field(params["begin"], now) if params.get("begin") else end - 3_600_000
            return await self.admin.query_by_time(topic, begin, end)
        raise ValueError(f"no search by {by!r}")

    async def _message(self, request: web.Request) -> web.Response:
        msg_id = request.query.get("id", "")

        async def render(lines: dict[str, str]) -> Html:
            message = await self.admin.view_message(msg_id)
            return pages.message_page(message, as_hex=request.query.get("hex") == "1", lines=lines)

        return await self._show(request, render, fallback="/messages")

    # -- sending ----------------------------------------------------------------------------------------

    async def _send_form(self, request: web.Request) -> web.Response:
        return _html(pages.send_page(dict(request.query), lines=_lines(request)))

    async def _send(self, request: web.Request) -> web.Response:
        """Send, then show the form again with what the broker answered."""
        params = {name: str(value) for name, value in (await request.post()).items()}
        try:
            message = Message(
                params.get("topic", "").strip(),
                params.get("body", "").encode(),
                tags=params.get("tags", "").strip() or None,
                keys=params.get("keys", "").split() or None,
                properties=parse_properties(params.get("properties", "")),
            )
            sent = await (await self.producer()).send(message)
        except CLUSTER_ERRORS as exc:
            return _html(pages.send_page(params, lines={"error": f"Send failed: {exc}"}))
        return _html(pages.send_page(params, sent, lines={"notice": f"Sent to {sent.message_queue}."}))

    async def producer(self) -> Producer:
        """The dashboard's producer, started on first use (once, however many sends ask at that moment)."""
        async with self._producer_starting:
            if self._producer is None:
                access_key, secret_key = self._credentials
                client = ClientConfig(namesrv_addr=self.namesrv_addr, access_key=access_key, secret_key=secret_key)
                self._producer = await Producer(ProducerConfig(group=PRODUCER_GROUP, client=client)).start()
            return self._producer

    # -- the pattern of every page ----------------------------------------------------------------------

    async def _show(
        self, request: web.Request, render: Callable[[dict[str, str]], Awaitable[Html]], *, fallback: str = ""
    ) -> web.Response:
        """The page ``render`` makes; when the cluster fails it, ``fallback`` with the error (or, for a
        page without one, a page that only says what failed)."""
        lines = _lines(request)
        try:
            return _html(await render(lines))
        except CLUSTER_ERRORS as exc:
            if fallback:
                raise web.HTTPSeeOther(with_query(fallback, error=str(exc))) from exc
            return _html(pages.error_page(str(exc)), status=502)

    async def _act(self, act: Callable[[], Awaitable[str]], *, done: str, failed: str) -> web.Response:
        """Run a form's action; redirect to ``done`` with its notice, or to ``failed`` with the error."""
        try:
            notice = await act()
        except CLUSTER_ERRORS as exc:
            raise web.HTTPSeeOther(with_query(failed, error=str(exc))) from exc
        raise web.HTTPSeeOther(with_query(done, notice=notice))


def _html(body: str, status: int = 200) -> web.Response:
    return web.Response(text=body, status=status, content_type="text/html", charset="utf-8")


def _lines(request: web.Request) -> dict[str, str]:
    """The notice and error a redirect carried."""
    return {name: request.query[name] for name in ("notice", "error") if request.query.get(name)}


def _queue_counts(form: Any) -> tuple[int, int]:
    """(read, write) queue counts of a topic form; ValueError unless each is 1 to 1024."""
    counts = []
    for name in ("read_queues", "write_queues"):
        text = str(form.get(name, "8")).strip() or "8"
        if not text.isdigit() or not 1 <= int(text) <= 1024:
            raise ValueError(f"{name.replace('_', ' ')} must be a number from 1 to 1024, not {text!r}")
        counts.append(int(text))
    return counts[0], counts[1]
