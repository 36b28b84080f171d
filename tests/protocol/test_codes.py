from __future__ import annotations

import pytest

from rocketq.protocol import LanguageCode, RequestCode, ResponseCode, SerializeType


@pytest.mark.parametrize(
    ("member", "value"),
    [
        (RequestCode.SEND_MESSAGE, 10),
        (RequestCode.PULL_MESSAGE, 11),
        (RequestCode.UPDATE_AND_CREATE_TOPIC, 17),
        (RequestCode.HEART_BEAT, 34),
        (RequestCode.CHECK_TRANSACTION_STATE, 39),
        (RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, 40),
        (RequestCode.REGISTER_BROKER, 103),
        (RequestCode.GET_ROUTEINFO_BY_TOPIC, 105),
        (RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, 206),
        (RequestCode.SEND_MESSAGE_V2, 310),
        (RequestCode.SEND_BATCH_MESSAGE, 320),
        (RequestCode.ADD_WRITE_PERM_OF_BROKER, 327),
        (ResponseCode.SUCCESS, 0),
        (ResponseCode.REQUEST_CODE_NOT_SUPPORTED, 3),
        (ResponseCode.TOPIC_NOT_EXIST, 17),
        (ResponseCode.PULL_NOT_FOUND, 19),
        (ResponseCode.PULL_OFFSET_MOVED, 21),
        (ResponseCode.QUERY_NOT_FOUND, 22),
        (ResponseCode.SUBSCRIPTION_NOT_LATEST, 25),
        (ResponseCode.TRANSACTION_STATE_UNKNOW, 202),
        (ResponseCode.NO_MESSAGE, 208),
        (LanguageCode.JAVA, 0),
        (LanguageCode.CPP, 1),
        (LanguageCode.PYTHON, 3),
        (LanguageCode.RUST, 12),
        (SerializeType.JSON, 0),
        (SerializeType.ROCKETMQ, 1),
    ],
)
def test_codes_match_rocketmq(member: int, value: int) -> None:
    assert member == value


def test_codes_are_unique() -> None:
    # IntEnum would silently turn a duplicated number into an alias.
    for enum in (RequestCode, ResponseCode, LanguageCode):
        assert len(enum.__members__) == len(list(enum)), enum


def test_every_request_code_in_the_fact_sheet_is_defined() -> None:
    listed = {
        10, 11, 12, 13, 14, 15, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 41, 42, 46, 310, 320, 324, 325,
        39, 40, 211, 220, 221, 307, 309, 326,
        17, 21, 22, 23, 25, 26, 27, 28, 43, 45, 50, 51, 52, 53, 200, 201, 202, 203, 204, 207, 208, 209,
        210, 212, 213, 214, 215, 222, 223, 300, 303, 305, 306, 308, 314, 315, 316, 317, 321, 323, 328, 329,
        100, 101, 102, 103, 104, 105, 106, 205, 206, 216, 219, 224, 304, 311, 312, 313, 318, 319, 322, 327,
    }  # fmt: skip
    assert listed <= {int(code) for code in RequestCode}
