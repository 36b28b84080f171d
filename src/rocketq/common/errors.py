"""The root of every exception rocketq raises."""

from __future__ import annotations


class RocketqError(Exception):
    """Base class of all rocketq errors."""
