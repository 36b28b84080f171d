"""Requests whose header fields the clients write out (a dict per request in compiled code instead of the
header Struct's interpreted to_ext_fields) carry exactly their header's fields, as the broker reads them."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rocketq.client.config import ProducerConfig
from rocketq.client.message import MessageQueue
from rocketq.client.pull import FLAG_COMMIT_OFFSET, FLAG_SUBSCRIPTION, FLAG_SUSPEND, pull_request
from rocketq.client.send_checks import SendSettings, send_request
from rocketq.client.transactions import TransactionState, end_transaction_request
from rocketq.protocol import PullMessageRequestHeader, RequestCode, SendMessageRequestHeaderV2
from rocketq.protocol.headers import EndTransactionRequestHeader


@given(
    st.text(min_size=1, max_size=20),
    st.integers(0, 255),
    st.integers(0, 2**62),
    st.integers(1, 1024),
    st.sampled_from(["", "*", "TagA || TagB"]),
    st.integers(-1, 2**62),
    st.sampled_from([0, 15_000]),
    st.integers(0, 2**62),
    st.one_of(st.none(), st.integers(1, 2**31)),
)
def test_a_pull_request_is_its_header(
    group: str,
    queue_id: int,
    offset: int,
    max_nums: int,
    expression: str,
    commit: int,
    suspend: int,
    version: int,
    max_bytes: int | None,
) -> None:
    queue = MessageQueue("TopicP", "broker-a", queue_id)
    request = pull_request(
        group,
        queue,
        offset,
        max_nums,
        expression,
        commit_offset=commit,
        suspend_ms=suspend,
        sub_version=version,
        max_bytes=max_bytes,
    )
    sys_flag = FLAG_SUBSCRIPTION | (FLAG_COMMIT_OFFSET if commit > 0 else 0) | (FLAG_SUSPEND if suspend > 0 else 0)
    header = PullMessageRequestHeader(
        consumer_group=group,
        topic="TopicP",
        queue_id=queue_id,
        queue_offset=offset,
        max_msg_nums=max_nums,
        sys_flag=sys_flag,
        commit_offset=max(commit, 0),
        suspend_timeout_millis=suspend,
        subscription=expression or "*",
        sub_version=version,
        expression_type="TAG",
        max_bytes=max_bytes,
    )
    assert request.code == RequestCode.PULL_MESSAGE
    assert ("rqMaxBytes" in request.ext_fields) == (max_bytes is not None)
    assert request.ext_fields == header.to_ext_fields()
    assert PullMessageRequestHeader.from_ext_fields(request.ext_fields) == header


@given(
    st.from_regex(r"[A-Za-z0-9_-]{1,20}", fullmatch=True),
    st.integers(0, 255),
    st.text(max_size=40),
    st.sampled_from([0, 1]),
    st.integers(-(2**31), 2**31 - 1),
    st.booleans(),
)
def test_a_send_request_is_its_v2_header(
    group: str, queue_id: int, properties: str, sys_flag: int, flag: int, batch: bool
) -> None:
    config = ProducerConfig(group=group)
    request = send_request(
        SendSettings(config),
        MessageQueue("TopicS", "broker-a", queue_id),
        b"body",
        properties,
        sys_flag,
        flag,
        batch=batch,
    )
    header = SendMessageRequestHeaderV2.from_ext_fields(request.ext_fields)
    assert request.code == (RequestCode.SEND_BATCH_MESSAGE if batch else RequestCode.SEND_MESSAGE_V2)
    assert header == SendMessageRequestHeaderV2(
        producer_group=group,
        topic="TopicS",
        default_topic=config.create_topic_key,
        default_topic_queue_nums=config.default_topic_queue_nums,
        queue_id=queue_id,
        sys_flag=sys_flag,
        born_timestamp=header.born_timestamp,
        flag=flag,
        properties=properties,
        reconsume_times=0,
        batch=batch,
    )
    assert request.ext_fields == header.to_ext_fields()


@given(
    st.from_regex(r"[A-Za-z0-9_-]{1,20}", fullmatch=True),
    st.integers(0, 2**62),
    st.integers(0, 2**62),
    st.sampled_from(list(TransactionState)),
    st.text(min_size=1, max_size=32),
    st.one_of(st.none(), st.text(min_size=1, max_size=32)),
    st.booleans(),
)
def test_an_end_transaction_request_is_its_header(
    group: str,
    queue_offset: int,
    commit_log_offset: int,
    state: TransactionState,
    msg_id: str,
    transaction_id: str | None,
    from_check: bool,
) -> None:
    request = end_transaction_request(
        group, queue_offset, commit_log_offset, state, msg_id, transaction_id, from_check=from_check
    )
    header = EndTransactionRequestHeader(
        producer_group=group,
        tran_state_table_offset=queue_offset,
        commit_log_offset=commit_log_offset,
        commit_or_rollback=state.value,
        from_transaction_check=from_check,
        msg_id=msg_id,
        transaction_id=transaction_id,
    )
    assert request.code == RequestCode.END_TRANSACTION and request.is_oneway
    assert request.ext_fields == header.to_ext_fields()
    assert EndTransactionRequestHeader.from_ext_fields(request.ext_fields) == header
