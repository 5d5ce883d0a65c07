//! `Block`: the accounts of up to [`BLOCK`] lanes in structure-of-arrays form, stepped one
//! event at a time across all of them, for strategies that do not read their account
//! (`Strategy::ACCOUNT == false`, the rule).
//!
//! A tile is run in chunks of [`CHUNK`] events. For each chunk, every lane of the block first
//! decides its targets over the chunk ([`Decide`]: the strategy's own loop, nothing else in
//! it, compiled for the CPU's vector level so that a simple strategy's loop vectorises across
//! events), into its column of the block's [`Targets`]; then the block steps all its accounts
//! through the chunk, event by event ([`Block::step_events`]). An event without a trade —
//! nearly all of them — is the same arithmetic for every lane, written with selects on small
//! lane arrays ([`vector`]) that the compiler keeps in vector registers ([`super::simd`] picks
//! AVX-512, AVX2 or the target's baseline at run time); an event where lanes trade runs their
//! trade in the same vectors too, and only the trade's record (count, round trip) goes lane by
//! lane. The operations on each lane are those of [`Account::step`], in the same order, so
//! results are bit-identical to the lane-by-lane loop.

use super::account::{Account, Hot};
use super::simd;
pub(super) use decide::Decide;
pub(super) use targets::Targets;
use targets::{changed, next_change};
use vector::{M, V};

mod decide;
mod targets;
mod vector;

/// Lanes per block: two AVX-512 registers of `f64`, four AVX2 ones, eight SSE2 or NEON ones.
pub(super) const BLOCK: usize = 16;

/// Events per chunk. Each chunk costs a fixed setup per lane (the strategy's call, its cursor,
/// the changes' marks) and per group of the step, so longer chunks spread it thinner: 512
/// ran W1 a few per cent faster than 256, momentum and breakout even. The
/// block's targets (`(CHUNK + 1) × BLOCK` values, 64 KiB) then leave L1, which costs little:
/// the decisions write them as a stream and the step reads them only where they change.
pub(super) const CHUNK: usize = 512;

/// Up to [`BLOCK`] lanes' accounts: the per-event state as arrays (one entry per lane), the
/// accounts themselves for the rest (trades, round trips, failed targets).
pub(super) struct Block {
    /// The lanes' accounts, moved in for the tile (a lane past the block's lanes is flat).
    pub(super) accounts: [Account; BLOCK],
    /// The per-event state of all the lanes.
    state: Lanes<BLOCK>,
}

/// What every lane that is flat or long its whole equity shares at one event (see
/// [`Lanes::hold_long`]): the growth of a whole long weight, its return and the return's
/// downside squared, computed once per event of the tile ([`super::window::Window`]) rather
/// than in every group's loop.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Growth {
    mark: f64,
    ret: f64,
    down2: f64,
}

impl Growth {
    /// The growth at an event whose fill ratio is `g_fill` and, for bars (`intrabar`), whose
    /// close-to-open ratio is `g_hold` — what [`Lanes::hold`] computes for a whole weight.
    pub(super) fn new(intrabar: bool, g_fill: f64, g_hold: f64) -> Self {
        // `mark`: a whole weight grows by the ratio itself; for bars, then by the close's.
        let mark = if intrabar { g_fill * g_hold } else { g_fill };
        let ret = mark - 1.0;
        let down = if ret < 0.0 { ret } else { 0.0 };
        Self {
            mark,
            ret,
            down2: down * down,
        }
    }
}

/// The per-event state of `N` lanes (see [`Hot`]), one array per field: what the event loop
/// keeps in vector registers. Aligned to a cache line: where a group's lanes pass through
/// memory (the copy [`Lanes::hold_long`] works on), no store straddles two lines.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
pub(super) struct Lanes<const N: usize> {
    equity: V<N>,
    weight: V<N>,
    held: V<N>,
    shift: V<N>,
    s1: V<N>,
    s2: V<N>,
    downside2: V<N>,
    active: V<N>,
    exposed: V<N>,
    peak: V<N>,
    trough: V<N>,
    max: V<N>,
}

impl Default for Block {
    fn default() -> Self {
        Self {
            accounts: std::array::from_fn(|_| Account::new()),
            state: Lanes::default(),
        }
    }
}

impl Block {
    /// Reads lane `k`'s per-event state from its account.
    pub(super) fn load(&mut self, k: usize) {
        let hot = self.accounts[k].hot();
        self.state.set(k, &hot);
    }

    /// Writes lane `k`'s per-event state back to its account.
    pub(super) fn store(&mut self, k: usize) {
        let hot = self.state.get(k);
        self.accounts[k].set_hot(&hot);
    }

    /// Makes lane `k` a flat lane that no event changes (a block with fewer lanes).
    pub(super) fn pad(&mut self, k: usize) {
        self.accounts[k] = Account::new();
        self.load(k);
    }

    /// Lane `k`'s equity.
    pub(super) fn equity(&self, k: usize) -> f64 {
        self.state.equity.0[k]
    }

    /// Steps every lane through the events whose price ratios are `ratios` (fill / previous
    /// mark, and for bars close / open) and whose targets are the rows of `targets` from
    /// row `first` on (one row per event): `N` lanes at a time (one vector register's worth),
    /// their state and targets in registers through all the events, the targets read again
    /// only at a row where one of the `N` lanes changes its own.
    ///
    /// Between two such rows no lane trades, which the step uses twice: `N` lanes that are all
    /// flat and target flat skip to the next change (no event changes them), and `N` lanes
    /// that are each flat or long their whole equity (a long-only strategy's rule) step
    /// through [`Lanes::hold_long`], the same arithmetic with what every lane shares done
    /// once per event.
    #[inline(always)]
    pub(super) fn step_events<const INTRABAR: bool, const N: usize>(
        &mut self,
        (targets, first): (&Targets, usize),
        (g_fill, g_hold, growth): (&[f64], &[f64], &[Growth]),
        cost: f64,
    ) {
        let n = g_fill.len();
        assert!(g_hold.len() >= n, "a hold ratio per event");
        assert!(growth.len() >= n, "a growth per event");
        let zero = V::splat(0.0);
        for g in (0..BLOCK).step_by(N) {
            let mut lanes = self.state.lanes::<N>(g);
            let accounts = &mut self.accounts[g..g + N];
            let changes = targets.group_changes::<N>(g);
            let mut slot = targets.row::<N>(g, first);
            // Every lane flat and targeting flat: no event changes them until a target does.
            let idle = |slot: &[f64; N], lanes: &Lanes<N>| {
                !V(*slot).ne(zero).or(lanes.held.ne(zero)).any()
            };
            let mut still = idle(&slot, &lanes);
            let mut i = 0;
            while i < n {
                let r = first + i;
                if changed(&changes, r) {
                    slot = targets.row::<N>(g, r);
                    still = idle(&slot, &lanes);
                }
                if still {
                    i = next_change(&changes, r + 1, first + n) - first;
                    continue;
                }
                // The event where the targets were read (and lanes may trade), then the events
                // up to the next change: every lane holds what it targets through them.
                lanes.event::<INTRABAR>(accounts, &slot, (g_fill[i], g_hold[i], cost));
                still = idle(&slot, &lanes);
                i += 1;
                let steady = next_change(&changes, first + i, first + n) - first;
                if still || steady == i {
                    continue;
                }
                if lanes.long_whole() {
                    // Through a copy: `lanes` itself never has its address taken, so the
                    // step keeps it in registers rather than storing it at every event.
                    let mut held = lanes;
                    simd::hold_long::<N>(&mut held, &growth[i..steady]);
                    lanes = held;
                } else {
                    for j in i..steady {
                        lanes.event::<INTRABAR>(accounts, &slot, (g_fill[j], g_hold[j], cost));
                    }
                }
                i = steady;
            }
            self.state.set_lanes(g, &lanes);
        }
    }
}

impl<const N: usize> Default for Lanes<N> {
    fn default() -> Self {
        let v = V::default();
        Self {
            equity: v,
            weight: v,
            held: v,
            shift: v,
            s1: v,
            s2: v,
            downside2: v,
            active: v,
            exposed: v,
            peak: v,
            trough: v,
            max: v,
        }
    }
}

impl Lanes<BLOCK> {
    /// Lanes `from..from + N`.
    #[inline(always)]
    fn lanes<const N: usize>(&self, from: usize) -> Lanes<N> {
        let part = |v: &V<BLOCK>| {
            let mut out = V::<N>::default();
            out.0.copy_from_slice(&v.0[from..from + N]);
            out
        };
        Lanes {
            equity: part(&self.equity),
            weight: part(&self.weight),
            held: part(&self.held),
            shift: part(&self.shift),
            s1: part(&self.s1),
            s2: part(&self.s2),
            downside2: part(&self.downside2),
            active: part(&self.active),
            exposed: part(&self.exposed),
            peak: part(&self.peak),
            trough: part(&self.trough),
            max: part(&self.max),
        }
    }

    /// Writes `lanes` back as lanes `from..from + N`.
    #[inline(always)]
    fn set_lanes<const N: usize>(&mut self, from: usize, lanes: &Lanes<N>) {
        let put = |v: &mut V<BLOCK>, part: &V<N>| v.0[from..from + N].copy_from_slice(&part.0);
        put(&mut self.equity, &lanes.equity);
        put(&mut self.weight, &lanes.weight);
        put(&mut self.held, &lanes.held);
        put(&mut self.shift, &lanes.shift);
        put(&mut self.s1, &lanes.s1);
        put(&mut self.s2, &lanes.s2);
        put(&mut self.downside2, &lanes.downside2);
        put(&mut self.active, &lanes.active);
        put(&mut self.exposed, &lanes.exposed);
        put(&mut self.peak, &lanes.peak);
        put(&mut self.trough, &lanes.trough);
        put(&mut self.max, &lanes.max);
    }
}

impl<const N: usize> Lanes<N> {
    fn get(&self, k: usize) -> Hot {
        Hot {
            equity: self.equity.0[k],
            weight: self.weight.0[k],
            held: self.held.0[k],
            shift: self.shift.0[k],
            s1: self.s1.0[k],
            s2: self.s2.0[k],
            downside2: self.downside2.0[k],
            active: self.active.0[k],
            exposed: self.exposed.0[k],
            peak: self.peak.0[k],
            trough: self.trough.0[k],
            max: self.max.0[k],
        }
    }

    fn set(&mut self, k: usize, hot: &Hot) {
        self.equity.0[k] = hot.equity;
        self.weight.0[k] = hot.weight;
        self.held.0[k] = hot.held;
        self.shift.0[k] = hot.shift;
        self.s1.0[k] = hot.s1;
        self.s2.0[k] = hot.s2;
        self.downside2.0[k] = hot.downside2;
        self.active.0[k] = hot.active;
        self.exposed.0[k] = hot.exposed;
        self.peak.0[k] = hot.peak;
        self.trough.0[k] = hot.trough;
        self.max.0[k] = hot.max;
    }

    /// One event: the lanes that keep their position hold it, the others trade.
    #[inline(always)]
    fn event<const INTRABAR: bool>(
        &mut self,
        accounts: &mut [Account],
        slot: &[f64; N],
        (gf, gh, cost): (f64, f64, f64),
    ) {
        let targets = V(*slot);
        let gh = if INTRABAR { gh } else { 1.0 };
        self.hold::<INTRABAR>(targets, gf, gh);
        if targets.ne(self.held).any() {
            self.trade::<INTRABAR>(accounts, slot, (gf, gh, cost));
        }
    }

    /// Whether every lane is flat or long its whole equity (`held` and `weight` 0 or 1): a
    /// long lane's weight then stays 1 and its equity grows by the price ratio itself.
    #[inline(always)]
    fn long_whole(&self) -> bool {
        let (zero, one) = (V::splat(0.0), V::splat(1.0));
        let whole = |v: V<N>| v.eq(zero).or(v.eq(one));
        !whole(self.held).and(whole(self.weight)).not().any()
    }

    /// [`Lanes::hold`] over events where no lane trades, every lane flat or long its whole
    /// equity ([`Lanes::long_whole`]): the same operations on the same values, with what is
    /// the same for every lane (the growth, the return, its downside: [`Growth`]) computed once
    /// per event of the tile, and the lanes that hold fixed for the run.
    #[inline(always)]
    pub(super) fn hold_long(&mut self, growth: &[Growth]) {
        let zero = V::splat(0.0);
        let live = self.held.ne(zero);
        // Every lane long (as often as not in a crossover's grid): the same sums without the
        // masks, a live lane's term being added in full either way.
        if live.not().any() {
            self.hold_long_masked::<true>(live, growth);
        } else {
            self.hold_long_masked::<false>(live, growth);
        }
        // A held lane is exposed at every event: both counts grow by the events (whole
        // numbers, exact: the sum of as many ones).
        #[allow(
            clippy::cast_precision_loss,
            reason = "a tile's events, far below 2^53"
        )]
        let count = live.select(V::splat(growth.len() as f64), zero);
        self.active = self.active.add(count);
        self.exposed = self.exposed.add(count);
    }

    /// [`Lanes::hold_long`]'s loop; `MASKED`: some lanes are flat (not `live`), and keep
    /// their values (`equity × 1`, sums `+ 0.0`).
    #[inline(always)]
    fn hold_long_masked<const MASKED: bool>(&mut self, live: M<N>, growth: &[Growth]) {
        let (zero, one) = (V::splat(0.0), V::splat(1.0));
        let term = |v: V<N>, flat: V<N>| if MASKED { live.select(v, flat) } else { v };
        for g in growth {
            // `settle`, with `equity × 1` (its own bits) where a lane is flat.
            self.equity = self.equity.mul(term(V::splat(g.mark), one));
            let d = V::splat(g.ret).sub(self.shift);
            self.s1 = self.s1.add(term(d, zero));
            self.s2 = self.s2.add(term(d.mul(d), zero));
            self.downside2 = self.downside2.add(term(V::splat(g.down2), zero));
            self.trough = self.equity.min(self.trough);
            let record = self.equity.gt(self.peak);
            if record.any() {
                self.close_episodes(record);
            }
        }
    }

    /// The event for the lanes that hold a position and keep it: marked to the fill (and, for
    /// bars, to the close), equity, return moments and drawdown — [`Account::step`] without
    /// its trade, lane by lane in vector registers. Flat lanes and lanes that trade are left
    /// as they are.
    #[inline(always)]
    fn hold<const INTRABAR: bool>(&mut self, targets: V<N>, gf: f64, gh: f64) {
        let (zero, one) = (V::splat(0.0), V::splat(1.0));
        let live = targets.eq(self.held).and(self.held.ne(zero));
        let (mut m, mut exposed) = self.mark(live, one, gf);
        if INTRABAR {
            let (g, held_through) = self.mark(live, one, gh);
            m = held_through.select(m.mul(g), m);
            exposed = exposed.or(held_through);
        }
        self.settle(live, m, exposed);
    }

    /// The `live` lanes' equity grown by the factor `m`, their exposure counted where
    /// `exposed`, their return moments and drawdown updated: the end of [`Account::step`].
    ///
    /// The sums add a masked term in every lane (`+ 0.0` where not live: a sum here is never
    /// `-0.0`, so it keeps its bits), so that each is one add in a chain rather than an add
    /// and a select. The drawdown needs no mask: a lane's equity changes only here, and each
    /// change moves its peak and trough, so an equity left as it was lies within them.
    #[inline(always)]
    fn settle(&mut self, live: M<N>, m: V<N>, exposed: M<N>) {
        let (zero, one) = (V::splat(0.0), V::splat(1.0));
        let r = m.sub(one);
        let d = r.sub(self.shift);
        let down = r.min0();
        self.equity = live.select(self.equity.mul(m), self.equity);
        self.exposed = self.exposed.add(live.and(exposed).select(one, zero));
        self.s1 = self.s1.add(live.select(d, zero));
        self.s2 = self.s2.add(live.select(d.mul(d), zero));
        self.downside2 = self.downside2.add(live.select(down.mul(down), zero));
        self.active = self.active.add(live.select(one, zero));
        // `Drawdown::update`: below the trough lowers it (a `min`, off the mask), above the
        // peak closes the episode.
        self.trough = self.equity.min(self.trough);
        let record = self.equity.gt(self.peak);
        if record.any() {
            self.close_episodes(record);
        }
    }

    /// A new peak closes the drawdown episode of the lanes of `record`: the drawdown's one
    /// division, on the few events that set a record (a random walk sets few).
    #[inline(always)]
    fn close_episodes(&mut self, record: M<N>) {
        let drawdown = V::splat(1.0).sub(self.trough.div(self.peak));
        let deeper = record.and(drawdown.gt(self.max));
        self.max = deeper.select(drawdown, self.max);
        self.peak = record.select(self.equity, self.peak);
        self.trough = record.select(self.equity, self.trough);
    }

    /// Marks the weights to a price move of ratio `g`: the growth of each lane's equity (1 for
    /// a flat one) and which lanes are exposed. A live lane's fractional weight drifts with
    /// the price (a division, skipped when every weight is 0 or 1, as they stay).
    #[inline(always)]
    fn mark(&mut self, live: M<N>, one: V<N>, g: f64) -> (V<N>, M<N>) {
        let w = self.weight;
        let exposed = w.ne(V::splat(0.0));
        let whole = w.eq(one);
        let g = V::splat(g);
        let growth = whole.select(g, one.add(w.mul(g.sub(one))));
        let growth = exposed.select(growth, one);
        let drift = live.and(exposed).and(whole.not());
        if drift.any() {
            self.weight = drift.select(w.mul(g).div(growth), w);
        }
        (growth, exposed)
    }

    /// The event for the lanes whose target differs from what they hold: [`Account::step`]
    /// with its trade, in vector registers (mark to the fill, the fee factor, the new weight,
    /// for bars the mark to the close, then [`Lanes::settle`]); only the trade's record —
    /// its count and, when it closes or opens a position, the round trip — is kept lane by
    /// lane, in each trading lane's account ([`Account::book_trade`]). Inlined, so that it
    /// is compiled for the step's vector level (a call would run baseline code).
    #[inline(always)]
    fn trade<const INTRABAR: bool>(
        &mut self,
        accounts: &mut [Account],
        targets: &[f64; N],
        (gf, gh, cost): (f64, f64, f64),
    ) {
        let (one, cost) = (V::splat(1.0), V::splat(cost));
        let target = V(*targets);
        let trading = target.ne(self.held);
        let (m, mut exposed) = self.mark(trading, one, gf);
        // `fee_factor(weight, target, cost)`, lane by lane.
        let (w, up) = (self.weight, target.gt(self.weight));
        let from = up.select(one.add(cost.mul(w)), one.sub(cost.mul(w)));
        let to = up.select(one.add(cost.mul(target)), one.sub(cost.mul(target)));
        let before_fee = self.equity.mul(m);
        let mut m = m.mul(from.div(to));
        let after = self.equity.mul(m);
        // Lane by lane from copies, so that the lanes' own state is never addressed lane by
        // lane (which would keep it in memory through the whole step, not in registers).
        let (held_lanes, trading_lanes) = (self.held.0, trading.0);
        let records = held_lanes
            .iter()
            .zip(target.0)
            .zip(before_fee.0)
            .zip(after.0);
        for ((account, &trades), (((&held, target), before_fee), after)) in
            accounts.iter_mut().zip(&trading_lanes).zip(records)
        {
            if trades != 0 {
                account.book_trade(held, target, before_fee, after);
            }
        }
        self.held = trading.select(target, self.held);
        self.weight = trading.select(target, self.weight);
        if INTRABAR {
            let (g, held_through) = self.mark(trading, one, gh);
            m = held_through.select(m.mul(g), m);
            exposed = exposed.or(held_through);
        }
        self.settle(trading, m, exposed);
    }
}

#[cfg(test)]
#[allow(
    unsafe_code,
    reason = "the test strategies register themselves (linkme's link sections), as a user's do"
)]
mod tests;
