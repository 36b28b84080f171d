"""Admin operations that reach one member of a consumer group through a broker:
GET_CONSUMER_RUNNING_INFO (307) and CONSUME_MESSAGE_DIRECTLY (309) (``rocketq admin consumerStatus``
and ``consumeMessage``)."""

from __future__ import annotations

from rocketq.client.admin import AdminClient
from rocketq.client.errors import MQClientError, ValidationError
from rocketq.client.message_query import offset_id_address
from rocketq.protocol import RequestCode, ResponseCode
from rocketq.protocol.running_info import (
    ConsumeMessageDirectlyResult,
    ConsumeMessageDirectlyResultRequestHeader,
    ConsumerRunningInfo,
    GetConsumerRunningInfoRequestHeader,
)


async def consumer_running_info(
    admin: AdminClient, group: str, client_id: str, *, jstack: bool = False
) -> ConsumerRunningInfo:
    """What member ``client_id`` of ``group`` is doing: its settings, subscriptions, queues and rates
    (with ``jstack``, its threads' stacks too). Asked through the first master that reaches it."""
    fields = GetConsumerRunningInfoRequestHeader(
        consumer_group=group, client_id=client_id, jstack_enable=jstack
    ).to_ext_fields()
    remarks = []
    for address in (await admin.master_addresses()).values():
        response = await admin.request_broker(
            address, RequestCode.GET_CONSUMER_RUNNING_INFO, fields, ok=(0, ResponseCode.SYSTEM_ERROR)
        )
        if response.code == ResponseCode.SUCCESS:
            return ConsumerRunningInfo.decode(response.body)
        remarks.append(f"{address}: {response.remark}")
    raise MQClientError(f"no broker reached consumer {client_id} of group {group}: " + "; ".join(remarks))


async def consume_message_directly(
    admin: AdminClient, group: str, client_id: str, msg_id: str
) -> ConsumeMessageDirectlyResult:
    """Have member ``client_id`` of ``group`` run its listener on the message with offset id ``msg_id``
    (its broker sends the message along); how it went. Nothing is committed."""
    place = offset_id_address(msg_id)
    if place is None:
        raise ValidationError(f"{msg_id!r} is not an offset message id (a send's offsetMsgId)")
    fields = ConsumeMessageDirectlyResultRequestHeader(
        consumer_group=group, client_id=client_id, msg_id=msg_id
    ).to_ext_fields()
    response = await admin.request_broker(place[0], RequestCode.CONSUME_MESSAGE_DIRECTLY, fields)
    return ConsumeMessageDirectlyResult.decode(response.body)
