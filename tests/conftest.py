"""Shared pytest configuration. Fixtures that users might want live in ``rocketq.testing``."""

from hypothesis import settings

# No per-example deadline (Hypothesis fails an example that takes over 200 ms by default): a wall-clock
# limit that a busy machine breaks. Speed is measured in benchmarks, not in tests.
settings.register_profile("rocketq", deadline=None)
settings.load_profile("rocketq")
