"""Requests whose header fields the clients write out (a dict per request in compiled code instead of the
header Struct's interpreted to_ext_fields) carry exactly their header's fields, as the broker reads them."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rocketq.client.pull import FLAG_COMMIT_OFFSET, FLAG_SUBSCRIPTION, FLAG_SUSPEND
from rocketq.client.transactions import TransactionState, end_transaction_request
from rocketq.protocol import PullMessageRequestHeader, RequestCode, SendMessageRequestHeaderV2
from rocketq.protocol.headers import IDEMPOTENT_SEND_FIELD, EndTransactionRequestHeader

from ..request_strategies import PULLS, SENDS, PullArguments, SendArguments


@given(PULLS)
def test_a_pull_request_is_its_header(pull: PullArguments) -> None:
    request = pull.request()
    commit, suspend = pull.commit_offset, pull.suspend_ms
    sys_flag = FLAG_SUBSCRIPTION | (FLAG_COMMIT_OFFSET if commit > 0 else 0) | (FLAG_SUSPEND if suspend > 0 else 0)
    header = PullMessageRequestHeader(
        consumer_group=pull.group,
        topic=pull.queue.topic,
        queue_id=pull.queue.queue_id,
        queue_offset=pull.offset,
        max_msg_nums=pull.max_nums,
        sys_flag=sys_flag,
        commit_offset=max(commit, 0),
        suspend_timeout_millis=suspend,
        subscription=pull.expression or "*",
        sub_version=pull.sub_version,
        expression_type="TAG",
        max_bytes=pull.max_bytes,
    )
    assert request.code == RequestCode.PULL_MESSAGE
    assert ("rqMaxBytes" in request.ext_fields) == (pull.max_bytes is not None)
    assert request.ext_fields == header.to_ext_fields()
    assert PullMessageRequestHeader.from_ext_fields(request.ext_fields) == header


@given(SENDS)
def test_a_send_request_is_its_v2_header(send: SendArguments) -> None:
    config, request = send.config, send.request()
    header = SendMessageRequestHeaderV2.from_ext_fields(request.ext_fields)
    assert request.code == (RequestCode.SEND_BATCH_MESSAGE if send.batch else RequestCode.SEND_MESSAGE_V2)
    assert request.is_oneway == send.oneway
    assert header == SendMessageRequestHeaderV2(
        producer_group=send.group,
        topic=send.queue.topic,
        default_topic=config.create_topic_key,
        default_topic_queue_nums=config.default_topic_queue_nums,
        queue_id=send.queue.queue_id,
        sys_flag=send.sys_flag,
        born_timestamp=send.born_ms,
        flag=send.flag,
        properties=send.properties,
        reconsume_times=0,
        batch=send.batch,
        rq_idempotent="true" if send.idempotent else None,  # (rocketq's own field, a field of the header)
    )
    fields = dict(request.ext_fields)
    assert (fields.get(IDEMPOTENT_SEND_FIELD) == "true") == send.idempotent
    assert fields == header.to_ext_fields()


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
