"""Which modules are compiled with mypyc, and where the compiled build lives.

The message path (frames, records, the store's put and read, the broker's send and pull handlers, the
clients' producer and consumers) is compiled as one mypyc group when a C compiler is at hand
(`python -m rocketq.native.build`, run by `make`). Every module here is also plain Python: without a
build, or with ``ROCKETQ_NATIVE=off``, the same source runs interpreted.

Code that loops on a thread of its own for long stays interpreted too: compiled code never hands the
GIL to other threads by itself (the interpreter does so every few ms), so a compiled dispatcher
catching up on a backlog would hold the event loop up for as long (store bench: wire-batch appends
620k -> 275-350k msgs/s, their p99 0.5 -> 3-4.7 ms). The functions that loop calls are compiled: each
returns within a batch.

A dataclass built once or more per request writes its ``__init__`` out (``init=False``; the dataclass
still gives it repr and eq): the ``__init__`` that ``dataclasses`` generates runs interpreted even in a
compiled class, 0.7-1.5 µs per object against 50-90 ns written out (frozen ones set their fields with
``object.__setattr__``, which mypyc turns into a plain store).

Classes built per message or per request that cannot be part of a reference cycle (``MessageExt``,
``RemotingCommand``) are ``@mypyc_attr(acyclic=True)``: the garbage collector does not track them, so
making them does not count towards a collection and collections do not walk them. A default drain ran
217 generation-0 collections per 300k messages before, 80 after (4-6 % of the consumer's CPU before).

Enum members read once or more per request are bound once as module ``Final`` names (``_PUT_OK: Final =
PutStatus.PUT_OK``), which compiled code reads as C statics: Python 3.11's ``EnumType`` defines
``__getattr__``, so every ``PutStatus.PUT_OK`` written in a function is a generic, slow class attribute
lookup (about 200 ns; 14-17 of them per single-message send before session 20, about 6 % of its
instructions).

Modules that define msgspec Structs stay interpreted (mypyc checks the class-body defaults of such
classes against their declared types, which ``msgspec.field(...)`` is not), as do the numba kernels and
modules with async generators (which mypyc does not compile; the pull consumer's ``__aiter__`` is a
class for that).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

COMPILED_MODULES: Final = (
    "rocketq.acl.access",  # every request to a broker with aclEnable
    "rocketq.acl.signing",  # every request of a client with credentials, and its check
    "rocketq.common.message",
    "rocketq.common.message_id",
    "rocketq.common.names",
    "rocketq.common.record",
    "rocketq.metrics.latency",  # every answer of a server with metrics on is observed
    "rocketq.protocol.batch",
    "rocketq.protocol.command",
    "rocketq.protocol.frame",
    "rocketq.protocol.header_decode",  # every received header
    "rocketq.protocol.request_templates",  # every send and pull request's header
    "rocketq.remoting.blocking",  # every SyncProducer.send's first attempt
    "rocketq.remoting.client",
    "rocketq.remoting.connection",
    "rocketq.remoting.tasks",  # every request a server reads starts through start_eagerly
    "rocketq.remoting.server",
    "rocketq.store.commit_log",
    "rocketq.store.commit_log_scan",  # CommitLog's base class (the dispatcher's scans)
    "rocketq.store.consume_queue",
    "rocketq.store.disk_space",  # every put reads whether the disk refuses it
    "rocketq.store.dispatch",  # a lone put's dispatch on the loop (one batch per call; its thread: dispatch_thread)
    "rocketq.store.dispatch_apply",
    "rocketq.store.flush",
    "rocketq.store.index_file",
    "rocketq.store.index_service",
    "rocketq.store.key_hash",
    "rocketq.store.mapped_file",
    "rocketq.store.mapped_file_queue",
    "rocketq.store.message_store",
    "rocketq.store.store_puts",  # MessageStore's base class: every put goes through it
    "rocketq.store.store_reads",  # StorePuts' base class: every pull reads through it
    "rocketq.store.queue_reader",
    "rocketq.store.queue_table",  # queues_of: where every put's entries go
    "rocketq.store.filtered_read",
    "rocketq.store.record_descriptions",  # every put and scanned record is described here
    "rocketq.store.record_views",
    "rocketq.store.results",
    "rocketq.store.wire_batches",
    "rocketq.broker.acl",  # every request to a broker with aclEnable passes its check
    "rocketq.broker.consumer_offsets",
    "rocketq.broker.consume_rates",  # every pull that finds messages is counted
    "rocketq.broker.context",  # every handler reads the broker's parts through it (send: a dozen reads)
    "rocketq.broker.grouped_puts",
    "rocketq.broker.idempotent_sends",  # its wrapper is in front of every send request's handler
    "rocketq.broker.handlers.offsets",
    "rocketq.broker.handlers.pull",
    "rocketq.broker.pull_frames",  # every pull's answer is framed there
    "rocketq.broker.pull_sites",  # every pull's checks
    "rocketq.broker.handlers.send",
    "rocketq.broker.send_request",  # every send request's header and topic checks
    "rocketq.broker.long_polling",
    "rocketq.broker.loop_dispatch",
    "rocketq.broker.message_put",
    "rocketq.broker.put_traffic",  # every stored send request is counted
    "rocketq.broker.runtime_stats",  # every pull is counted (PullCounters)
    "rocketq.broker.server",
    "rocketq.broker.broker_parts",  # Broker's base classes (a compiled class's bases are compiled)
    "rocketq.broker.broker_roles",
    "rocketq.broker.subscription_groups",
    "rocketq.broker.topic_config",
    "rocketq.broker.handlers.transactions",
    "rocketq.broker.transactions.batches",
    "rocketq.broker.transactions.half",
    "rocketq.broker.transactions.ledger",
    "rocketq.broker.transactions.ranges",
    "rocketq.broker.transactions.service",
    "rocketq.client.auto_batch",  # every send made while others are in flight
    "rocketq.client.answer_reads",  # every send's and pull's answer
    "rocketq.client.blocking_send",  # every SyncProducer.send
    "rocketq.client.consume_service",  # every pulled batch goes to the listener through it
    "rocketq.client.consume_stats",  # every pull and every listener run counts there
    "rocketq.client.consume_threads",
    "rocketq.client.consumer_core",
    "rocketq.client.eager_tasks",  # every pulled batch of a coroutine listener starts its Task here
    "rocketq.client.instance",
    "rocketq.client.latency",
    "rocketq.client.listener",
    "rocketq.client.listener_calls",
    "rocketq.client.listener_slots",  # every listener call takes a slot
    "rocketq.client.message",
    "rocketq.client.offset_store",
    "rocketq.client.process_queue",
    "rocketq.client.producer",
    "rocketq.client.producer_sends",
    "rocketq.client.pull",
    "rocketq.client.pull_consumer",  # every poll() takes its batch there, on the caller's thread when blocking
    "rocketq.client.push_consumer",
    "rocketq.client.route",
    "rocketq.client.send_accumulator",  # every send made while others are in flight waits here
    "rocketq.client.send_checks",  # every send checks its message
    "rocketq.client.send_outcome",  # every send's answer
    "rocketq.client.subscriptions",  # every pull asks for its selector and subscription
    "rocketq.client.sync",
    "rocketq.client.transactions",
    "rocketq.client.unique_id",
)
"""Dotted names of the compiled modules; none of them is a package ``__init__``."""

C_EXTENSIONS: Final = {
    # request signatures in one call (rocketq.acl.signing.NativeKey): OpenSSL's SHA-1, linked with libcrypto
    "rocketq.acl._hmac_sha1": ("crypto",),
}
"""C extension modules (hand-written C, not mypyc) built with the group, and the libraries each links.
Each is optional: a machine without what one needs (OpenSSL's headers) gets the build without it, and
the code importing it falls back to its plain Python twin."""

GROUP_NAME: Final = "rocketq_native"
"""mypyc's group name: the shared library all compiled modules live in is ``rocketq_native__mypyc``."""

SHARED_LIBRARY: Final = f"{GROUP_NAME}__mypyc"

MANIFEST_NAME: Final = "manifest.json"

PACKAGE_DIR: Final = Path(__file__).resolve().parent.parent
"""The ``rocketq`` package folder (``src/rocketq`` in a checkout)."""

NATIVE_DIR: Final = PACKAGE_DIR / "_native"
"""Where the build puts the compiled libraries and its manifest (ignored by git)."""


def source_path(module: str, suffix: str = ".py") -> Path:
    """The ``.py`` file of a compiled module (``.c`` for a C extension), inside the package folder."""
    parts = module.split(".")
    return PACKAGE_DIR.joinpath(*parts[1:]).with_suffix(suffix)
