//! Engine speed: a whole overloaded-queue run beside a bare binary-heap loop.
//!
//! `simulate/bench-1m` runs one replication of `scenarios/bench-1m.json` (the perf-storm retry
//! storm that BENCHMARKS.md also runs beside a peer, for 909.1 s of arrivals: about 1.0 million
//! logical requests and 3.9 million events) through the library API, on one thread. Its
//! throughput is in events; between versions that handle different numbers of events for the
//! same run (stale timers dropped unseen, answers, retries and successes settled where the
//! server answers), compare the time per run or the logical requests per second.
//!
//! `bare-heap/hold` is the ceiling for this design: a `std::collections::BinaryHeap` of entries
//! comparable to the engine's (u64 time, u64 seq, 12-byte payload, earliest (time, seq) first),
//! held at the mean number of events pending in the run (about 470), doing one
//! pop and one push per event for as many events as the run processes. Nothing else: no model,
//! no random draws beyond a xorshift for the time increments, no metrics.
//!
//! After both, a summary line gives events/s and logical requests/s of the run, events/s of the
//! bare loop, and their ratio (medians of the timed iterations). Targets: at least 20 million
//! events/s on one core, within 3x of the bare loop. See BENCHMARKS.md.
//!
//! `draws/*` times one draw of the network hop delay |Normal(10 ms, 2 ms)| from a PCG stream:
//! `rand_distr-normal` the way retrystorm drew it before (`rand_distr::Normal` in seconds,
//! folded, converted to nanoseconds), `ziggurat` the way `Dist::Normal` draws it now.
//!
//! `occ/aws-column` runs the N = 190 column of `scenarios/aws-backoff-jitter.json` (its
//! five strategies, 20 replications each: about 382,000 conditional writes) through the
//! library on one thread, the `occ` path the "Exponential Backoff And Jitter" sweep spends
//! its time in; its throughput is in writes. It measures the simulation alone, where the
//! command line's timings (BENCHMARKS.md sections 4 and 6) include loading, the report and
//! the figures.
//!
//! Run with `cargo bench --bench engine` (about 50 s once built, on 2 cores); `cargo bench
//! --bench engine draws` for the draws alone, `-- simulate/bench-1m` for the storm alone,
//! `-- aws-column` for the column alone.

use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, Throughput};
use rand::SeedableRng;
use rand_distr::{Distribution, Normal};
use rand_pcg::Pcg64;
use retrystorm::engine::SimDuration;
use retrystorm::model::Dist;
use retrystorm::scenario::{LoadOptions, Scenario, load_str};

const SCENARIO: &str = include_str!("../scenarios/bench-1m.json");
const AWS: &str = include_str!("../scenarios/aws-backoff-jitter.json");
/// Replications of each strategy per timed run of the AWS column.
const AWS_REPLICATIONS: u64 = 20;
/// Samples of the AWS column: a run is short (tens of milliseconds), and the machine's noise
/// needs many to resolve a change of a few percent.
const AWS_SAMPLES: usize = 50;
const SEED: u64 = 1;
const REPLICATION: u64 = 0;
/// Criterion's smallest sample count; each sample is one whole run.
const SAMPLES: usize = 10;

/// Mean number of pending events while `bench-1m` runs (measured by instrumenting the event
/// loop in a scratch copy: mean 469, peak 820; measured when the run handled 8.6 million
/// events and entered every timer at its attempt's send, so stale timers were pending until
/// they came up; fewer wait now, and the bare heap is held at the older, larger size).
const HELD: usize = 470;

fn scenario() -> Scenario {
    let experiment =
        load_str(SCENARIO, "scenarios/bench-1m.json", &LoadOptions::default()).expect("valid");
    experiment.points[0].variants[0].scenario.clone()
}

/// An entry of the bare heap: (u64 time, u64 sequence, 12-byte payload), 32 bytes with padding,
/// the size of the engine's entries.
struct Entry {
    time: u64,
    seq: u64,
    payload: [u32; 3],
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.time == other.time && self.seq == other.seq
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    /// Reversed: the max-heap pops the earliest (time, seq).
    fn cmp(&self, other: &Self) -> Ordering {
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

/// xorshift64*: a cheap source of time increments.
struct XorShift(u64);

impl XorShift {
    #[inline]
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform on [0, n) for n < 2^32, by multiply-shift (no division).
    #[inline]
    fn below(&mut self, n: u64) -> u64 {
        ((self.next() >> 32) * n) >> 32
    }
}

/// The classic hold model: `held` pending entries, then `events` pops, each but the last
/// `held` followed by a push at the popped time plus a random increment (uniform on
/// [0, 200 ms), about the spread of the scenario's delays). Returns a checksum.
fn bare_heap(events: u64, held: usize) -> u64 {
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let mut heap = BinaryHeap::with_capacity(held + 1);
    let mut seq = 0u64;
    const SPREAD: u64 = 200_000_000;
    for _ in 0..held {
        heap.push(Entry {
            time: rng.below(SPREAD),
            seq,
            payload: [seq as u32, 0, 0],
        });
        seq += 1;
    }
    let mut sum = 0u64;
    let holds = events.saturating_sub(held as u64);
    for _ in 0..holds {
        let e = heap.pop().expect("held entries");
        sum = sum.wrapping_add(u64::from(e.payload[0]));
        heap.push(Entry {
            time: e.time + rng.below(SPREAD),
            seq,
            payload: [seq as u32, e.payload[1], e.payload[2]],
        });
        seq += 1;
    }
    while let Some(e) = heap.pop() {
        sum = sum.wrapping_add(u64::from(e.payload[0]));
    }
    sum
}

fn median(xs: &mut [Duration]) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn engine(c: &mut Criterion) {
    let sc = scenario();
    let start = Instant::now();
    let probe = retrystorm::sim::run(&sc, SEED, REPLICATION);
    let sim_once = start.elapsed();
    let (events, requests) = (probe.counters.events, probe.counters.requests);
    eprintln!(
        "bench-1m: {requests} logical requests, {events} events ({:.2} events/request)",
        events as f64 / requests as f64
    );
    let start = Instant::now();
    black_box(bare_heap(events, HELD));
    let heap_once = start.elapsed();

    let sim_times = RefCell::new(Vec::new());
    let heap_times = RefCell::new(Vec::new());

    // Ten samples of one iteration each: the window is sized from the probe runs above. (On a
    // busy machine criterion may still warn that it needs a little longer; that is harmless.)
    let window = |once: Duration| once * SAMPLES as u32;
    let mut group = c.benchmark_group("engine");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(SAMPLES)
        .warm_up_time(Duration::from_millis(500))
        .throughput(Throughput::Elements(events));

    group.measurement_time(window(sim_once));
    group.bench_function("simulate/bench-1m", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                let result = retrystorm::sim::run(black_box(&sc), SEED, REPLICATION);
                assert_eq!(result.counters.events, events, "runs are deterministic");
                black_box(result);
            }
            let elapsed = start.elapsed();
            sim_times.borrow_mut().push(elapsed / iters as u32);
            elapsed
        })
    });

    group.measurement_time(window(heap_once));
    group.bench_function(format!("bare-heap/hold-{HELD}"), |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                black_box(bare_heap(black_box(events), HELD));
            }
            let elapsed = start.elapsed();
            heap_times.borrow_mut().push(elapsed / iters as u32);
            elapsed
        })
    });
    group.finish();

    if sim_times.borrow().is_empty() || heap_times.borrow().is_empty() {
        return; // a filter left one of the two out: no ratio to report
    }
    let sim = median(&mut sim_times.borrow_mut()).as_secs_f64();
    let heap = median(&mut heap_times.borrow_mut()).as_secs_f64();
    eprintln!(
        "summary: simulate {:.1} M events/s, {:.2} M logical requests/s; bare heap {:.1} M events/s; \
         ratio {:.2}x (targets: >= 20 M events/s, <= 3x)",
        events as f64 / sim / 1e6,
        requests as f64 / sim / 1e6,
        events as f64 / heap / 1e6,
        sim / heap
    );
}

/// The five strategies of the AWS sweep's last point (N = 190 clients).
fn aws_column() -> Vec<Scenario> {
    let experiment = load_str(
        AWS,
        "scenarios/aws-backoff-jitter.json",
        &LoadOptions::default(),
    )
    .expect("valid");
    let point = experiment.points.last().expect("a sweep");
    assert_eq!(
        point.variants[0].scenario.clients[0].count, 190,
        "the last point is N = 190"
    );
    point.variants.iter().map(|v| v.scenario.clone()).collect()
}

/// Every replication of the column once; returns the writes (attempts) made.
fn run_column(column: &[Scenario]) -> u64 {
    let mut writes = 0;
    for sc in column {
        for replication in 0..AWS_REPLICATIONS {
            let result = retrystorm::sim::run(black_box(sc), SEED, replication);
            writes += result.entry().attempts;
            black_box(result);
        }
    }
    writes
}

fn aws(c: &mut Criterion) {
    let column = aws_column();
    let start = Instant::now();
    let writes = run_column(&column);
    let once = start.elapsed();
    eprintln!(
        "aws-column: {writes} writes in {} simulations",
        column.len() as u64 * AWS_REPLICATIONS
    );
    let mut group = c.benchmark_group("occ");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(AWS_SAMPLES)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(once * AWS_SAMPLES as u32)
        .throughput(Throughput::Elements(writes));
    group.bench_function("aws-column", |b| {
        b.iter(|| assert_eq!(run_column(&column), writes, "runs are deterministic"))
    });
    group.finish();
}

/// Draws per timed iteration, so the loop's overhead is spread thin.
const DRAWS: u64 = 1000;

fn draws(c: &mut Criterion) {
    let (mean, sd) = (SimDuration::from_millis(10), SimDuration::from_millis(2));
    let old = Normal::new(mean.as_secs_f64(), sd.as_secs_f64()).expect("valid");
    let new = Dist::normal(mean, sd);
    let mut group = c.benchmark_group("draws");
    group.throughput(Throughput::Elements(DRAWS));
    group.bench_function("rand_distr-normal", |b| {
        let mut rng = Pcg64::seed_from_u64(SEED);
        b.iter(|| {
            let mut sum = 0u64;
            for _ in 0..DRAWS {
                let d = SimDuration::from_secs_f64(old.sample(&mut rng).abs());
                sum = sum.wrapping_add(d.as_nanos());
            }
            black_box(sum)
        })
    });
    group.bench_function("ziggurat", |b| {
        let mut rng = Pcg64::seed_from_u64(SEED);
        let new = black_box(&new);
        b.iter(|| {
            let mut sum = 0u64;
            for _ in 0..DRAWS {
                sum = sum.wrapping_add(new.sample(&mut rng).as_nanos());
            }
            black_box(sum)
        })
    });
    group.bench_function("pcg-u64", |b| {
        let mut rng = Pcg64::seed_from_u64(SEED);
        b.iter(|| {
            let mut sum = 0u64;
            for _ in 0..DRAWS {
                sum = sum.wrapping_add(rand::Rng::next_u64(&mut rng));
            }
            black_box(sum)
        })
    });
    group.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    draws(&mut c);
    engine(&mut c);
    aws(&mut c);
    c.final_summary();
}
