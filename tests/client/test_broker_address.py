"""``ClientInstance.broker_address`` picks the broker of a group a pull goes to: the one asked for when the
route has it, else the master, else the lowest-numbered slave. It looks the asked one up first, without
the sorted candidates; held equal to that rule written out plainly, over any route and any id asked."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rocketq.client import ClientConfig
from rocketq.client.instance import ClientInstance
from rocketq.client.route import MASTER_ID


def by_the_rule(addrs: dict[str, dict[int, str]], name: str, wanted: int) -> tuple[str, int] | None:
    group = addrs.get(name, {})
    for candidate in (wanted, MASTER_ID, *sorted(group)):
        if candidate in group:
            return group[candidate], candidate
    return None


routes = st.dictionaries(
    st.sampled_from(["a", "b"]),
    st.dictionaries(st.integers(0, 4), st.sampled_from(["10.0.0.1:10911", "10.0.0.2:10911", "10.0.0.3:10911"])),
)


@given(addrs=routes, name=st.sampled_from(["a", "b", "c"]), wanted=st.integers(0, 5))
def test_the_broker_a_pull_goes_to_follows_the_rule(addrs: dict[str, dict[int, str]], name: str, wanted: int) -> None:
    instance = ClientInstance(ClientConfig(namesrv_addr="127.0.0.1:9876", client_ip="127.0.0.1"))
    instance.broker_addrs = addrs
    assert instance.broker_address(name, wanted) == by_the_rule(addrs, name, wanted)
    assert instance.broker_address(name) == by_the_rule(addrs, name, MASTER_ID)
