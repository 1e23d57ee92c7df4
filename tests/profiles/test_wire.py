"""Bytes on the wire of the network token model's messages: buckets and average messages."""

from __future__ import annotations

import numpy as np
import pytest

from tailbound.profiles import MessageSizes
from tailbound.profiles.wire import HEADER, MSS, MTU, buckets_on_wire, wire_messages
from tailbound.traces import Trace

K, A = 1 + HEADER / MSS, HEADER / MSS  # a message's bytes with headers; the ACKs per byte
PER_REQUEST = 2 * HEADER / 200  # one more header each way per request of at least 200 bytes


def test_frame_constants() -> None:
    assert (MTU, HEADER, MSS) == (1514, 66, 1448)


def test_buckets_on_wire_by_hand() -> None:
    # 100 kB/s and 1 kB one way, 1 MB/s and 10 kB back: the lower rate (this way) counts requests
    ((r, b),) = buckets_on_wire([(1e5, 1e3)], (1e6, 1e4))
    assert r == pytest.approx(K * 1e5 + A * 1e6 + PER_REQUEST * 1e5)
    assert b == pytest.approx(K * 1e3 + A * 1e4 + PER_REQUEST * 1e3)
    assert (round(r), round(b)) == (216138, 2161)
    # the same both ways: W = 1 + 2·66/1448 + 2·66/200 times the bucket
    w = 1 + 2 * 66 / 1448 + 2 * 66 / 200
    assert buckets_on_wire([(2e5, 3e3)], (2e5, 3e3))[0] == pytest.approx((w * 2e5, w * 3e3))


def test_extra_buckets_share_the_primary_terms() -> None:
    # every bucket of this way gets the other way's primary ACKs and the per-request term of
    # the primary with the lower rate (here the other way's)
    own = [(1e6, 1e4), (2e5, 4e4)]
    out = buckets_on_wire(own, (5e5, 2e3))
    assert out == [
        pytest.approx((K * r + A * 5e5 + PER_REQUEST * 5e5, K * b + A * 2e3 + PER_REQUEST * 2e3))
        for r, b in own
    ]


def test_no_bucket_the_other_way_and_none_this_way() -> None:
    # without a bucket back its ACKs are not budgeted: only this way's per-message term
    assert buckets_on_wire([(1e5, 1e3)], None)[0] == pytest.approx(
        ((K + PER_REQUEST) * 1e5, (K + PER_REQUEST) * 1e3)
    )
    assert buckets_on_wire([], (1e5, 1e3)) == []
    # the per-request term follows the model's smallest message
    small = buckets_on_wire([(1e5, 1e3)], None, MessageSizes(overhead_bytes=100.0))[0]
    assert small[0] == pytest.approx((K + 2 * HEADER / 100) * 1e5)


def test_wire_messages_average_a_message_with_its_headers_and_delayed_acks() -> None:
    w = wire_messages()
    m = MessageSizes()
    ack = HEADER / (2 * MSS)  # one ACK every two segments
    assert w.overhead_bytes == pytest.approx(m.overhead_bytes * (K + ack) + HEADER)
    assert (round(w.overhead_bytes), round(w.small_factor, 4), round(w.large_factor, 4)) == (
        280,
        0.0512,
        1.1507,
    )
    # a 64 KiB read: its response on the wire with headers, its request with the response's ACKs
    t = Trace.from_arrays(time=[0.0], op=[0], size=[65536])
    response = w.response_bytes(t)[0]
    payload = m.response_bytes(t)[0]
    # half a header for its last segment, half for the last ACK of the request
    assert response == pytest.approx(K * payload + ack * m.request_bytes(t)[0] + HEADER)
    assert np.all(w.request_bytes(t) > m.request_bytes(t))
    # of another model's messages
    assert wire_messages(MessageSizes(overhead_bytes=0.0)).overhead_bytes == HEADER
