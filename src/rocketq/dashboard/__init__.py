"""The web dashboard (``rocketq dashboard``, ``rocketq up --dashboard``): server-rendered pages over the
admin client for the cluster and its brokers, topics, consumer groups, message search and a test send.

``figures`` holds the arithmetic (rates, lag, what is a system topic), ``html`` and ``pages`` the
rendering (data in, escaped HTML out), ``app`` the aiohttp handlers and the ``Dashboard`` server, and
``command`` the click command. Needs ``aiohttp``: ``pip install 'rocketq[dashboard]'``.
"""
