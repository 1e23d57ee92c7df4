//! SNC-Meister's `theta` search for every independent two-hop flow at once (thesis Appendix A.4,
//! Eq. A.5; the search of §4.2.5 as the reference implementation runs it).
//!
//! Without dependency groups every operand is independent, every `sigma` of an arrival is 0 and
//! every aggregate is the plain sum of its sources' `rho`, so flow `W`'s bound at `theta` is
//!
//! ```text
//! rho_D   = sum_i rho_Zi                 sigma_D = sum_i -log(1 - e^{theta (rho_Zi + rho_Ri - c_i)}) / theta
//! r1      = rho_Y - c1                   r2      = rho_D - c2        (r1 <- 0.99 r1 if r1 == r2)
//! sigma_S = sigma_D - log(1 - e^{-theta |r1 - r2|}) / theta,          rho_S = rho_X + max(r1, r2)
//! L       = (log(eps (1 - e^{theta (rho_W + rho_S)})) / theta - sigma_S) / rho_S    (steps)
//! ```
//!
//! with `rho` of an MMPP source `log1p(r) / theta`, `r` the Perron root of
//! `diag(1 + e) G + diag(e)`, `e_s = p_s theta / (mu_s - theta)`. Each flow's search is the
//! reference's: levels of step `100, 10, ..., 1e-9` around the current `theta` (grids built by
//! sequential addition), first strict minimum kept, `theta = lo` when no grid point is finite;
//! points at or beyond the flow's pole (smallest `mu` of its sources) are infinite and not
//! evaluated. The flows' searches are independent but for the sources they share, so they run
//! level by level together: a level's grids are built for every flow, the `rho` they need that
//! are not yet memoised are computed source by source, then every flow's grid is compared. Each
//! source keeps a memo `theta -> rho` shared by every flow using it, with the Perron vector at
//! each `theta`: a new root starts from the vector interpolated between its memoised neighbours
//! (see `PerronSolver`), which changes the work, not the root (to ~1e-16). The sources' roots of
//! a level run on the machine's cores (threads take whole sources, so each source still computes
//! its `theta`s in increasing order: the same floats on any number of threads); a level with
//! little work stays on one thread, and `TAILBOUND_SNC_THREADS` fixes the count. The Python
//! module `tailbound.snc.fast` builds the plan; its tests compare the result with the per-flow
//! operator trees.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// A hasher for `theta` bits: one multiply (the memo's keys are not adversarial, and SipHash
/// showed in profiles).
#[derive(Default)]
struct BitsHasher(u64);

impl Hasher for BitsHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(*b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (x ^ (x >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type BitsMap<V> = HashMap<u64, V, BuildHasherDefault<BitsHasher>>;

use crate::error::{Error, Result};
use crate::snc::PerronSolver;

const MIN_THETA: f64 = 1e-9;
const INITIAL_THETA: f64 = 1000.0;
const DECREASE: f64 = 10.0;

/// A fitted MMPP source: generator `G = P - I` (`n × n`, row-major), per-step request
/// probabilities `p` and exponential work rates `mu` (`inf` for a state without work).
pub struct Source {
    pub n: usize,
    pub generator: Vec<f64>,
    pub p: Vec<f64>,
    pub mu: Vec<f64>,
}

/// Rows of source indexes in compressed form: row `i` is `idx[ptr[i]..ptr[i + 1]]`.
pub struct Csr {
    pub ptr: Vec<usize>,
    pub idx: Vec<usize>,
}

impl Default for Csr {
    /// No rows.
    fn default() -> Self {
        Self { ptr: vec![0], idx: Vec::new() }
    }
}

impl Csr {
    fn push_row(&mut self, row: &[usize]) {
        self.idx.extend_from_slice(row);
        self.ptr.push(self.idx.len());
    }

    fn row(&self, i: usize) -> &[usize] {
        &self.idx[self.ptr[i]..self.ptr[i + 1]]
    }

    fn check(&self, name: &str, rows: usize, sources: usize) -> Result<()> {
        let ok = self.ptr.len() == rows + 1
            && self.ptr.first() == Some(&0)
            && self.ptr.windows(2).all(|w| w[0] <= w[1])
            && self.ptr[rows] == self.idx.len()
            && self.idx.iter().all(|&s| s < sources);
        if ok {
            Ok(())
        } else {
            Err(Error::Invalid(format!("{name}: malformed rows of source indexes")))
        }
    }
}

/// The expression's shape for every flow: sources of `W` (`w`), of the same first and second
/// queue (`x`), of the first queue only (`y`); per *pair* (another first queue feeding the second
/// queue) its flow, its rate `c` (work per step) and its sources `z` (into the second queue) and
/// `r` (elsewhere). `c1`, `c2` are the flow's two queues' rates (work per step), `eps` its
/// violation probability, `pole` the smallest `mu` of its sources. Sums run in row order.
///
/// Build one with [`Plan::default`] and the `add_*` methods (which check each part as it comes),
/// or fill the fields directly; [`snc_meister_search`] checks the whole either way.
#[derive(Default)]
pub struct Plan {
    pub sources: Vec<Source>,
    pub c1: Vec<f64>,
    pub c2: Vec<f64>,
    pub eps: Vec<f64>,
    pub pole: Vec<f64>,
    pub w: Csr,
    pub x: Csr,
    pub y: Csr,
    pub pair_flow: Vec<usize>,
    pub pair_c: Vec<f64>,
    pub z: Csr,
    pub r: Csr,
}

impl Plan {
    /// Add an MMPP source (see [`Source`]): generator `n × n` row-major, `p` and `mu` of length
    /// `n`. Returns its index.
    pub fn add_source(&mut self, generator: Vec<f64>, p: Vec<f64>, mu: Vec<f64>) -> Result<usize> {
        let n = p.len();
        if n == 0 || generator.len() != n * n || mu.len() != n {
            return Err(Error::Invalid(format!(
                "a source needs n > 0 states, an n × n generator and n of p and mu; got {} \
                 generator entries, {n} of p and {} of mu",
                generator.len(),
                mu.len()
            )));
        }
        self.sources.push(Source { n, generator, p, mu });
        Ok(self.sources.len() - 1)
    }

    fn check_sources(&self, role: &str, sources: &[usize]) -> Result<()> {
        match sources.iter().find(|&&s| s >= self.sources.len()) {
            Some(s) => Err(Error::Invalid(format!("{role}: no source {s}"))),
            None => Ok(()),
        }
    }

    /// Add a two-hop flow through queues of rates `c1`, `c2` (work per step) with violation
    /// probability `eps` and `pole` (the smallest `mu` of its sources): the sources of its own
    /// arrivals (`w`), of the flows sharing both its queues (`x`) and of those sharing only its
    /// first queue (`y`), each summed in the order given. Returns the flow's index.
    #[allow(clippy::too_many_arguments)]
    pub fn add_flow(
        &mut self,
        c1: f64,
        c2: f64,
        eps: f64,
        pole: f64,
        w: &[usize],
        x: &[usize],
        y: &[usize],
    ) -> Result<usize> {
        for (role, sources) in [("w", w), ("x", x), ("y", y)] {
            self.check_sources(role, sources)?;
        }
        self.c1.push(c1);
        self.c2.push(c2);
        self.eps.push(eps);
        self.pole.push(pole);
        self.w.push_row(w);
        self.x.push_row(x);
        self.y.push_row(y);
        Ok(self.c1.len() - 1)
    }

    /// Add a feeder of `flow`'s second queue: another first queue of rate `c` (work per step)
    /// whose flows into the second queue have sources `z` and whose other flows have sources
    /// `r`. Feeders are added in the order of their flows.
    pub fn add_feeder(&mut self, flow: usize, c: f64, z: &[usize], r: &[usize]) -> Result<()> {
        if flow >= self.c1.len() || self.pair_flow.last().is_some_and(|&last| last > flow) {
            return Err(Error::Invalid(format!(
                "feeder of flow {flow}: no such flow, or feeders out of flow order"
            )));
        }
        self.check_sources("z", z)?;
        self.check_sources("r", r)?;
        self.pair_flow.push(flow);
        self.pair_c.push(c);
        self.z.push_row(z);
        self.r.push_row(r);
        Ok(())
    }

    /// Number of flows.
    pub fn flows(&self) -> usize {
        self.c1.len()
    }
}

pub(crate) struct Rho<'a> {
    source: &'a Source,
    solver: Option<PerronSolver>,
    excess: Vec<f64>,
    /// `theta` (bits) -> slot in `values`/`vectors`; `ordered` is the same map sorted (positive
    /// floats order as their bits), for the neighbours of a new `theta`.
    memo: BitsMap<usize>,
    ordered: BTreeMap<u64, usize>,
    values: Vec<f64>,
    /// The Perron vector at each memoised `theta` (`n` per slot; empty for `n <= 2`).
    vectors: Vec<f64>,
    warm: Vec<f64>,
}

impl<'a> Rho<'a> {
    pub(crate) fn new(source: &'a Source) -> Result<Self> {
        let n = source.n;
        if n == 0 || source.generator.len() != n * n || source.p.len() != n || source.mu.len() != n
        {
            return Err(Error::Invalid(format!("source with {n} states has inconsistent arrays")));
        }
        let solver = if n > 2 { Some(PerronSolver::new(&source.generator, n)?) } else { None };
        Ok(Rho {
            source,
            solver,
            excess: vec![0.0; n],
            memo: BitsMap::default(),
            ordered: BTreeMap::new(),
            values: vec![],
            vectors: vec![],
            warm: vec![0.0; n],
        })
    }

    /// A starting vector for `theta` from the memoised Perron vectors of the nearest `theta`s:
    /// linear interpolation between the neighbours on both sides, else linear extrapolation
    /// from the two nearest on one side (kept only if positive), else the nearest.
    fn warm_start(&mut self, theta: f64) -> bool {
        let n = self.source.n;
        let key = theta.to_bits();
        let mut below = self.ordered.range(..key).rev();
        let mut above = self.ordered.range(key..);
        let slot = |s: usize| s * n..(s + 1) * n;
        let (b1, a1) = (below.next(), above.next());
        let (p, q, t) = match (b1, a1) {
            (Some((&kb, &sb)), Some((&ka, &sa))) => {
                let (tb, ta) = (f64::from_bits(kb), f64::from_bits(ka));
                (sb, sa, (theta - tb) / (ta - tb))
            }
            (Some((&k1, &s1)), None) => match below.next() {
                Some((&k2, &s2)) => {
                    let (t1, t2) = (f64::from_bits(k1), f64::from_bits(k2));
                    (s1, s2, (theta - t1) / (t2 - t1))
                }
                None => (s1, s1, 0.0),
            },
            (None, Some((&k1, &s1))) => match above.next() {
                Some((&k2, &s2)) => {
                    let (t1, t2) = (f64::from_bits(k1), f64::from_bits(k2));
                    (s1, s2, (theta - t1) / (t2 - t1))
                }
                None => (s1, s1, 0.0),
            },
            (None, None) => return false,
        };
        let (vp, vq) = (&self.vectors[slot(p)], &self.vectors[slot(q)]);
        for ((w, x), y) in self.warm.iter_mut().zip(vp).zip(vq) {
            *w = x + t * (y - x);
        }
        if !self.warm.iter().all(|x| *x > 0.0 && x.is_finite()) {
            self.warm.copy_from_slice(vp);
        }
        true
    }

    /// `rho(theta)` already computed by [`Rho::at`].
    fn memoised(&self, theta: f64) -> f64 {
        let slot = self.memo.get(&theta.to_bits()).expect("every needed theta is computed first");
        self.values[*slot]
    }

    /// Estimated work of one new `rho` (the units of [`MIN_COST_PER_THREAD`]).
    fn cost(&self) -> f64 {
        if self.source.n > 2 {
            (self.source.n * self.source.n) as f64
        } else {
            1.0
        }
    }

    /// `rho(theta)` for `theta` below every `mu` of the source (the caller checks the pole).
    pub(crate) fn at(&mut self, theta: f64) -> f64 {
        if let Some(&slot) = self.memo.get(&theta.to_bits()) {
            return self.values[slot];
        }
        let s = self.source;
        for i in 0..s.n {
            self.excess[i] =
                if s.mu[i].is_infinite() { 0.0 } else { s.p[i] * theta / (s.mu[i] - theta) };
        }
        let b = match s.n {
            1 => self.excess[0],
            2 => {
                // The closed form of tailbound.snc.mmpp, operation for operation.
                let (e, g) = (&self.excess, &s.generator);
                let a = (1.0 + e[0]) * g[0] + e[0];
                let d = (1.0 + e[1]) * g[3] + e[1];
                let bc = ((1.0 + e[0]) * g[1]) * ((1.0 + e[1]) * g[2]);
                (a + d) / 2.0 + (((a - d) / 2.0).powi(2) + bc).sqrt()
            }
            _ => {
                let warm = self.warm_start(theta);
                let solver =
                    self.solver.as_mut().expect("a solver exists for more than two states");
                if warm {
                    solver.warm_start(&self.warm);
                }
                let b = solver.root(&self.excess);
                self.vectors.extend_from_slice(solver.vector());
                b
            }
        };
        let value = b.ln_1p() / theta;
        self.memo.insert(theta.to_bits(), self.values.len());
        if s.n > 2 {
            self.ordered.insert(theta.to_bits(), self.values.len());
        }
        self.values.push(value);
        value
    }
}

/// `log(1 - e^z)`, `-inf` where `z >= 0`.
pub(crate) fn log1m_exp(z: f64) -> f64 {
    if z < 0.0 {
        (-z.exp_m1()).ln()
    } else {
        f64::NEG_INFINITY
    }
}

/// Environment variable fixing the number of threads of [`snc_meister_search`] (a positive
/// integer, e.g. `1` for single-thread timings); the results do not depend on it.
pub const THREADS_VAR: &str = "TAILBOUND_SNC_THREADS";

/// Estimated work below which a batch runs on one thread: another thread (spawned per batch)
/// does not pay for itself. Units of [`Rho::cost`] (`n^2` per root; ~15 ns each on the
/// benchmark's 10-state fits), so about 0.3 ms of roots per thread.
const MIN_COST_PER_THREAD: f64 = 20_000.0;

/// Latency evaluations (flow, grid point, source read) below which a level's flows are
/// compared on one thread (a read is a memo lookup, ~10 ns).
const MIN_READS_PER_THREAD: usize = 50_000;

struct Search<'a> {
    plan: &'a Plan,
    pairs_of: Vec<std::ops::Range<usize>>,
    /// The distinct sources each flow's latency reads.
    sources_of: Vec<Vec<usize>>,
}

impl Search<'_> {
    fn sum(&self, rho: &[Rho], rows: &Csr, i: usize, theta: f64) -> f64 {
        let mut total = 0.0;
        for &s in rows.row(i) {
            total += rho[s].memoised(theta);
        }
        total
    }

    /// Flow `f`'s latency in steps at `theta` (`inf` where the bound does not exist); every
    /// source of the flow has `rho` memoised at `theta` if `theta` is below the pole.
    fn latency(&self, rho: &[Rho], f: usize, theta: f64) -> f64 {
        let plan = self.plan;
        let pole = plan.pole[f];
        if theta.is_nan() || pole.is_nan() || theta >= pole {
            return f64::INFINITY;
        }
        let (mut rho_d, mut sigma_d) = (0.0, 0.0);
        for k in self.pairs_of[f].clone() {
            let z = self.sum(rho, &plan.z, k, theta);
            let r = self.sum(rho, &plan.r, k, theta);
            rho_d += z;
            sigma_d += -log1m_exp(theta * (z + (r - plan.pair_c[k]))) / theta;
        }
        let rho_w = self.sum(rho, &plan.w, f, theta);
        let rho_x = self.sum(rho, &plan.x, f, theta);
        let rho_y = self.sum(rho, &plan.y, f, theta);
        let mut r1 = rho_y + -plan.c1[f];
        let r2 = rho_d + -plan.c2[f];
        if r1 == r2 {
            r1 *= 0.99;
        }
        let sigma_s = sigma_d - log1m_exp(-theta * (r1 - r2).abs()) / theta;
        let rho_s = rho_x + r1.max(r2);
        let zeta = theta * (rho_w + rho_s);
        let log_term = (plan.eps[f] * -zeta.exp_m1()).ln();
        let latency = (log_term / theta - sigma_s) / rho_s;
        if zeta < 0.0 && rho_s < 0.0 && latency.is_finite() {
            latency
        } else {
            f64::INFINITY
        }
    }

    /// The points of flow `f`'s grid around `theta` with `step` that the reference evaluates
    /// (appended to `out`): `lo, lo + step, ...` by sequential addition up to `hi`, stopping at
    /// the pole (beyond it every value is infinite; the first point is always taken).
    fn grid(&self, f: usize, theta: f64, step: f64, out: &mut Vec<f64>) {
        let pole = self.plan.pole[f];
        let lo = (theta - DECREASE * step).max(MIN_THETA);
        let hi = theta + DECREASE * step;
        let mut point = lo;
        let mut first = true;
        while point <= hi {
            if !first && point >= pole {
                break;
            }
            out.push(point);
            point += step;
            first = false;
        }
    }

    /// The first strict minimum of flow `f`'s latency over `grid` (its first point if none is
    /// finite).
    fn best(&self, rho: &[Rho], f: usize, grid: &[f64]) -> f64 {
        let (mut best, mut best_value) = (grid[0], f64::INFINITY);
        for &point in grid {
            let value = self.latency(rho, f, point);
            if value < best_value {
                best = point;
                best_value = value;
            }
        }
        best
    }

    /// Every flow's search, level by level: each level's grids are built for all flows, the
    /// `rho` they need computed source by source (on up to `threads` threads, each source's
    /// new `theta`s in increasing order, so a source's memo and warm starts do not depend on
    /// the threads), then each flow's grid is compared.
    fn run(&self, rho: &mut [Rho], threads: Option<usize>) -> (Vec<f64>, Vec<f64>) {
        let plan = self.plan;
        let flows = plan.c1.len();
        let mut theta = vec![INITIAL_THETA; flows];
        let mut grid = Vec::new();
        let mut grid_ptr = vec![0; flows + 1];
        let mut need: Vec<Vec<f64>> = vec![vec![]; rho.len()];
        // Asked once: `available_parallelism` reads the cgroup files (~25 µs a call).
        let cores = if threads.is_none() { cores() } else { 1 };
        let mut step = INITIAL_THETA / DECREASE;
        while step >= MIN_THETA {
            grid.clear();
            let mut reads = 0;
            for f in 0..flows {
                self.grid(f, theta[f], step, &mut grid);
                grid_ptr[f + 1] = grid.len();
                for &point in &grid[grid_ptr[f]..] {
                    // `latency` reads no source at or beyond the pole.
                    if point < plan.pole[f] {
                        for &s in &self.sources_of[f] {
                            need[s].push(point);
                        }
                        reads += self.sources_of[f].len();
                    }
                }
            }
            compute(rho, &mut need, threads, cores);
            let rho: &[Rho] = rho;
            let compare = |first: usize, out: &mut [f64]| {
                for (k, t) in out.iter_mut().enumerate() {
                    let f = first + k;
                    *t = self.best(rho, f, &grid[grid_ptr[f]..grid_ptr[f + 1]]);
                }
            };
            let parts = threads.unwrap_or_else(|| cores.min(reads / MIN_READS_PER_THREAD));
            let weights: Vec<f64> =
                (0..flows).map(|f| (grid_ptr[f + 1] - grid_ptr[f]) as f64).collect();
            in_parallel(&mut theta, &split(&weights, parts.max(1)), |run, out| {
                compare(run.start, out)
            });
            step /= DECREASE;
        }
        let latency = (0..flows).map(|f| self.latency(rho, f, theta[f])).collect();
        (theta, latency)
    }
}

/// `rho` at every new `theta` in `need` (emptied), each source's in increasing order, on up to
/// `threads` threads (`None`: `cores`, fewer if a thread would get less than
/// [`MIN_COST_PER_THREAD`] of estimated work). Threads take the sources one at a time, the
/// costliest first; which thread computes a source does not change its values.
fn compute(rho: &mut [Rho], need: &mut [Vec<f64>], threads: Option<usize>, cores: usize) {
    let mut costs = Vec::with_capacity(rho.len());
    for (r, list) in rho.iter().zip(need.iter_mut()) {
        list.sort_unstable_by(f64::total_cmp);
        list.dedup_by(|a, b| a.to_bits() == b.to_bits());
        list.retain(|t| !r.memo.contains_key(&t.to_bits()));
        costs.push(r.cost() * list.len() as f64);
    }
    let total: f64 = costs.iter().sum();
    let threads = threads.unwrap_or_else(|| cores.min((total / MIN_COST_PER_THREAD) as usize));
    let one = |r: &mut Rho, list: &mut Vec<f64>| {
        for &theta in list.iter() {
            r.at(theta);
        }
        list.clear();
    };
    if threads <= 1 {
        rho.iter_mut().zip(need.iter_mut()).for_each(|(r, list)| one(r, list));
        return;
    }
    let mut order: Vec<usize> = (0..rho.len()).filter(|&s| costs[s] > 0.0).collect();
    order.sort_by(|&a, &b| costs[b].total_cmp(&costs[a]));
    let work: Vec<Mutex<(&mut Rho, &mut Vec<f64>)>> =
        rho.iter_mut().zip(need.iter_mut()).map(Mutex::new).collect();
    let next = AtomicUsize::new(0);
    let worker = || {
        while let Some(&s) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
            let mut item = work[s].lock().expect("each source is taken once");
            let (r, list) = &mut *item;
            one(r, list);
        }
    };
    std::thread::scope(|scope| {
        for _ in 1..threads.min(order.len()) {
            scope.spawn(worker);
        }
        worker();
    });
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |c| c.get())
}

/// `job(run, &mut items[run])` for each of the contiguous `runs` (covering `items` in order),
/// the first on this thread, the others on scoped threads.
fn in_parallel<T: Send>(
    items: &mut [T],
    runs: &[std::ops::Range<usize>],
    job: impl Fn(std::ops::Range<usize>, &mut [T]) + Sync,
) {
    if runs.len() <= 1 {
        job(0..items.len(), items);
        return;
    }
    std::thread::scope(|scope| {
        let mut rest = items;
        let mut pieces = Vec::with_capacity(runs.len());
        for run in runs {
            let (piece, tail) = rest.split_at_mut(run.len());
            pieces.push((run.clone(), piece));
            rest = tail;
        }
        let mut pieces = pieces.into_iter();
        let (run0, piece0) = pieces.next().expect("at least two runs");
        let job = &job;
        for (run, piece) in pieces {
            scope.spawn(move || job(run, piece));
        }
        job(run0, piece0);
    });
}

/// Contiguous runs covering `costs`, at most `parts` of them, of about equal total cost (a run
/// ends where the cumulative cost first reaches its share); empty runs are dropped.
fn split(costs: &[f64], parts: usize) -> Vec<std::ops::Range<usize>> {
    let total: f64 = costs.iter().sum();
    let mut runs = Vec::with_capacity(parts);
    let (mut start, mut done) = (0, 0.0);
    for (i, c) in costs.iter().enumerate() {
        done += c;
        if runs.len() + 1 < parts && done >= total * (runs.len() + 1) as f64 / parts as f64 {
            runs.push(start..i + 1);
            start = i + 1;
        }
    }
    runs.push(start..costs.len());
    runs.retain(|r| !r.is_empty());
    runs
}

/// Best `theta` and the latency there (steps) of every flow of `plan`, on the number of
/// threads [`THREADS_VAR`] fixes, else on as many as the machine has and each batch of work
/// justifies (see [`snc_meister_search_threads`]).
pub fn snc_meister_search(plan: &Plan) -> Result<(Vec<f64>, Vec<f64>)> {
    let fixed = std::env::var(THREADS_VAR).ok().and_then(|v| v.trim().parse::<usize>().ok());
    snc_meister_search_threads(plan, fixed.filter(|&t| t > 0))
}

/// Best `theta` and the latency there (steps) of every flow of `plan`, on up to `threads`
/// threads (`None`: `available_parallelism`, and one thread for a batch of less than
/// [`MIN_COST_PER_THREAD`] of roots or [`MIN_READS_PER_THREAD`] of comparisons).
///
/// The flows' searches run level by level together (each is still the reference's search:
/// the same grids, the same first strict minimum). At each level the sources' new `rho`s are
/// computed in parallel — sources split over threads, each source's `theta`s in increasing
/// order — then the flows' grids compared in parallel — flows split over threads, reading
/// the memos. A source's memo thus sees the same `theta`s in the same order whatever the
/// thread count, so the results are the same floats on any number of threads (tested).
pub fn snc_meister_search_threads(
    plan: &Plan,
    threads: Option<usize>,
) -> Result<(Vec<f64>, Vec<f64>)> {
    let flows = plan.c1.len();
    let pairs = plan.pair_flow.len();
    if [plan.c2.len(), plan.eps.len(), plan.pole.len()].iter().any(|&l| l != flows)
        || plan.pair_c.len() != pairs
        || plan.pair_flow.iter().any(|&f| f >= flows)
        || plan.pair_flow.windows(2).any(|w| w[0] > w[1])
    {
        return Err(Error::Invalid("flow and pair arrays disagree in length or order".into()));
    }
    let sources = plan.sources.len();
    for (name, rows, csr) in [
        ("w", flows, &plan.w),
        ("x", flows, &plan.x),
        ("y", flows, &plan.y),
        ("z", pairs, &plan.z),
        ("r", pairs, &plan.r),
    ] {
        csr.check(name, rows, sources)?;
    }
    let (pairs_of, sources_of) = layout(plan);
    let mut rho = plan.sources.iter().map(Rho::new).collect::<Result<Vec<_>>>()?;
    let search = Search { plan, pairs_of, sources_of };
    Ok(search.run(&mut rho, threads))
}

/// Each flow's range of pairs and its distinct sources (in first-read order).
fn layout(plan: &Plan) -> (Vec<std::ops::Range<usize>>, Vec<Vec<usize>>) {
    let (flows, pairs, sources) = (plan.c1.len(), plan.pair_flow.len(), plan.sources.len());
    let mut pairs_of = vec![0..0; flows];
    let mut k = 0;
    for (f, range) in pairs_of.iter_mut().enumerate() {
        let start = k;
        while k < pairs && plan.pair_flow[k] == f {
            k += 1;
        }
        *range = start..k;
    }
    let mut seen = vec![usize::MAX; sources];
    let sources_of = (0..flows)
        .map(|f| {
            let own = [&plan.w, &plan.x, &plan.y].map(|c| c.row(f));
            let paired = pairs_of[f].clone().flat_map(|k| [plan.z.row(k), plan.r.row(k)]);
            let mut list = vec![];
            for &s in own.into_iter().chain(paired).flatten() {
                if seen[s] != f {
                    seen[s] = f;
                    list.push(s);
                }
            }
            list
        })
        .collect();
    (pairs_of, sources_of)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snc::testing::{sample_generator, Lcg};

    fn csr(rows: &[&[usize]]) -> Csr {
        let mut ptr = vec![0];
        let mut idx = vec![];
        for r in rows {
            idx.extend_from_slice(r);
            ptr.push(idx.len());
        }
        Csr { ptr, idx }
    }

    /// One flow alone, a one-state source (Bernoulli `p` of Exp(`mu`) work per step) through two
    /// servers: the bound is the closed form at the searched theta, and the search beats a grid.
    #[test]
    fn single_flow_matches_the_formula() {
        let (p, mu, c1, c2, eps) = (0.3, 1.0, 0.6, 0.8, 1e-3);
        let plan = Plan {
            sources: vec![Source { n: 1, generator: vec![0.0], p: vec![p], mu: vec![mu] }],
            c1: vec![c1],
            c2: vec![c2],
            eps: vec![eps],
            pole: vec![mu],
            w: csr(&[&[0]]),
            x: csr(&[&[]]),
            y: csr(&[&[]]),
            pair_flow: vec![],
            pair_c: vec![],
            z: csr(&[]),
            r: csr(&[]),
        };
        let (theta, latency) = snc_meister_search(&plan).unwrap();
        let formula = |t: f64| {
            let rho_w = (p * t / (mu - t)).ln_1p() / t;
            let (r1, r2) = (-c1, -c2);
            let sigma = -(-(-t * (r1 - r2).abs()).exp_m1()).ln() / t;
            let rho_s = r1.max(r2);
            let log_term = (eps * -(t * (rho_w + rho_s)).exp_m1()).ln();
            (log_term / t - sigma) / rho_s
        };
        assert!((latency[0] - formula(theta[0])).abs() <= 1e-12 * latency[0]);
        for k in 1..1000 {
            let value = formula(k as f64 * 1e-3);
            // unstable thetas give NaN or a negative value: not bounds
            if value.is_finite() && value > 0.0 {
                assert!(latency[0] <= value * (1.0 + 1e-9), "{k}: {} > {value}", latency[0]);
            }
        }
    }

    #[test]
    fn rejects_malformed_rows() {
        let bad = Csr { ptr: vec![0, 2], idx: vec![0] };
        assert!(bad.check("w", 1, 1).is_err());
        assert!(csr(&[&[3]]).check("w", 1, 1).is_err());
    }

    /// A pseudo-random source of `n` states: sparse transitions of order 1e-3 per step,
    /// request probabilities up to 0.1, work rates 2-6.
    fn sample_source(n: usize, seed: u64) -> Source {
        let mut rng = Lcg(seed);
        let generator = sample_generator(&mut rng, n, 0.3, 1e-3);
        let p = (0..n).map(|_| 0.1 * rng.next()).collect();
        let mu = (0..n).map(|_| 2.0 + 4.0 * rng.next()).collect();
        Source { n, generator, p, mu }
    }

    /// Six flows over twelve sources of 1 to 7 states, each flow with its own and shared
    /// sources and one or two pairs feeding its second queue.
    fn sample_plan() -> Plan {
        let sizes = [1, 2, 3, 4, 5, 6, 7, 2, 3, 5, 1, 7];
        let sources: Vec<Source> =
            sizes.iter().enumerate().map(|(i, &n)| sample_source(n, 11 + i as u64)).collect();
        let pole = |rows: &[&[usize]]| {
            let min = rows.iter().flat_map(|r| r.iter()).flat_map(|&s| sources[s].mu.iter());
            min.fold(f64::INFINITY, |m, &x| m.min(x))
        };
        let w: [&[usize]; 6] = [&[0], &[1, 2], &[3], &[4, 5], &[6], &[7, 8]];
        let x: [&[usize]; 6] = [&[9], &[], &[10, 11], &[0], &[2], &[]];
        let y: [&[usize]; 6] = [&[3, 4], &[5], &[], &[6, 7], &[8, 9], &[10]];
        let pair_flow = vec![0, 0, 1, 3, 4, 4, 5];
        let z: [&[usize]; 7] = [&[1], &[2, 3], &[4], &[5, 8], &[11], &[0, 1], &[6]];
        let r: [&[usize]; 7] = [&[5], &[], &[7, 9], &[10], &[3], &[2], &[]];
        let poles = (0..6)
            .map(|f| {
                let mut rows = vec![w[f], x[f], y[f]];
                for (k, &pf) in pair_flow.iter().enumerate() {
                    if pf == f {
                        rows.extend([z[k], r[k]]);
                    }
                }
                pole(&rows)
            })
            .collect();
        Plan {
            c1: vec![0.9, 1.0, 0.8, 1.2, 1.0, 0.9],
            c2: vec![1.1, 0.9, 1.0, 1.3, 1.2, 1.0],
            eps: vec![1e-3, 1e-4, 1e-2, 1e-3, 1e-5, 1e-3],
            pole: poles,
            sources,
            w: csr(&w),
            x: csr(&x),
            y: csr(&y),
            pair_c: vec![0.8, 0.9, 1.0, 0.7, 0.9, 1.1, 0.8],
            pair_flow,
            z: csr(&z),
            r: csr(&r),
        }
    }

    #[test]
    fn builder_gives_the_same_search_as_the_fields() {
        let fields = sample_plan();
        let mut built = Plan::default();
        for src in &fields.sources {
            let i = built.add_source(src.generator.clone(), src.p.clone(), src.mu.clone());
            assert_eq!(i.unwrap(), built.sources.len() - 1);
        }
        for f in 0..fields.flows() {
            let (w, x, y) = (fields.w.row(f), fields.x.row(f), fields.y.row(f));
            let (c1, c2, eps, pole) = (fields.c1[f], fields.c2[f], fields.eps[f], fields.pole[f]);
            assert_eq!(built.add_flow(c1, c2, eps, pole, w, x, y).unwrap(), f);
        }
        for (k, &f) in fields.pair_flow.iter().enumerate() {
            built.add_feeder(f, fields.pair_c[k], fields.z.row(k), fields.r.row(k)).unwrap();
        }
        let a = snc_meister_search_threads(&fields, Some(1)).unwrap();
        let b = snc_meister_search_threads(&built, Some(1)).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn builder_rejects_bad_parts() {
        let mut plan = Plan::default();
        assert!(plan.add_source(vec![0.0, 0.0], vec![0.1], vec![1.0]).is_err());
        assert!(plan.add_source(vec![], vec![], vec![]).is_err());
        plan.add_source(vec![0.0], vec![0.1], vec![1.0]).unwrap();
        assert!(plan.add_flow(1.0, 1.0, 1e-3, 1.0, &[1], &[], &[]).is_err());
        plan.add_flow(1.0, 1.0, 1e-3, 1.0, &[0], &[], &[]).unwrap();
        plan.add_flow(1.0, 1.0, 1e-3, 1.0, &[0], &[], &[]).unwrap();
        assert!(plan.add_feeder(2, 1.0, &[0], &[]).is_err());
        assert!(plan.add_feeder(0, 1.0, &[5], &[]).is_err());
        plan.add_feeder(1, 1.0, &[0], &[]).unwrap();
        assert!(plan.add_feeder(0, 1.0, &[0], &[]).is_err(), "out of flow order");
        assert_eq!(plan.flows(), 2);
        assert!(snc_meister_search(&plan).is_ok());
    }

    /// The reference search for one flow alone, point by point with a fresh memo (what the
    /// level-by-level driver must reproduce).
    fn alone(plan: &Plan, f: usize) -> (f64, f64) {
        let mut rho = plan.sources.iter().map(|s| Rho::new(s).unwrap()).collect::<Vec<_>>();
        let (pairs_of, sources_of) = layout(plan);
        let search = Search { plan, pairs_of, sources_of };
        let (mut theta, mut step) = (INITIAL_THETA, INITIAL_THETA / DECREASE);
        let mut grid = vec![];
        let value_at = |rho: &mut Vec<Rho>, point: f64| {
            if point < plan.pole[f] {
                for &s in &search.sources_of[f] {
                    rho[s].at(point);
                }
            }
            search.latency(rho, f, point)
        };
        while step >= MIN_THETA {
            grid.clear();
            search.grid(f, theta, step, &mut grid);
            let (mut best, mut best_value) = (grid[0], f64::INFINITY);
            for &point in &grid {
                let value = value_at(&mut rho, point);
                if value < best_value {
                    (best, best_value) = (point, value);
                }
            }
            theta = best;
            step /= DECREASE;
        }
        (theta, value_at(&mut rho, theta))
    }

    #[test]
    fn all_flows_match_each_flow_searched_alone() {
        let plan = sample_plan();
        let (theta, latency) = snc_meister_search_threads(&plan, Some(1)).unwrap();
        let mut finite = 0;
        for f in 0..plan.c1.len() {
            let (t, l) = alone(&plan, f);
            assert_eq!(theta[f], t, "flow {f}");
            assert!(l == latency[f] || (l - latency[f]).abs() <= 1e-13 * l, "flow {f}");
            finite += usize::from(l.is_finite());
        }
        assert!(finite >= 4, "the sample plan should mostly give bounds: {latency:?}");
    }

    /// Each source's memo sees the same thetas in the same order on any number of threads, so
    /// the results are the same floats.
    #[test]
    fn thread_count_does_not_change_results() {
        let plan = sample_plan();
        let one = snc_meister_search_threads(&plan, Some(1)).unwrap();
        for threads in [Some(2), Some(3), Some(5), None] {
            assert_eq!(snc_meister_search_threads(&plan, threads).unwrap(), one, "{threads:?}");
        }
    }

    #[test]
    fn split_balances_contiguous_runs() {
        assert_eq!(split(&[1.0; 6], 2), vec![0..3, 3..6]);
        assert_eq!(split(&[5.0, 1.0, 1.0, 1.0, 1.0, 1.0], 2), vec![0..1, 1..6]);
        assert_eq!(split(&[1.0, 1.0], 5), vec![0..1, 1..2]);
        assert_eq!(split(&[], 3), Vec::<std::ops::Range<usize>>::new());
        assert_eq!(split(&[0.0, 0.0, 0.0], 1), vec![0..3]);
    }
}
