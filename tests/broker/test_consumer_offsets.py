"""ConsumerOffsetManager: its commit (which finds a group's queues through a cache of the table's own
dicts) agrees with a plain ``"topic@group"`` table over any sequence of commits, removals, replacements
and reloads, and an unchanged commit leaves nothing to persist."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketq.broker.consumer_offsets import ConsumerOffsetManager

_tables = st.dictionaries(
    st.sampled_from(["a@b", "a@b@c", "b@c", "c@a"]), st.dictionaries(st.integers(0, 3), st.integers(0, 5))
)
_names = st.sampled_from(["a", "b", "a@b", "b@c", "c"])  # ("@" in names: keys that collide as the wire's do)
_operations = st.lists(
    st.one_of(
        st.tuples(st.just("commit"), _names, _names, st.integers(0, 3), st.integers(-1, 5)),
        st.tuples(st.just("remove_topic"), _names),
        st.tuples(st.just("remove_group"), _names),
        st.tuples(st.just("replace_all"), _tables),
        st.tuples(st.just("reload")),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_operations)
def test_commits_agree_with_a_plain_table(operations: list[tuple[object, ...]]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "consumerOffset.json"
        offsets = ConsumerOffsetManager(path)
        model: dict[str, dict[int, int]] = {}
        for operation in operations:
            name = operation[0]
            if name == "commit":
                _, group, topic, queue_id, offset = operation
                assert isinstance(group, str) and isinstance(topic, str)
                assert isinstance(queue_id, int) and isinstance(offset, int)
                offsets.commit(group, topic, queue_id, offset)
                if offset >= 0:
                    model.setdefault(f"{topic}@{group}", {})[queue_id] = offset
                assert offsets.query(group, topic, queue_id) == model.get(f"{topic}@{group}", {}).get(queue_id)
            elif name == "remove_topic":
                assert isinstance(operation[1], str)
                offsets.remove_topic(operation[1])
                model = {key: queues for key, queues in model.items() if not key.startswith(operation[1] + "@")}
            elif name == "remove_group":
                assert isinstance(operation[1], str)
                offsets.remove_group(operation[1])
                model = {key: queues for key, queues in model.items() if not key.endswith("@" + operation[1])}
            elif name == "replace_all":
                table = operation[1]
                assert isinstance(table, dict)
                offsets.replace_all(table)
                model = {key: dict(queues) for key, queues in table.items()}
            else:  # the broker restarts: what was persisted is what is loaded
                offsets.persist(force=True)
                offsets = ConsumerOffsetManager(path)
                offsets.load()
                model = {key: queues for key, queues in model.items() if queues}
            assert {key: queues for key, queues in offsets.table().items() if queues} == {
                key: queues for key, queues in model.items() if queues
            }


def test_an_unchanged_commit_is_not_persisted_again(tmp_path: Path) -> None:
    path = tmp_path / "consumerOffset.json"
    offsets = ConsumerOffsetManager(path)
    offsets.commit("group", "topic", 0, 7)
    offsets.persist()
    assert path.exists()
    path.unlink()
    offsets.commit("group", "topic", 0, 7)  # (every pull of an idle consumer commits the same offset)
    offsets.persist()
    assert not path.exists()
    offsets.commit("group", "topic", 0, 8)
    offsets.persist()
    reloaded = ConsumerOffsetManager(path)
    reloaded.load()
    assert reloaded.query("group", "topic", 0) == 8
