//! A channel's delay-based congestion window, Swift-like (Kumar et al., "Swift: Delay is
//! Simple and Effective for Congestion Control in the Datacenter", SIGCOMM 2020, Algorithm 1,
//! without pacing and with a fixed target), as the authors' simulator runs it
//! (SymbioticLab/Aequitas `coresim/channel.cpp`, `adjust_cwnd_on_ACK` and `adjust_cwnd_on_RTO`).
//!
//! On a new cumulative ACK whose packet's round trip took `delay` seconds:
//!
//! ```text
//! delay < target:  cwnd ← min(cwnd + ai / ⌊cwnd⌋, max_cwnd)                (additive increase)
//! otherwise, if now − t_last_decrease ≥ rtt:                                (once per RTT)
//!     cwnd ← max(cwnd · max(1 − β (delay − target) / delay, 1 − max_mdf), min_cwnd)
//!     t_last_decrease ← now
//! rtt ← delay;  timeouts ← 0
//! ```
//!
//! `rtt` is the delay of the previous ACK, so a decrease waits one measured round trip after
//! the last. On a retransmission timeout: `timeouts += 1`; at `rto_reset_after` timeouts the
//! window falls to `min_cwnd`, otherwise, if a round trip has passed since the last decrease,
//! `cwnd ← max(cwnd (1 − max_mdf), min_cwnd)` — without restarting `t_last_decrease`, as the
//! authors' `multiplicative_decrease_on_RTO`. The sender may have `⌊cwnd⌋` packets in flight.

use super::config::CcConfig;

/// One channel's window.
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    cwnd: f64,
    /// `⌊cwnd⌋`: packets the sender may have unacknowledged.
    pub packets: u32,
    rtt: f64,
    last_decrease: f64,
    timeouts: u32,
    /// `cc.loss_based` only: the slow-start threshold, packets.
    ssthresh: f64,
}

impl Window {
    /// A new channel's window (`init_cwnd`; with the window disabled, `max_cwnd` for good).
    pub fn new(cc: &CcConfig) -> Self {
        let cwnd = if cc.enabled { cc.init_cwnd } else { cc.max_cwnd };
        Window {
            cwnd,
            packets: cwnd.floor() as u32,
            rtt: 0.0,
            last_decrease: 0.0,
            timeouts: 0,
            ssthresh: f64::INFINITY,
        }
    }

    /// The window, packets (fractional).
    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }

    fn set(&mut self, cwnd: f64, cc: &CcConfig) {
        self.cwnd = cwnd.clamp(cc.min_cwnd, cc.max_cwnd);
        self.packets = self.cwnd.floor() as u32;
    }

    /// A new cumulative ACK at `now` for a packet sent `delay` seconds ago. Returns whether
    /// the window decreased.
    pub fn on_ack(&mut self, delay: f64, now: f64, cc: &CcConfig) -> bool {
        if !cc.enabled {
            return false;
        }
        self.timeouts = 0;
        if cc.loss_based {
            // pFabric's minimal rate control: slow start to ssthresh, then +1 a window.
            let step = if self.cwnd < self.ssthresh {
                1.0
            } else {
                cc.ai / f64::from(self.packets.max(1))
            };
            self.set(self.cwnd + step, cc);
            return false;
        }
        let mut decreased = false;
        if delay < cc.target_delay_s {
            let packets = f64::from(self.packets.max(1));
            self.set(self.cwnd + cc.ai / packets, cc);
        } else if now - self.last_decrease >= self.rtt {
            let factor =
                (1.0 - cc.beta * (delay - cc.target_delay_s) / delay).max(1.0 - cc.max_mdf);
            self.set(self.cwnd * factor, cc);
            self.last_decrease = now;
            decreased = true;
        }
        self.rtt = delay;
        decreased
    }

    /// A retransmission timeout at `now`.
    pub fn on_timeout(&mut self, now: f64, cc: &CcConfig) {
        if !cc.enabled {
            return;
        }
        self.timeouts += 1;
        if cc.loss_based {
            self.ssthresh = (self.cwnd / 2.0).max(2.0);
            self.set(cc.min_cwnd, cc);
            return;
        }
        if self.timeouts >= cc.rto_reset_after {
            self.set(cc.min_cwnd, cc);
        } else if now - self.last_decrease >= self.rtt {
            self.set(self.cwnd * (1.0 - cc.max_mdf), cc);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_based_window_falls_to_one_on_a_timeout_then_slow_starts_to_half() {
        // pFabric's rate control as the authors' `PFabricFlow`: from 30, a timeout sets
        // ssthresh 15 and the window 1; each ACK adds 1 up to 15, then 1/⌊cwnd⌋; delay ignored.
        let cc = CcConfig { loss_based: true, init_cwnd: 30.0, ..CcConfig::default() };
        let mut w = Window::new(&cc);
        w.on_ack(1.0, 0.0, &cc); // a huge delay: no decrease
        assert_eq!(w.cwnd(), 30.0);
        w.on_timeout(1.0, &cc);
        assert_eq!((w.cwnd(), w.packets), (1.0, 1));
        for _ in 0..14 {
            w.on_ack(1e-6, 2.0, &cc);
        }
        assert_eq!(w.cwnd(), 15.0);
        w.on_ack(1e-6, 2.0, &cc);
        assert!((w.cwnd() - (15.0 + 1.0 / 15.0)).abs() < 1e-12);
    }

    fn cc() -> CcConfig {
        CcConfig { init_cwnd: 20.0, ..CcConfig::default() }
    }

    #[test]
    fn window_grows_by_ai_over_cwnd_below_the_target() {
        let cc = cc();
        let mut w = Window::new(&cc);
        w.on_ack(5e-6, 1e-6, &cc);
        assert!((w.cwnd() - 20.05).abs() < 1e-12);
        assert_eq!(w.packets, 20);
        for i in 0..1000 {
            w.on_ack(5e-6, 2e-6 + f64::from(i) * 1e-6, &cc);
        }
        assert_eq!((w.cwnd(), w.packets), (30.0, 30)); // capped at max_cwnd
    }

    #[test]
    fn window_decreases_at_most_once_per_rtt() {
        let cc = cc();
        let mut w = Window::new(&cc);
        // 20 µs against a 10 µs target: factor 1 − 0.8 · 10/20 = 0.6.
        assert!(w.on_ack(20e-6, 100e-6, &cc));
        assert!((w.cwnd() - 12.0).abs() < 1e-12);
        // Within 20 µs (the last measured RTT) of that decrease: held, however late the ACKs.
        assert!(!w.on_ack(20e-6, 110e-6, &cc));
        assert!(!w.on_ack(20e-6, 119.9e-6, &cc));
        assert!((w.cwnd() - 12.0).abs() < 1e-12);
        // A round trip after it: the next decrease.
        assert!(w.on_ack(20e-6, 121e-6, &cc));
        assert!((w.cwnd() - 7.2).abs() < 1e-12);
        assert_eq!(w.packets, 7);
        // A huge delay decreases by max_mdf at most, and never below min_cwnd.
        assert!(w.on_ack(1e-3, 200e-6, &cc));
        assert!((w.cwnd() - 3.6).abs() < 1e-12);
        for i in 0..10 {
            w.on_ack(1e-3, 2e-3 * f64::from(i + 1), &cc);
        }
        assert_eq!((w.cwnd(), w.packets), (1.0, 1));
    }

    #[test]
    fn timeouts_halve_the_window_then_reset_it() {
        let cc = cc();
        let mut w = Window::new(&cc);
        w.on_timeout(1e-3, &cc);
        assert_eq!(w.cwnd(), 10.0);
        // The timeout decrease does not restart the decrease clock (the authors' rule).
        w.on_timeout(1.5e-3, &cc);
        assert_eq!(w.cwnd(), 5.0);
        // With gentler decreases: four timeouts in a row decrease, the fifth resets to
        // min_cwnd, and an ACK in between clears the count.
        let cc = CcConfig { max_mdf: 0.1, ..cc };
        let mut w = Window::new(&cc);
        for t in 0..4 {
            w.on_timeout(f64::from(t) * 1e-3, &cc);
        }
        assert!((w.cwnd() - 20.0 * 0.9_f64.powi(4)).abs() < 1e-9);
        w.on_ack(5e-6, 4.1e-3, &cc);
        for t in 0..4 {
            w.on_timeout(5e-3 + f64::from(t) * 1e-3, &cc);
        }
        assert!(w.cwnd() > 8.0);
        w.on_timeout(9e-3, &cc);
        assert_eq!((w.cwnd(), w.packets), (1.0, 1));
    }

    #[test]
    fn a_disabled_window_stays_at_max_cwnd() {
        let cc = CcConfig { enabled: false, ..CcConfig::default() };
        let mut w = Window::new(&cc);
        w.on_ack(1e-3, 1.0, &cc);
        w.on_timeout(2.0, &cc);
        assert_eq!(w.packets, 30);
    }
}
