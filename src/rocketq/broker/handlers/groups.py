"""Consumer group settings: UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200), GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201),
DELETE_SUBSCRIPTIONGROUP (207) (AdminBrokerProcessor over SubscriptionGroupManager)."""

from __future__ import annotations

import logging

from rocketq.broker.context import BrokerContext, parsed, reply
from rocketq.common.names import group_name_problem
from rocketq.protocol import ProtocolError, RemotingCommand, RequestCode, ResponseCode
from rocketq.protocol.bodies import SubscriptionGroupConfigBody, SubscriptionGroupWrapper
from rocketq.protocol.headers import DeleteSubscriptionGroupRequestHeader
from rocketq.remoting import Connection, RequestHandler

log = logging.getLogger(__name__)


def handlers(context: BrokerContext) -> dict[int, RequestHandler]:
    groups = context.groups

    async def create_or_update(request: RemotingCommand, connection: Connection) -> RemotingCommand:
        try:
            body = SubscriptionGroupConfigBody.decode(request.body)
        except ProtocolError as exc:
            return reply(request, ResponseCode.SYSTEM_ERROR, f"bad subscription group body: {exc}")
        problem = group_name_problem(body.group_name)
        if problem is not None:
            return reply(request, ResponseCode.SYSTEM_ERROR, problem)
        if body.retry_queue_nums < 0 or body.retry_max_times < 0:
            return reply(request, ResponseCode.SYSTEM_ERROR, "retryQueueNums and retryMaxTimes must not be negative")
        groups.put(body)
        log.info("subscription group %s updated: %s", body.group_name, body)
        return reply(request, ResponseCode.SUCCESS)

    async def get_all(request: RemotingCommand, connection: Connection) -> RemotingCommand:
        wrapper = SubscriptionGroupWrapper(
            subscription_group_table=dict(groups.table),
            data_version=groups.data_version(),
        )
        return reply(request, ResponseCode.SUCCESS, body=wrapper.encode())

    def delete(request: RemotingCommand, header: DeleteSubscriptionGroupRequestHeader) -> RemotingCommand:
        if groups.delete(header.group_name):
            log.info("subscription group %s deleted", header.group_name)
        if header.remove_offset:
            context.offsets.remove_group(header.group_name)
        return reply(request, ResponseCode.SUCCESS)

    return {
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: create_or_update,
        RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: get_all,
        RequestCode.DELETE_SUBSCRIPTIONGROUP: parsed(DeleteSubscriptionGroupRequestHeader, delete),
    }
