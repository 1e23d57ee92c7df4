"""The stages a storage request passes, in order.

A *stage* is one queue: ``net_in`` (the request message, client to server), ``storage`` (the
device), ``net_out`` (the response message, server to client).
"""

from __future__ import annotations

from enum import StrEnum


class Stage(StrEnum):
    """One queue on a request's path; the value is the name used in files and on the CLI."""

    NET_IN = "net_in"
    STORAGE = "storage"
    NET_OUT = "net_out"


#: The stages of a storage request, in the order a request passes them.
STORAGE_PATH: tuple[Stage, ...] = (Stage.NET_IN, Stage.STORAGE, Stage.NET_OUT)

#: The stages of a network-only request (a key-value or RPC tenant: no device).
NETWORK_PATH: tuple[Stage, ...] = (Stage.NET_IN, Stage.NET_OUT)
