"""Test helpers for rocketq and for users' own tests: an in-process cluster on port 0."""

from rocketq.testing.cluster import LocalCluster, ThreadedCluster

__all__ = ["LocalCluster", "ThreadedCluster"]
