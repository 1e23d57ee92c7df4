//! A channel: the transport of one `(source, destination, class)` triple, as the authors'
//! `coresim/channel.cpp` (one channel per triple, `multiplex_constant: 1`), or one of its
//! `channels_per_class` parallel sub-queues (pFabric's flow per RPC, `NetConfig`).
//!
//! **Sender.** The channel's RPCs form one FIFO stream of packets: an RPC issued on it takes
//! the next `⌈size / MSS⌉` packet numbers (`[start, start + packets)`), so it waits behind the
//! packets of every earlier RPC of the channel (the per-channel RPC FIFO whose wait RNL
//! includes). Up to `⌊cwnd⌋` packets beyond the last cumulative ACK may be in flight. One
//! retransmission timer per channel: armed when a packet leaves and none runs, moved on every
//! new ACK while data is unacknowledged, and on expiry the sender goes back to the first
//! unacknowledged packet and resends from there (go-back-N).
//!
//! **Receiver.** Takes packets in order only: a packet other than the next expected one is
//! discarded. Every data packet is answered by an ACK of the next expected number (cumulative),
//! in the channel's class, carrying the data packet's send time for the sender's delay.

use std::collections::VecDeque;

use super::window::Window;

/// Where a packet number falls in its RPC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RpcSpan {
    /// The channel's packet number of the RPC's first packet.
    pub start: u64,
    /// Its number of packets, ≥ 1.
    pub packets: u32,
    /// Payload of its last packet, bytes (the others carry a full MSS).
    pub last_payload: u32,
}

impl RpcSpan {
    /// The span of an RPC of `size` bytes starting at packet `start` (`mss` payload a packet;
    /// an RPC of 0 bytes still sends one header-only packet).
    pub fn new(start: u64, size: u64, mss: u32) -> Self {
        let mss64 = u64::from(mss);
        let packets = size.div_ceil(mss64).max(1);
        let last_payload = (size - (packets - 1) * mss64) as u32;
        RpcSpan { start, packets: packets as u32, last_payload }
    }

    /// One past its last packet.
    pub fn end(&self) -> u64 {
        self.start + u64::from(self.packets)
    }

    /// Payload of packet `seq` (inside the span), bytes.
    pub fn payload(&self, seq: u64, mss: u32) -> u32 {
        if seq + 1 == self.end() {
            self.last_payload
        } else {
            mss
        }
    }
}

/// One channel's sender and receiver state.
#[derive(Debug, Clone)]
pub struct Channel {
    /// RPCs not yet wholly acknowledged, in issue order.
    pub rpcs: VecDeque<u32>,
    /// Next packet number to send.
    pub next_seq: u64,
    /// First packet not acknowledged (the last cumulative ACK).
    pub last_unacked: u64,
    /// One past the last packet of the RPCs issued so far.
    pub end_seq: u64,
    /// One past the highest packet ever sent (a packet below it is a retransmission).
    pub high_seq: u64,
    /// The congestion window.
    pub window: Window,
    /// When the retransmission timer expires, seconds (`INFINITY`: not armed). Moving it later
    /// schedules nothing: the one timer event in the kernel (`timer_pending`), due at or before
    /// this deadline, reschedules itself to it when it finds the deadline moved.
    pub timer_deadline: f64,
    /// Whether a timer event of this channel is in the kernel.
    pub timer_pending: bool,
    /// The receiver's next expected packet number.
    pub expected: u64,
}

impl Channel {
    /// An idle channel with window `window`.
    pub fn new(window: Window) -> Self {
        Channel {
            rpcs: VecDeque::new(),
            next_seq: 0,
            last_unacked: 0,
            end_seq: 0,
            high_seq: 0,
            window,
            timer_deadline: f64::INFINITY,
            timer_pending: false,
            expected: 0,
        }
    }

    /// Whether the retransmission timer is armed.
    #[inline]
    pub fn timer_armed(&self) -> bool {
        self.timer_deadline < f64::INFINITY
    }

    /// Whether the window and the stream let one more packet leave.
    #[inline]
    pub fn can_send(&self) -> bool {
        self.next_seq < self.end_seq
            && self.next_seq < self.last_unacked + u64::from(self.window.packets)
    }

    /// The receiver takes data packet `seq`; returns the cumulative ACK to send (the next
    /// expected packet number).
    pub fn receive(&mut self, seq: u64) -> u64 {
        if seq == self.expected {
            self.expected += 1;
        }
        self.expected
    }
}
