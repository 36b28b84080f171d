"""Test helpers for rocketq and for users' own tests: an in-process cluster on port 0, a fake clock, and
waiting for a condition instead of sleeping."""

from rocketq.testing.clock import FakeClock
from rocketq.testing.cluster import LocalCluster, ThreadedCluster
from rocketq.testing.waiting import eventually, wait_until

__all__ = ["FakeClock", "LocalCluster", "ThreadedCluster", "eventually", "wait_until"]
