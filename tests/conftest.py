"""Shared pytest configuration. Fixtures that users might want live in ``rocketq.testing``."""
