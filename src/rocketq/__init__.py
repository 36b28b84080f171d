"""rocketq: a RocketMQ-compatible distributed message queue in Python."""

# First: choose between the compiled and the plain message-path modules before any of them is imported.
import rocketq.native  # noqa: F401

__version__ = "0.1.0"
__all__ = ["__version__"]
