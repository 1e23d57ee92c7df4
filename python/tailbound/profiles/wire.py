"""Bytes on the wire: the network token model's messages (:class:`~tailbound.profiles.tokens.
MessageSizes`) as the Ethernet frames of a TCP connection carry them.

A planner sizes network buckets in the token model's message bytes; a link (and Linux HTB, which
charges every frame) sees more: each segment's headers, and the ACKs of the other direction's
messages, which travel on the same flow. :func:`buckets_on_wire` bounds the bytes of a flow
whose messages conform to token buckets; :func:`wire_messages` gives the average bytes on the
wire of each message, for a simulator whose links carry messages (docs/enforcement.md, "Bytes
on the wire").
"""

from __future__ import annotations

from collections.abc import Sequence

from tailbound.profiles.tokens import MessageSizes

#: Bytes on the wire of a full Ethernet frame (what HTB charges a full segment).
MTU = 1514
#: Bytes of headers per TCP segment on the wire: Ethernet 14, IPv4 20, TCP 20 and its timestamp
#: option 12 (what an ACK without data costs too).
HEADER = 66
#: Bytes of payload in a full segment.
MSS = MTU - HEADER

Bucket = tuple[float, float]  # (rate bytes/s, burst bytes): α(t) = b + r·t


def buckets_on_wire(
    own: Sequence[Bucket], other: Bucket | None, messages: MessageSizes | None = None
) -> list[Bucket]:
    """The buckets (rate bytes/s, burst bytes) on the wire of a flow whose messages in one
    direction conform to the buckets ``own`` (message bytes, the primary first) and in the
    other to the primary bucket ``other`` (``None``: no bucket that way).

    With ``k = 1 + HEADER/MSS``, ``a = HEADER/MSS`` and ``O`` the model's smallest message (its
    ``overhead_bytes``, 200):

    * a message of ``m`` bytes has at most ``m/MSS + 1`` segments: ``k·m + HEADER`` bytes;
    * the other direction's ``m'`` bytes are acknowledged by at most ``m'/MSS + 1`` ACKs (one per
      segment, as with quick ACKs): ``a·m' + HEADER`` bytes;
    * requests, one message each way, number at most ``α_x(τ)/O`` in any interval ``τ``, with
      ``x`` the direction whose primary bucket has the lower rate.

    So each bucket ``(r, b)`` becomes ``(k·r + a·r' + 2·HEADER·r_x/O, k·b + a·b' +
    2·HEADER·b_x/O)`` with ``(r', b')`` the other direction's primary bucket. Without a bucket
    in the other direction its ACKs are not budgeted (only the per-message term of this one is).

    Examples
    --------
    >>> [(round(r), round(b)) for r, b in buckets_on_wire([(1e5, 1e3)], (1e6, 1e4))]
    [(216138, 2161)]
    >>> buckets_on_wire([], (1e6, 1e4))
    []
    """
    if not own:
        return []
    m = messages if messages is not None else MessageSizes()
    k, a = 1 + HEADER / MSS, HEADER / MSS
    per_request = 2 * HEADER / m.overhead_bytes
    r_x, b_x = min([own[0], *([other] if other else [])], key=lambda rb: rb[0])
    r_o, b_o = other if other else (0.0, 0.0)
    return [
        (k * r + a * r_o + per_request * r_x, k * b + a * b_o + per_request * b_x) for r, b in own
    ]


def wire_messages(messages: MessageSizes | None = None) -> MessageSizes:
    """The token model's messages (default: :class:`MessageSizes`' constants) as the bytes they
    put on a wire on average (for the simulator): a message of ``m`` bytes costs
    ``k·m + HEADER/2`` (``k = 1 + HEADER/MSS``, half a segment's headers for the last, partial
    segment) and the other direction's ``m'`` bytes are acknowledged by a ``HEADER``-byte ACK
    every two segments (Linux's delayed ACKs), ``m'·HEADER/(2·MSS) + HEADER/2``: still
    ``overhead + factor · size``.

    Examples
    --------
    >>> w = wire_messages()
    >>> round(w.overhead_bytes), round(w.small_factor, 4), round(w.large_factor, 4)
    (280, 0.0512, 1.1507)
    """
    m = messages if messages is not None else MessageSizes()
    k, ack = 1 + HEADER / MSS, HEADER / (2 * MSS)
    return MessageSizes(
        overhead_bytes=m.overhead_bytes * (k + ack) + HEADER,
        small_factor=m.small_factor * k + m.large_factor * ack,
        large_factor=m.large_factor * k + m.small_factor * ack,
    )
