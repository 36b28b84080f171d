"""rocketq: a RocketMQ-compatible distributed message queue in Python."""

__version__ = "0.1.0"
__all__ = ["__version__"]
