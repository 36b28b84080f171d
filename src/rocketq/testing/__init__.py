"""Test helpers for rocketq and for users' own tests: an in-process cluster on port 0, a fake clock."""

from rocketq.testing.clock import FakeClock
from rocketq.testing.cluster import LocalCluster, ThreadedCluster

__all__ = ["FakeClock", "LocalCluster", "ThreadedCluster"]
