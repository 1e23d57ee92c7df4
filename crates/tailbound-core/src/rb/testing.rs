//! Helpers shared by the r-b curve tests.

/// A deterministic stream of uniform numbers in [0, 1) (xorshift64, 53-bit mantissa), seeded by
/// `seed` (made odd so that it is never the all-zero state). Used to build small reproducible
/// test traces (times in seconds, tokens in seconds of work).
pub(crate) fn uniform(seed: u64) -> impl FnMut() -> f64 {
    let mut s = seed | 1;
    move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f64 / (1u64 << 53) as f64
    }
}
