"""Transactional messages on the broker: half messages, their commit or rollback, the check-back, and
rocketq's grouped transactions.

- ``half``, ``batches``: the half messages, committed messages and op messages as data (pure).
- ``ranges``, ``ledger``, ``committed``: what is pending, what is settled, and the decisions (pure).
- ``reading``: the transaction topics read back from the store.
- ``service``: ``TransactionService``, the I/O: stores halves and settlements, rebuilds after restarts.
- ``checks``: ``CheckService``, the check-back rounds on an injected clock.
"""
