"""The dashboard's pages: what the handlers read from the cluster in, escaped HTML out (no I/O)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rocketq.admin.message_view import body_text, hex_dump, placed
from rocketq.client.admin import GroupOverview, QueueStatus
from rocketq.client.message import MessageExt, SendResult
from rocketq.dashboard.figures import lag
from rocketq.dashboard.html import (
    Html,
    definitions,
    esc,
    field,
    form,
    join,
    link,
    page,
    path,
    percent,
    rate,
    select,
    table,
    when,
    with_query,
)
from rocketq.protocol.bodies import ConsumerConnection, ConsumeStats, MessageQueueOffset, QueueData


@dataclass(frozen=True, slots=True)
class BrokerRow:
    cluster: str
    name: str
    broker_id: int
    address: str
    version: str  # brokerVersionDesc; "unreachable" when it did not answer
    put_tps: float | None
    get_tps: float | None
    disk: float | None  # how full its store disk is, 0 to 1
    broker_role: str = ""  # brokerRole of its runtime info ("" when it does not say)

    @property
    def role(self) -> str:
        if self.broker_id != 0:
            return f"SLAVE {self.broker_id}"
        return self.broker_role or "MASTER"


@dataclass(frozen=True, slots=True)
class TopicRow:
    name: str
    queues: int  # over all its brokers
    messages: int  # stored now: max offset minus min offset, summed
    tps: float | None  # messages stored a second


def cluster_page(namesrv: str, brokers: Sequence[BrokerRow], lines: Mapping[str, str] | None = None) -> Html:
    rows = [
        (b.cluster, b.name, b.role, b.address, b.version, rate(b.put_tps), rate(b.get_tps), percent(b.disk))
        for b in brokers
    ]
    headers = ["cluster", "broker", "role", "address", "version", "put TPS", "get TPS", "disk used"]
    body = Html(
        f"<p>NameServer <code>{esc(namesrv)}</code>: {len({b.cluster for b in brokers})} cluster(s),"
        f" {len(brokers)} broker(s).</p>"
        + table(headers, rows, test_id="brokers", empty="The NameServer knows no broker.")
    )
    return page("Cluster", body, section="/", refresh_s=5, lines=lines)


def permission(perm: int) -> str:
    """A topic's permission bits as RocketMQ's tools name them: R (read, 4), W (write, 2), X (inherit, 1)."""
    named = "".join(letter for bit, letter in ((4, "R"), (2, "W"), (1, "X")) if perm & bit)
    return f"{named or '-'} ({perm})"


def topics_page(topics: Sequence[TopicRow], *, showing_system: bool, lines: Mapping[str, str] | None = None) -> Html:
    rows = [(link(path("topics", t.name), t.name), t.queues, t.messages, rate(t.tps)) for t in topics]
    toggle = link("/topics", "hide system topics") if showing_system else link("/topics?system=1", "show system topics")
    create = form(
        "/topics",
        [
            field("Topic", "topic", required=True),
            field("Read queues", "read_queues", 8, kind="number"),
            field("Write queues", "write_queues", 8, kind="number"),
        ],
        "Create topic",
    )
    body = Html(
        f'<section class="actions"><h2>New topic</h2>{create}</section><p>{toggle}</p>'
        + table(["topic", "queues", "messages", "TPS"], rows, test_id="topics", empty="No topic yet.")
    )
    return page("Topics", body, section="/topics", refresh_s=10, lines=lines)


def topic_page(
    topic: str,
    route: Sequence[QueueData],
    statuses: Sequence[QueueStatus],
    tps: float | None,
    groups: Sequence[str],
    lines: Mapping[str, str] | None = None,
) -> Html:
    brokers = [(q.broker_name, q.read_queue_nums, q.write_queue_nums, permission(q.perm)) for q in route]
    queues = [
        (s.queue.broker_name, s.queue.queue_id, s.min_offset, s.max_offset, when(s.last_update_timestamp))
        for s in statuses
    ]
    read = max((q.read_queue_nums for q in route), default=8)
    write = max((q.write_queue_nums for q in route), default=8)
    change = form(
        path("topics", topic, "queues"),
        [
            field("Read queues", "read_queues", read, kind="number"),
            field("Write queues", "write_queues", write, kind="number"),
        ],
        "Change queue counts",
    )
    delete = form(path("topics", topic, "delete"), [], "Delete topic", confirm=f"Delete topic {topic} on every broker?")
    consumers = join((link(path("groups", g), g) for g in groups), ", ") or Html("none")
    search = link(with_query("/messages", by="time", topic=topic), "search its messages")
    body = Html(
        f'<p>TPS <strong data-testid="topic-tps">{esc(rate(tps))}</strong> · consumer groups: {consumers}'
        f" · {search}</p>"
        + table(["broker", "read queues", "write queues", "perm"], brokers, test_id="route")
        + Html("<h2>Queues</h2>")
        + table(["broker", "queue", "min offset", "max offset", "last stored"], queues, test_id="queues")
        + Html(f'<section class="actions"><h2>Change</h2>{change}{delete}</section>')
    )
    return page(f"Topic {topic}", body, section="/topics", refresh_s=10, lines=lines)


def groups_page(groups: Sequence[GroupOverview], lines: Mapping[str, str] | None = None) -> Html:
    rows = [
        (
            link(path("groups", g.group), g.group),
            g.members,
            g.consume_type or "",
            g.message_model or "",
            f"{g.consume_tps:.2f}",
            g.lag,
        )
        for g in groups
    ]
    headers = ["group", "members", "consume type", "model", "consume TPS", "lag"]
    body = table(headers, rows, test_id="groups", empty="No consumer group yet.")
    return page("Consumer groups", body, section="/groups", refresh_s=10, lines=lines)


def group_page(
    group: str,
    connection: ConsumerConnection | None,
    stats: ConsumeStats,
    topics: Sequence[str],
    reset: Sequence[MessageQueueOffset] = (),
    lines: Mapping[str, str] | None = None,
) -> Html:
    if connection is None or not connection.connection_set:
        members = Html('<p data-testid="members">No member online.</p>')
        model = Html("")
    else:
        members = table(
            ["client id", "address", "language", "version"],
            [(c.client_id, c.client_addr, c.language, c.version) for c in connection.connection_set],
            test_id="members",
        )
        subscriptions = ", ".join(f"{s.topic} ({s.sub_string})" for s in connection.subscription_table.values())
        model = definitions(
            [
                ("consume type", connection.consume_type.value),
                ("message model", connection.message_model.value),
                ("consume from", connection.consume_from_where.value),
                ("subscriptions", subscriptions),
            ],
            test_id="model",
        )
    rows = [
        (
            r.topic,
            r.broker_name,
            r.queue_id,
            r.broker_offset,
            r.consumer_offset,
            lag(r.broker_offset, r.consumer_offset),
            when(r.last_timestamp),
        )
        for r in stats.offset_table
    ]
    total = sum(lag(r.broker_offset, r.consumer_offset) for r in stats.offset_table)
    progress = table(
        ["topic", "broker", "queue", "broker offset", "consumer offset", "lag", "last consumed"],
        rows,
        test_id="progress",
        empty="The group has committed no offset.",
    )
    reset_form = form(
        path("groups", group, "reset"),
        [
            select("Topic", "topic", [(t, t) for t in topics]),
            field("To time", "time", kind="datetime-local", hint="empty: now"),
            Html('<label><input type="checkbox" name="force" value="1" checked> force (also forward)</label>'),
        ],
        "Reset offsets",
        confirm="Move the group's offsets of this topic to that time?",
    )
    done = (
        Html("<h3>New offsets</h3>")
        + table(
            ["topic", "broker", "queue", "offset"],
            [(o.topic, o.broker_name, o.queue_id, o.offset) for o in reset],
            test_id="reset",
        )
        if reset
        else Html("")
    )
    body = Html(
        f"<h2>Members</h2>{members}{model}"
        f"<h2>Progress</h2><p>consume TPS <strong>{stats.consume_tps:.2f}</strong> · total lag"
        f' <strong data-testid="total-lag">{total}</strong></p>{progress}'
        f'<section class="actions"><h2>Reset offsets by time</h2>{reset_form}{done}</section>'
    )
    return page(f"Consumer group {group}", body, section="/groups", lines=lines)


SEARCHES = (
    ("id", "Message id"),
    ("key", "Key"),
    ("unique", "Unique key"),
    ("offset", "Queue offset"),
    ("time", "Topic and time range"),
)
"""The message searches: ``by`` value, and its name on the page."""


def messages_page(
    params: Mapping[str, str], found: Sequence[MessageExt] | None, lines: Mapping[str, str] | None = None
) -> Html:
    """The search form (filled with ``params``) and what the last search found (None: none ran)."""
    by = params.get("by", "id")
    value = params.get
    fields = [
        select("Search by", "by", list(SEARCHES), by),
        field("Topic", "topic", value("topic", ""), hint="needed except for an offset message id"),
        field("Message id / key", "key", value("key", ""), hint="msg id, offset msg id, key or unique key"),
        field("Broker", "broker", value("broker", ""), hint="by offset"),
        field("Queue", "queue", value("queue", ""), kind="number", hint="by offset"),
        field("Offset", "offset", value("offset", ""), kind="number", hint="by offset"),
        field("From", "begin", value("begin", ""), kind="datetime-local"),
        field("To", "end", value("end", ""), kind="datetime-local"),
    ]
    search = form("/messages", fields, "Search", method="get")
    results = Html("")
    if found is not None:
        rows = [
            (
                link(with_query("/message", id=m.offset_msg_id), m.msg_id or m.offset_msg_id),
                placed(m),
                m.tags or "",
                " ".join(m.keys),
                m.queue_id,
                m.queue_offset,
                when(m.store_timestamp),
                len(m.body),
            )
            for m in found
        ]
        headers = ["message id", "topic", "tags", "keys", "queue", "offset", "stored", "bytes"]
        results = Html(
            f"<h2>Found {len(found)}</h2>{table(headers, rows, test_id='found', empty='No message matches.')}"
        )
    body = Html(f'<section class="search">{search}</section>{results}')
    return page("Messages", body, section="/messages", lines=lines)


def message_page(message: MessageExt, *, as_hex: bool, lines: Mapping[str, str] | None = None) -> Html:
    """One message: headers, properties and the body as text (when it is printable UTF-8) or hex."""
    headers = definitions(
        [
            ("topic", placed(message)),
            ("message id", message.msg_id),
            ("offset message id", message.offset_msg_id),
            ("tags", message.tags or ""),
            ("keys", " ".join(message.keys)),
            ("queue", message.queue_id),
            ("queue offset", message.queue_offset),
            ("commit log offset", message.commit_log_offset),
            ("reconsume times", message.reconsume_times),
            ("born", f"{when(message.born_timestamp)} at {message.born_host}"),
            ("stored", f"{when(message.store_timestamp)} at {message.store_host}"),
            ("store size", message.store_size),
            ("flag", message.flag),
            ("sys flag", message.sys_flag),
        ],
        test_id="headers",
    )
    properties = table(
        ["property", "value"], sorted(message.properties.items()), test_id="properties", empty="No property."
    )
    text = body_text(message.body, force_hex=as_hex)
    shown = "\n".join(hex_dump(message.body)) if text is None else text
    other = "text" if text is None else "hex"
    switch = (
        link(with_query("/message", id=message.offset_msg_id, hex=1 if other == "hex" else None), f"show as {other}")
        if other == "hex" or body_text(message.body) is not None
        else Html("")
    )
    kind = "hex" if text is None else "text"
    body = Html(
        f"<h2>Headers</h2>{headers}<h2>Properties</h2>{properties}"
        f"<h2>Body <small>({len(message.body)} bytes, {kind})</small> {switch}</h2>"
        f'<pre class="body" data-testid="body" data-kind="{kind}">{esc(shown)}</pre>'
        + link(
            with_query("/messages", by="id", topic=message.topic, key=message.msg_id or message.offset_msg_id),
            "find its retries and dead letters",
        )
    )
    return page(f"Message {message.msg_id or message.offset_msg_id}", body, section="/messages", lines=lines)


def send_page(
    params: Mapping[str, str], sent: SendResult | None = None, lines: Mapping[str, str] | None = None
) -> Html:
    value = params.get
    fields = [
        field("Topic", "topic", value("topic", ""), required=True),
        field("Tags", "tags", value("tags", "")),
        field("Keys", "keys", value("keys", ""), hint="space separated"),
        Html(f'<label>Body <textarea name="body" rows="4">{esc(value("body", ""))}</textarea></label>'),
        Html(
            '<label>Properties <textarea name="properties" rows="2" placeholder="name=value, one a line">'
            f"{esc(value('properties', ''))}</textarea></label>"
        ),
    ]
    result = Html("")
    if sent is not None:
        result = Html(
            definitions(
                [
                    ("status", sent.status.name),
                    ("message id", sent.msg_id),
                    ("offset message id", sent.offset_msg_id),
                    ("queue", f"{sent.message_queue.broker_name} {sent.message_queue.queue_id}"),
                    ("queue offset", sent.queue_offset),
                ],
                test_id="sent",
            )
            + link(with_query("/message", id=sent.offset_msg_id), "view the message")
        )
    body = Html(f'<section class="actions">{form("/send", fields, "Send")}</section>{result}')
    return page("Send a test message", body, section="/send", lines=lines)


def error_page(error: str) -> Html:
    """A page the cluster could not fill: what failed, and the links to the others."""
    body = Html("<p>Check that the NameServer and the brokers are running, then reload.</p>")
    return page("The cluster did not answer", body, section="", lines={"error": error})
