"""``rocketq admin`` message queries: by id, by key and time range, by unique key, by queue offset; and
printMsg, every message of a topic.

Each prints every message it finds as a block of headers, properties and body (``message_view``), or
with ``--json`` a JSON list of objects (one object for ``queryMsgByOffset``). Finding nothing is a
one-line error with exit status 1.
"""

from __future__ import annotations

import asyncio
import codecs

import click

from rocketq.admin.message_view import message_blocks, message_document
from rocketq.admin.options import client_config, json_option, namesrv_option, parse_time, run
from rocketq.admin.render import emit, table, timestamp
from rocketq.client.message import MessageExt, MessageQueue
from rocketq.client.queue_reader import QueueReader
from rocketq.common.errors import RocketqError

hex_option = click.option("--hex", "force_hex", is_flag=True, help="show bodies as hex even when they are text")
TIME_HELP = "ms since the epoch, 'now', or an ISO time such as 2026-11-21T10:00:00"


def _show(messages: list[MessageExt], as_json: bool, force_hex: bool) -> None:
    if as_json:
        emit(True, [message_document(m, force_hex=force_hex) for m in messages])
    else:
        click.echo(message_blocks(messages, force_hex=force_hex))


@click.command("queryMsgById")
@namesrv_option
@click.option("-t", "--topic", help="topic of a client message id (UNIQ_KEY); not needed for an offset id")
@click.option("-i", "--msg-id", required=True)
@click.option(
    "--retries/--no-retries",
    default=True,
    show_default=True,
    help="also its copies in the retry, dead-letter and delay topics of the groups consuming it",
)
@hex_option
@json_option
def query_msg_by_id(
    namesrv: str, topic: str | None, msg_id: str, retries: bool, force_hex: bool, as_json: bool
) -> None:
    """A message by its id (the broker's offset id, or with --topic the client's unique id), then its
    retries: every copy in store order, with how many deliveries came before each."""
    messages = run(namesrv, lambda a: a.query_by_id(topic, msg_id, with_retries=retries))
    if not messages:
        raise click.ClickException(f"message {msg_id} not found" + ("" if topic else " (a client id needs -t)"))
    _show(messages, as_json, force_hex)


@click.command("queryMsgByKey")
@namesrv_option
@click.option("-t", "--topic", required=True)
@click.option("-k", "--key", required=True, help="one of the messages' KEYS")
@click.option("-b", "--begin", help=f"stored at or after this time; {TIME_HELP}  [default: any time]")
@click.option("-e", "--end", help=f"stored at or before this time; {TIME_HELP}  [default: now and later]")
@click.option("--max", "max_num", default=64, show_default=True, help="at most this many, the newest")
@hex_option
@json_option
def query_msg_by_key(
    namesrv: str,
    topic: str,
    key: str,
    begin: str | None,
    end: str | None,
    max_num: int,
    force_hex: bool,
    as_json: bool,
) -> None:
    """Messages of a topic whose KEYS contain this key, from every broker of the topic, in store order.
    Messages whose key only hashes the same are left out."""
    begin_ms = parse_time(begin) if begin else 0
    end_ms = parse_time(end) if end else None
    if end_ms is not None and end_ms < begin_ms:
        raise click.BadParameter("the end is before the begin", param_hint="'-e' / '--end'")
    messages = run(namesrv, lambda a: a.query_by_key(topic, key, max_num=max_num, begin_ms=begin_ms, end_ms=end_ms))
    if not messages:
        between = ""
        if begin or end:
            between = f" stored between {timestamp(begin_ms) or 'the start'} and {timestamp(end_ms) or 'now'}"
        raise click.ClickException(f"no message of topic {topic} has the key {key!r}{between}")
    _show(messages, as_json, force_hex)


@click.command("queryMsgByUniqueKey")
@namesrv_option
@click.option("-t", "--topic", required=True)
@click.option("-i", "--msg-id", "unique_key", required=True, help="the client's message id (UNIQ_KEY)")
@hex_option
@json_option
def query_msg_by_unique_key(namesrv: str, topic: str, unique_key: str, force_hex: bool, as_json: bool) -> None:
    """A message by the id its producer gave it (UNIQ_KEY, what a send returns as msgId), from every
    broker of the topic: more than one when it was stored more than once."""
    messages = run(namesrv, lambda a: a.query_by_unique_key(topic, unique_key))
    if not messages:
        raise click.ClickException(f"no message of topic {topic} has the unique key {unique_key}")
    _show(messages, as_json, force_hex)


@click.command("queryMsgByOffset")
@namesrv_option
@click.option("-t", "--topic", required=True)
@click.option("-b", "--broker-name", required=True)
@click.option("-i", "--queue-id", type=click.IntRange(min=0), required=True)
@click.option("-o", "--offset", type=click.IntRange(min=0), required=True, help="the message's queue offset")
@hex_option
@json_option
def query_msg_by_offset(
    namesrv: str, topic: str, broker_name: str, queue_id: int, offset: int, force_hex: bool, as_json: bool
) -> None:
    """The message at an offset of one queue (a consumer's position, say)."""
    message = run(namesrv, lambda a: a.query_by_offset(topic, broker_name, queue_id, offset))
    if as_json:
        emit(True, message_document(message, force_hex=force_hex))
    else:
        click.echo(message_blocks([message], force_hex=force_hex))


@click.command("printMsg")
@namesrv_option
@click.option("-t", "--topic", required=True)
@click.option("-c", "--charset", default="UTF-8", show_default=True, help="how to read the bodies as text")
@click.option("-s", "--sub-expression", default="*", show_default=True, help="only messages with these tags")
@click.option("-b", "--begin", help=f"stored at or after this time; {TIME_HELP}  [default: the oldest kept]")
@click.option("-e", "--end", help=f"stored before this time; {TIME_HELP}  [default: the newest]")
@hex_option
@json_option
def print_msg(
    namesrv: str,
    topic: str,
    charset: str,
    sub_expression: str,
    begin: str | None,
    end: str | None,
    force_hex: bool,
    as_json: bool,
) -> None:
    """Every message of a topic (of a time range, with some tags), queue by queue, read without a
    consumer group (nothing is committed)."""
    try:
        codecs.lookup(charset)
    except LookupError as exc:
        raise click.BadParameter(f"unknown charset {charset!r}", param_hint="'-c' / '--charset'") from exc
    begin_ms = parse_time(begin) if begin else None
    end_ms = parse_time(end) if end else None
    config = client_config(namesrv)

    async def read() -> list[tuple[MessageQueue, int, int, list[MessageExt]]]:
        found = []
        async with QueueReader(config=config) as reader:
            for queue in await reader.queues(topic):
                low, high = (await reader.offsets([queue]))[queue]
                if begin_ms is not None:
                    low = max(low, await reader.offset_for_timestamp(queue, begin_ms))
                if end_ms is not None:
                    high = min(high, await reader.offset_for_timestamp(queue, end_ms))
                messages = await reader.messages(queue, low, high, selector=sub_expression) if low < high else []
                found.append((queue, low, high, messages))
        return found

    try:
        queues = asyncio.run(read())
    except RocketqError as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        emit(
            True,
            [
                {
                    "broker": queue.broker_name,
                    "queueId": queue.queue_id,
                    "minOffset": low,
                    "maxOffset": high,
                    "messages": [message_document(m, force_hex=force_hex) for m in messages],
                }
                for queue, low, high, messages in queues
            ],
        )
        return
    for queue, low, high, messages in queues:
        click.echo(f"{queue.broker_name} queue {queue.queue_id}: offsets {low} to {high}")
        rows = [
            [
                m.queue_offset,
                m.msg_id,
                m.tags or "",
                " ".join(m.keys),
                timestamp(m.store_timestamp),
                _body(m.body, charset, force_hex),
            ]
            for m in messages
        ]
        if rows:
            click.echo(table(["offset", "msgId", "tags", "keys", "storeTime", "body"], rows))
        click.echo("")


def _body(body: bytes, charset: str, force_hex: bool) -> str:
    """A body as text in ``charset``, or as hex when it is not (or ``force_hex``)."""
    if not force_hex:
        try:
            return body.decode(charset)
        except UnicodeDecodeError:
            pass
    return body.hex()


MESSAGE_COMMANDS = (query_msg_by_id, query_msg_by_key, query_msg_by_unique_key, query_msg_by_offset, print_msg)
