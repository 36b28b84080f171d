from __future__ import annotations

from rocketq.broker.message_put import redirect_delayed
from rocketq.broker.retry import SendBackPlan, plan_send_back, send_back_properties
from rocketq.common.record import SysFlag


def test_plan_retries_with_growing_delay_then_dead_letters() -> None:
    assert plan_send_back(0, 0, 16) == SendBackPlan(dead_letter=False, delay_level=3, reconsume_times=1)
    assert plan_send_back(5, 0, 16) == SendBackPlan(dead_letter=False, delay_level=8, reconsume_times=6)
    assert plan_send_back(2, 7, 16) == SendBackPlan(dead_letter=False, delay_level=7, reconsume_times=3)
    assert plan_send_back(15, 0, 16).dead_letter is False  # the 16th retry still happens
    assert plan_send_back(16, 0, 16) == SendBackPlan(dead_letter=True, delay_level=0, reconsume_times=17)
    assert plan_send_back(0, -1, 16) == SendBackPlan(dead_letter=True, delay_level=0, reconsume_times=1)
    assert plan_send_back(0, 0, 0).dead_letter is True


def test_send_back_properties_keep_the_first_topic_and_id() -> None:
    original = {"UNIQ_KEY": "U1", "KEYS": "k1 k2", "TAGS": "TagA", "REAL_TOPIC": "X", "REAL_QID": "1"}
    retry = send_back_properties(original, "TopicA", "ID-1", plan_send_back(0, 0, 16))
    assert retry == {
        "UNIQ_KEY": "U1",
        "KEYS": "k1 k2",
        "TAGS": "TagA",
        "RETRY_TOPIC": "TopicA",
        "ORIGIN_MESSAGE_ID": "ID-1",
        "DELAY": "3",
    }
    again = send_back_properties(retry, "%RETRY%G", "ID-2", plan_send_back(1, 0, 16))
    assert again["RETRY_TOPIC"] == "TopicA" and again["ORIGIN_MESSAGE_ID"] == "ID-1" and again["DELAY"] == "4"
    dead = send_back_properties(retry, "%RETRY%G", "ID-2", plan_send_back(1, -1, 16))
    assert "DELAY" not in dead and dead["RETRY_TOPIC"] == "TopicA"


def test_redirect_delayed() -> None:
    properties = {"DELAY": "30"}
    assert redirect_delayed(properties, "T", 2, 0, 18) == ("SCHEDULE_TOPIC_XXXX", 17)
    assert properties == {"DELAY": "18", "REAL_TOPIC": "T", "REAL_QID": "2"}
    assert redirect_delayed({"DELAY": "0"}, "T", 2, 0, 18) == ("T", 2)
    assert redirect_delayed({}, "T", 2, 0, 18) == ("T", 2)
    assert redirect_delayed({"DELAY": "3"}, "T", 2, SysFlag.TRANSACTION_PREPARED_TYPE, 18) == ("T", 2)
    assert redirect_delayed({"DELAY": "3"}, "T", 2, SysFlag.TRANSACTION_COMMIT_TYPE, 18) == ("SCHEDULE_TOPIC_XXXX", 2)
