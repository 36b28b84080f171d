"""Compiled (mypyc) builds of the message-path modules, loaded only when they match their sources.

``STATUS`` says whether this process runs them; see ``rocketq.native.loader`` and
``rocketq.native.build``.
"""

from rocketq.native.loader import NativeStatus, install

STATUS: NativeStatus = install()

__all__ = ["STATUS", "NativeStatus"]
