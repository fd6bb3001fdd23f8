//! The driver: one replication of one [`Scenario`] -> one [`RunResult`].
//!
//! It assembles the model from the scenario (the clients, the services with their servers,
//! and one call edge per caller -> service pair, each with its policies), then owns the event
//! loop and handles every [`Event`] in one `match`. The engine orders events; the model
//! decides admissions, service times, backoff delays and policy verdicts; the driver keeps
//! the logical calls and the work in progress. No I/O and no wall clock: the same scenario,
//! seed and replication always give the same result.
//!
//! The parts:
//! - `client` is the calling side of every edge: logical calls (a client's request is the
//!   root call, on its group's edge; a service's call to another is a child of the work
//!   that made it),
//!   their attempts, timers, retries and fallbacks.
//! - `service` is the serving side: arrivals at a service, its server, the work an attempt
//!   does after its service time (its downstream calls, holding the worker) and the answer.
//! - `policy` is the pipeline every per-call policy is called through.
//!
//! Logical calls live in a slab that reuses slots, so memory follows what is in flight. Every
//! attempt gets a token; an event about an attempt whose token is no longer the one its call
//! awaits (it timed out, or the call ended) is stale, which is how abandoned work and late
//! replies are detected without cancelling events. A slot is reused only once its call has
//! ended and every attempt it sent is accounted for (answered, dropped or discarded), so an
//! event always finds the call it was about.

mod client;
mod features;
mod policy;
mod service;
mod slab;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::engine::{EventQueue, SimTime, Ticket};
use crate::metrics::{CallCounters, Column, Gauges, Recorder, RunResult, TimeSeries, Truncation};
use crate::model::Outcome;
use crate::model::streams::Draws;
use crate::scenario::{Scenario, Workload};

use client::SettledEnd;
use features::{Features, Full, Lean};
use policy::{CallPolicies, DENSE_INSTANCES};
use service::{Host, ServiceState, Work};
use slab::{Calls, Fixed};

/// Everything that can happen in a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    /// The next logical request of group `group`'s open workload arrives.
    Arrival { group: u32 },
    /// A closed-workload client (of group `group`) starts its next logical request.
    ClientReady { client: u32, group: u32 },
    /// A retry's backoff is over: the caller sends the next attempt, or gives up if the
    /// call's deadline has passed.
    RetryDue { slot: u32 },
    /// An attempt reaches its service (for an `occ` service: its read, an event only when
    /// the caller might stop waiting before the version is back); for a replicated service,
    /// its first replica.
    ServerArrival { slot: u32, token: u32 },
    /// An attempt reaches replica `host` (`Sim::host`) of a replicated service, not its
    /// first.
    ReplicaArrival { slot: u32, token: u32, host: u32 },
    /// `occ`: a conditional write reaches the service (two hops after its read, whose
    /// instant its call keeps, or the row under the ticket `read`: the version travels
    /// back and the caller writes at once).
    OccWrite { slot: u32, token: u32, read: u32 },
    /// A service (its first replica) finishes the service time of an attempt.
    ServiceDone { slot: u32, token: u32 },
    /// Replica `host` of a replicated service, not its first, finishes the service time of
    /// an attempt.
    ReplicaDone { slot: u32, token: u32, host: u32 },
    /// An answer reaches the caller.
    Reply {
        slot: u32,
        token: u32,
        outcome: Outcome,
    },
    /// The caller's timer for an attempt fires (timeout or deadline).
    AttemptTimer { slot: u32, token: u32 },
    /// An attempt's wait for a bulkhead permit ends: it fails `bulkhead_full` unless it got
    /// one.
    BulkheadTimer { slot: u32, token: u32 },
    /// A fallback's answer is ready: the call that failed ends `degraded`.
    FallbackDone { slot: u32 },
    /// A concurrency fault window of a service's replica `host` starts or ends: it re-reads
    /// its worker count.
    FaultEdge { host: u32 },
    /// An attempt (`token`, the one that opened its call's round) has gone its hedge delay
    /// without an answer: the call sends a hedge if it still races and may.
    HedgeDue { slot: u32, token: u32 },
    /// An attempt's wait for its client rate limiter's token is over: it is sent.
    TokenDue { slot: u32, token: u32 },
}

/// What a group's client does when one of its requests ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AfterRequest {
    /// Nothing: an open workload's requests arrive on their own.
    Nothing,
    /// A closed client issuing requests until the duration thinks, then starts the next.
    Think,
    /// A closed client with `requests_per_client` does so while its count is above zero:
    /// the group's counts are in `Sim::remaining` from `base`, its first client's first.
    Count { base: u32 },
}

/// No attempt is awaited.
const NO_TOKEN: u32 = 0;

/// No call slot: a call's `hedge_of`, the end of a hedge list.
const NONE: u32 = u32::MAX;

/// Pending events below which stale timers are never swept out.
const COMPACT_MIN: usize = 4096;

/// Whether `event` is the timer of an attempt its caller no longer awaits (answered, or its
/// call ended). A caller would have cancelled it: the queue drops it unseen, so it neither
/// moves the clock nor counts as an event, whether it comes up or is swept out first.
#[inline(always)]
fn stale(calls: &Calls, event: &Event) -> bool {
    matches!(*event, Event::AttemptTimer { slot, token } if !calls[slot].awaits(token))
}

/// Runs replication `replication` (0-based) of `scenario` with master seed `seed`.
pub fn run(scenario: &Scenario, seed: u64, replication: u64) -> RunResult {
    run_with(scenario, seed, replication, TUNING)
}

/// How a run is carried out where the choice changes no result (the tests run both ways and
/// compare).
#[derive(Debug, Clone, Copy)]
struct Tuning {
    /// Per-client policy instances are kept in a vector up to this many clients, in a map
    /// beyond.
    dense_max: usize,
    /// Stale timers are swept out of a queue of more than this many pending events.
    compact_min: usize,
    /// A caller's timer that cannot fire before its attempt reaches the service is entered
    /// into the event list then, and only if the attempt is still awaited, in the place it
    /// took when the attempt was sent (`Sim::arm_timer`); otherwise at the send.
    timers_on_arrival: bool,
    /// A request's success is settled where its service answers, where the run allows it
    /// (`Sim::succeed_at_once`); otherwise its answer travels as an event.
    successes_at_once: bool,
}

/// The tuning of every run outside the tests.
const TUNING: Tuning = Tuning {
    dense_max: DENSE_INSTANCES,
    compact_min: COMPACT_MIN,
    timers_on_arrival: true,
    successes_at_once: true,
};

/// [`run`] with `tuning`, by the driver built for the fewest features the scenario needs.
fn run_with(scenario: &Scenario, seed: u64, replication: u64, tuning: Tuning) -> RunResult {
    if Lean::fits(scenario) {
        run_as::<Lean>(scenario, seed, replication, tuning)
    } else {
        run_as::<Full>(scenario, seed, replication, tuning)
    }
}

/// [`run_with`] by the driver built for the features `F`, which `scenario` must not exceed.
fn run_as<F: Features>(
    scenario: &Scenario,
    seed: u64,
    replication: u64,
    tuning: Tuning,
) -> RunResult {
    let mut sim = Sim::<F>::new(scenario, seed, replication, tuning);
    let truncated = sim.run(tuning.compact_min);
    sim.finish(truncated)
}

/// A call edge: a group of clients' calls to the entry (the first edges, one per group), or
/// one service's calls to another.
struct Edge<'a> {
    /// The service called.
    to: u32,
    /// The slice of [0, 1) of route draws that make this call, or `None`: every attempt
    /// makes it.
    route: Option<(f64, f64)>,
    /// `propagate_deadline`.
    propagate_deadline: bool,
    /// The per-attempt timeout (the policy's, kept here for the hot path).
    timeout: Option<crate::engine::SimDuration>,
    /// The service called is `occ` and the edge does not hedge: an attempt the caller keeps
    /// no timer for is awaited until its answer, so its read needs no event
    /// (`Sim::occ_send`).
    folds_reads: bool,
    /// Whether the service executions of the call are counted (`idempotent: false`) or
    /// remembered (`idempotency_key`), so the service reads the answer of an attempt nobody
    /// awaits too.
    tracks_executions: bool,
    /// The keys the service called remembers for this call's attempts (`idempotency_key`).
    /// Keys are unique to a logical call, so one store per edge behaves as the service's
    /// memory would, each with its call's `ttl`.
    keys: Option<crate::model::KeyStore>,
    /// Its policies.
    policies: CallPolicies<'a>,
    /// What happened on it (reported for calls between services).
    counters: CallCounters,
}

/// A call edge's view of the replicas of the service it calls.
struct EdgePool {
    /// The caller's balancer: the replicas and what it has out to each.
    balancer: crate::model::Balancer,
    /// Every attempt of a call goes where its first went.
    sticky: bool,
    /// `retry_host_predicate: ["previous_hosts"]`: the reselections a retry's pick may make.
    previous_hosts: Option<u32>,
    /// `balancer_sees: "queue"`: the balancer compares what each replica holds rather than
    /// what its caller has out there.
    sees_queue: bool,
    /// The caller's outlier detector over the replicas, where the service has one: each
    /// caller (the clients together, as behind one front proxy; each call edge, as a
    /// sidecar) keeps its own, as each Envoy keeps one per cluster, and its balancer skips
    /// the replicas it ejected.
    detector: Option<crate::model::Detector>,
}

impl Edge<'_> {
    /// Whether the caller keeps a timer for an attempt of a call with `deadline` on this
    /// edge: it has a timeout, or the call a deadline.
    #[inline(always)]
    fn keeps_timer(&self, deadline: SimTime) -> bool {
        self.timeout.is_some() || deadline != SimTime::NEVER
    }
}

/// Whether attempts on an edge with `policy` to a service with `server` may skip the read's
/// event (see `Edge::folds_reads`).
fn folds_reads(server: &crate::scenario::Server, policy: &crate::scenario::Policy) -> bool {
    matches!(server.kind, crate::scenario::ServerKind::Occ) && policy.hedge.is_none()
}

/// `Sim::gauges_settle` for `sc`: the longest of its groups' policies', and, where a caller
/// detects outliers, the longest a replica stays ejected after the answer that ejected it
/// (its longest ejection time, to the next tick).
fn gauges_settle(sc: &Scenario) -> crate::engine::SimDuration {
    let outliers = sc
        .services
        .iter()
        .filter_map(|s| s.server.pool.outlier)
        .map(|o| o.max_ejection_time + o.interval);
    sc.client_policies()
        .map(policy_settles)
        .chain(outliers)
        .max()
        .unwrap_or(crate::engine::SimDuration::ZERO)
}

/// How long a group's `policy` keeps changing the gauges after an event.
fn policy_settles(policy: &crate::scenario::Policy) -> crate::engine::SimDuration {
    let breaker = policy.breaker.as_ref().map(|b| b.open_duration);
    let budget = match policy.budget.as_ref().map(|b| b.kind) {
        Some(crate::model::BudgetKind::Ratio { window, .. }) => Some(window),
        _ => None,
    };
    breaker
        .into_iter()
        .chain(budget)
        .max()
        .unwrap_or(crate::engine::SimDuration::ZERO)
}

/// Every edge's pool, in the order of `Sim::edges`.
fn edge_pools(sc: &Scenario) -> Vec<Option<EdgePool>> {
    let mut pools: Vec<Option<EdgePool>> = sc
        .client_policies()
        .map(|p| edge_pool(&sc.services[0].server, (None, None), p))
        .collect();
    for s in &sc.services {
        for call in &s.calls {
            pools.push(edge_pool(
                &sc.services[call.to].server,
                (call.balancer, call.sticky),
                &call.policy,
            ));
        }
    }
    pools
}

/// The pool of an edge to a service with `server`'s replicas, with the call's own `balancer`
/// and `sticky` where it has them, and its `policy`: `None` for a single replica.
fn edge_pool(
    server: &crate::scenario::Server,
    (balancer, sticky): (Option<crate::model::BalancerKind>, Option<bool>),
    policy: &crate::scenario::Policy,
) -> Option<EdgePool> {
    let pool = server.pool;
    (pool.replicas > 1).then(|| EdgePool {
        balancer: crate::model::Balancer::new(
            balancer.unwrap_or(pool.routing.balancer),
            pool.replicas,
        ),
        sticky: sticky.unwrap_or(pool.routing.sticky),
        previous_hosts: policy.retry.previous_hosts,
        sees_queue: pool.sees == crate::model::Sees::Queue,
        detector: pool
            .outlier
            .map(|o| crate::model::Detector::new(o, pool.replicas)),
    })
}

/// The key memory of a call that sends idempotency keys.
fn key_store(policy: &crate::scenario::Policy) -> Option<crate::model::KeyStore> {
    policy
        .idempotency_key
        .map(|k| crate::model::KeyStore::new(k.ttl))
}

/// One replication in progress: the assembled model and the engine, driven by the driver
/// built for the features `F` (see `features`).
struct Sim<'a, F: Features> {
    sc: &'a Scenario,
    /// The feature set this driver is built for.
    features: std::marker::PhantomData<F>,
    queue: EventQueue<Event>,
    rng: Draws,
    /// Logical calls, by slot: the clients' requests and the calls between services.
    calls: Calls,
    free_calls: Vec<u32>,
    /// Calls whose slot is in use (ended calls included until their attempts are all
    /// accounted for).
    live_slots: u64,
    /// In a call graph, by call slot: when the attempt its caller awaits reached its service,
    /// for the service to time its answer (empty for a single service, which keeps no
    /// series of its own).
    arrivals: Vec<SimTime>,
    /// Attempts holding a worker while their downstream calls run, by slot.
    works: Vec<Work>,
    free_works: Vec<u32>,
    /// The clients' logical requests in flight.
    in_flight: u64,
    /// The groups of clients: the first edges are theirs, one each, and a request's edge is
    /// its group.
    client_edges: u32,
    /// By group, the id of its first client (clients are numbered group after group).
    group_base: Vec<u32>,
    /// By group, what its clients do when a request ends.
    after_request: Vec<AfterRequest>,
    /// The arrival streams of the groups after the first (`model::streams::GROUP_ARRIVALS`);
    /// the first group's is `rng.arrivals`.
    group_rng: Vec<rand_pcg::Pcg64>,
    /// The id the next logical call gets (its idempotency key).
    next_call_id: u64,
    /// Whether some edge cancels abandoned hedge-race attempts (services check the queue).
    cancels: bool,
    /// The services' hosts: each service's first replica at its index (the entry first),
    /// then the other replicas of replicated services (`Sim::host`).
    services: Fixed<ServiceState>,
    /// By host, what it is.
    hosts: Vec<Host>,
    /// Per service, the host of its second replica (its others follow it).
    replica_base: Vec<u32>,
    /// By edge, the caller's balancer over the replicas of the service called, when it has
    /// more than one (kept beside the edges, which the hot path reads without it).
    pools: Vec<Option<EdgePool>>,
    /// By call slot, in a run with replicas: the replica the awaited attempt went to on an
    /// edge with a pool, or `NONE`.
    picked: Vec<u32>,
    /// By call slot, on edges with `previous_hosts`: the replicas the call has tried.
    tried: Vec<Vec<u32>>,
    /// Each replica's load over time, service by service, replica by replica (the order
    /// of `RunResult::replicas`): the attempts balancers send it, counted where they pick
    /// it (`Sim::pick_host`), and its queue and attempts in service at each bucket's end.
    /// Empty without replicas, so a run without them does no work for it.
    replica_series: Vec<TimeSeries>,
    /// Per service, where its replicas' series start in `replica_series`.
    replica_series_at: Vec<u32>,
    /// The groups' calls to the entry (one edge each); then each service's calls in order.
    edges: Fixed<Edge<'a>>,
    /// Per service, the index of its first edge in `edges` (its calls follow in order).
    first_edge: Vec<u32>,
    /// Whether the scenario has more than one service (or calls between services): the hot
    /// paths of a single service take shortcuts without it, and only then does each service
    /// keep a load series of its own (a single service's would be the main series').
    graph: bool,
    /// The entry's calls made by part of the requests (its routes), by edge.
    entry_routes: Vec<u32>,
    rec: Recorder,
    /// Requests each closed-workload client with `requests_per_client` still has to end
    /// (`AfterRequest::Count`); clients issuing until the duration keep no count, so that
    /// ending a request reads nothing of theirs but its call.
    remaining: Vec<u64>,
    end_of_arrivals: SimTime,
    /// Set when a backlog passes its limit; the loop stops after the event.
    overflow: Option<Truncation>,
    /// `Tuning::timers_on_arrival`.
    timers_on_arrival: bool,
    /// A single service called through passive policies (`CallPolicies::passive`) without
    /// idempotency keys: once it answers a failure the policy retries, and the answer reaches
    /// the caller before its timer fires, the caller's next steps depend on nothing that can
    /// happen in between, so they are settled where the service answers
    /// (`Sim::retry_at_once`): the answer needs no event, nor, when `departs_at_once`, the
    /// retry's departure. (On an `occ` row with no timeout or deadline a retry costs one
    /// event instead of four.)
    fold_retries: bool,
    /// The network's hop delays have no atom (`Dist::has_atom`): a settled retry's arrival
    /// at the service, scheduled at its answer rather than at its departure, cannot share an
    /// instant with another event, so where it stands among equal times cannot matter, and
    /// the departure needs no event. With constant hops (or none) it keeps its `RetryDue`
    /// event, which puts it among equal times where the evented path does.
    departs_at_once: bool,
    /// With `fold_retries` and `departs_at_once`: a request's successful answer that reaches
    /// its caller before the caller's timer fires ends the request there, whatever happens in
    /// between, so it is settled where the service answers (`Sim::succeed_at_once`) and
    /// needs no event. Its end is counted when the run reaches the instant
    /// (`Sim::reach`): until then the request is in flight.
    successes_at_once: bool,
    /// Some caller keeps an outlier detector (`EdgePool::detector`).
    detects: bool,
    /// The successful ends settled ahead that the run has not reached, earliest first.
    settled_ends: BinaryHeap<Reverse<SettledEnd>>,
    /// The last settled end the run has reached: with no event after it, the run's end.
    reached: SimTime,
    /// How long after an event the states of the main series can still change without
    /// another: a breaker opened by then closes `open_duration` later, a ratio budget's
    /// window empties `window` later, and a replica ejected then is let back within its
    /// longest ejection time and an interval; other budgets' levels do not move with time.
    gauges_settle: crate::engine::SimDuration,
}

/// The event loop's limits and its schedule for sweeping the queue.
struct Housekeeping {
    /// The end of simulated time the scenario allows, if it sets one.
    max_time: Option<SimTime>,
    /// The most events a run may handle.
    max_events: u64,
    /// The fewest pending events worth a sweep.
    compact_min: usize,
    /// Timers of answered attempts stay queued until they come up (and are dropped); with
    /// long timeouts they would pile up with finished work. When the queue doubles past this
    /// length, they are swept out.
    compact_at: usize,
}

impl<'a, F: Features> Sim<'a, F> {
    /// Assembles the model of `sc` for one replication.
    fn new(sc: &'a Scenario, seed: u64, replication: u64, tuning: Tuning) -> Self {
        let graph = sc.is_graph();
        let (hosts, replica_base) = Self::build_hosts(sc);
        let (replica_series, replica_series_at) = build_replica_series(sc);
        let services = Self::build_services(sc, &hosts, graph);
        let (edges, first_edge) = Self::build_edges(sc, tuning.dense_max);
        let cancels = edges.iter().any(|e| e.policies.cancels());
        // A balancer counts what its caller has out until the answer reaches it, so answers
        // to a pool travel as events.
        let fold_retries = !graph
            && sc.clients.len() == 1
            && edges[0].policies.passive()
            && edges[0].keys.is_none()
            && sc.services[0].server.pool.replicas == 1;
        let pools = edge_pools(sc);
        let detects = pools.iter().flatten().any(|p| p.detector.is_some());
        let entry_routes = (0..sc.services[0].calls.len() as u32)
            .map(|i| first_edge[0] + i)
            .filter(|&e| edges[e as usize].route.is_some())
            .collect();
        debug_assert!(F::GRAPH || !graph, "a graph needs the full driver");
        debug_assert!(
            F::POLICIES
                || edges
                    .iter()
                    .all(|e| e.policies.passive() && e.keys.is_none() && !e.tracks_executions),
            "active policies need the full driver"
        );
        let mut sim = Sim {
            sc,
            features: std::marker::PhantomData,
            entry_routes,
            queue: EventQueue::new(),
            rng: Draws::new(seed, replication),
            calls: Calls::default(),
            free_calls: Vec::new(),
            live_slots: 0,
            arrivals: Vec::new(),
            works: Vec::new(),
            free_works: Vec::new(),
            in_flight: 0,
            client_edges: sc.clients.len() as u32,
            group_base: sc
                .clients
                .iter()
                .scan(0u32, |next, g| {
                    let base = *next;
                    *next = next.saturating_add(g.count);
                    Some(base)
                })
                .collect(),
            after_request: Vec::new(),
            group_rng: (1..sc.clients.len() as u32)
                .map(|g| crate::model::streams::group_arrivals(seed, replication, g))
                .collect(),
            next_call_id: 0,
            cancels,
            services: Fixed::new(services),
            hosts,
            replica_base,
            pools,
            detects,
            picked: Vec::new(),
            tried: Vec::new(),
            replica_series,
            replica_series_at,
            edges: Fixed::new(edges),
            first_edge,
            graph,
            rec: Recorder::new(sc.bucket).with_groups(sc.clients.len()),
            remaining: Vec::new(),
            end_of_arrivals: SimTime::ZERO + sc.duration,
            overflow: None,
            timers_on_arrival: tuning.timers_on_arrival,
            fold_retries,
            departs_at_once: !sc.network.latency.has_atom(),
            successes_at_once: tuning.successes_at_once
                && fold_retries
                && !sc.network.latency.has_atom(),
            settled_ends: BinaryHeap::new(),
            reached: SimTime::ZERO,
            gauges_settle: gauges_settle(sc),
        };
        sim.schedule_first_events();
        sim
    }

    /// The hosts (see `Sim::services`) and where each service's second replica is among
    /// them.
    fn build_hosts(sc: &Scenario) -> (Vec<Host>, Vec<u32>) {
        let mut hosts: Vec<Host> = (0..sc.services.len())
            .map(|i| Host::new(&sc.services[i].server, i as u32, 0))
            .collect();
        let mut base = Vec::with_capacity(sc.services.len());
        for (i, s) in sc.services.iter().enumerate() {
            base.push(hosts.len() as u32);
            for k in 1..s.server.pool.replicas {
                hosts.push(Host::new(&s.server, i as u32, k));
            }
        }
        (hosts, base)
    }

    /// The hosts' states; in a graph each service's first keeps the service's time series.
    fn build_services(sc: &Scenario, hosts: &[Host], graph: bool) -> Vec<ServiceState> {
        hosts
            .iter()
            .enumerate()
            .map(|(h, host)| {
                let first = h < sc.services.len();
                let series = (graph && first).then(|| TimeSeries::new(sc.bucket));
                ServiceState::new(&sc.services[host.service as usize].server, host, series)
            })
            .collect()
    }

    /// The call edges with their policies: the clients' edge into the entry service first, then
    /// each service's calls in order. Also returns where each service's calls start among them.
    fn build_edges(sc: &'a Scenario, dense_max: usize) -> (Vec<Edge<'a>>, Vec<u32>) {
        let clients = sc.clients.iter().map(|g| g.count).max().unwrap_or(1);
        let tracks = |p: &crate::scenario::Policy| !p.idempotent || p.idempotency_key.is_some();
        let mut edges = Vec::with_capacity(sc.clients.len());
        let mut base = 0u32;
        for g in &sc.clients {
            let p = sc.group_policy(g);
            edges.push(Edge {
                to: 0,
                route: None,
                propagate_deadline: false,
                timeout: p.timeout,
                folds_reads: folds_reads(&sc.services[0].server, p),
                tracks_executions: tracks(p),
                keys: key_store(p),
                policies: CallPolicies::new(p, true, g.count, dense_max).with_first_client(base),
                counters: CallCounters::default(),
            });
            base = base.saturating_add(g.count);
        }
        let mut first_edge = Vec::with_capacity(sc.services.len());
        for s in &sc.services {
            first_edge.push(edges.len() as u32);
            let mut from = 0.0;
            for call in &s.calls {
                let route = (call.fraction < 1.0).then(|| {
                    let slice = (from, from + call.fraction);
                    from += call.fraction;
                    slice
                });
                edges.push(Edge {
                    to: call.to as u32,
                    route,
                    propagate_deadline: call.policy.propagate_deadline,
                    timeout: call.policy.timeout,
                    folds_reads: folds_reads(&sc.services[call.to].server, &call.policy),
                    tracks_executions: tracks(&call.policy),
                    keys: key_store(&call.policy),
                    policies: CallPolicies::new(&call.policy, false, clients, dense_max),
                    counters: CallCounters::default(),
                });
            }
        }
        (edges, first_edge)
    }

    /// Queues what starts the run: the faults' later concurrency changes, then the first
    /// arrival of an open workload or every closed client's first request.
    fn schedule_first_events(&mut self) {
        let sc = self.sc;
        for (h, host) in self.hosts.iter().enumerate() {
            for edge in host.faults.concurrency_edges() {
                if edge > SimTime::ZERO {
                    self.queue
                        .schedule(edge, Event::FaultEdge { host: h as u32 });
                }
            }
        }
        for (g, group) in sc.clients.iter().enumerate() {
            let (base, g) = (self.group_base[g], g as u32);
            match &group.workload {
                Workload::Open(profile) => {
                    if let Some(t) = profile.next_arrival(SimTime::ZERO, self.arrivals(g))
                        && t < self.end_of_arrivals
                    {
                        self.schedule_arrival(t, g);
                    }
                    self.after_request.push(AfterRequest::Nothing);
                }
                Workload::Closed(closed) => {
                    self.after_request.push(match closed.requests_per_client {
                        None => AfterRequest::Think,
                        Some(k) => {
                            let base = self.remaining.len() as u32;
                            self.remaining
                                .extend(std::iter::repeat_n(k, group.count as usize));
                            AfterRequest::Count { base }
                        }
                    });
                    for client in base..base + group.count {
                        let at = SimTime::ZERO + closed.start.sample(self.arrivals(g));
                        self.queue
                            .schedule(at, Event::ClientReady { client, group: g });
                    }
                }
            }
        }
    }

    /// The stream of group `group`'s arrivals, client choices, think times and request
    /// classes.
    #[inline(always)]
    fn arrivals(&mut self, group: u32) -> &mut rand_pcg::Pcg64 {
        if group == 0 {
            &mut self.rng.arrivals
        } else {
            &mut self.group_rng[group as usize - 1]
        }
    }

    /// Schedules group `group`'s next arrival at `t`: the first group's as the queue's one
    /// chained event (each arrival schedules the next), the others' as any event.
    #[inline(always)]
    fn schedule_arrival(&mut self, t: SimTime, group: u32) {
        if group == 0 {
            self.queue.schedule_chained(t, Event::Arrival { group });
        } else {
            self.queue.schedule(t, Event::Arrival { group });
        }
    }

    /// The event loop, sweeping stale timers out of a queue of more than `compact_min`
    /// pending events. Returns why it stopped early, if it did.
    fn run(&mut self, compact_min: usize) -> Option<Truncation> {
        let mut hk = Housekeeping {
            max_time: self.sc.max_time.map(|d| SimTime::ZERO + d),
            max_events: self.sc.limits.max_events,
            compact_min,
            compact_at: compact_min,
        };
        // The time of the last event handled, for a run that reaches the end of time.
        let mut last = self.queue.now();
        loop {
            let calls = &self.calls;
            let Some((now, event)) = self.queue.pop_skipping(|e| stale(calls, e)) else {
                // The successful ends settled ahead are the run's last instants.
                let end = hk.max_time.unwrap_or(SimTime(u64::MAX - 1));
                self.reach_until(last, (end, Ticket::LAST));
                return match (self.settled_ends.is_empty(), self.sc.max_time) {
                    (false, Some(at)) => Some(Truncation::MaxTime {
                        at,
                        in_flight: self.in_flight,
                    }),
                    _ => None,
                };
            };
            if let Some(t) = self.housekeep(&mut hk, now, last) {
                return Some(t);
            }
            last = now;
            match event {
                Event::Arrival { group } => {
                    // One group in a build without groups: its index is a constant.
                    let group = if F::GROUPS { group } else { 0 };
                    if let Some(t) = self.arrival(group, now) {
                        return Some(t);
                    }
                }
                Event::ClientReady { client, group } => {
                    let group = if F::GROUPS { group } else { 0 };
                    if now < self.end_of_arrivals
                        && let Some(t) = self.start_request(client, group, now)
                    {
                        return Some(t);
                    }
                }
                Event::RetryDue { slot } => self.retry_due(slot, now),
                Event::ServerArrival { slot, token } => {
                    let host = self.target(slot);
                    self.server_arrival(slot, token, host, now);
                    self.arm_timer(slot, token);
                }
                Event::ServiceDone { slot, token } => {
                    let host = self.target(slot);
                    self.service_done(slot, token, host, now);
                }
                Event::ReplicaArrival { slot, token, host } => {
                    self.replica_arrival(slot, token, host as usize, now);
                }
                Event::ReplicaDone { slot, token, host } => {
                    self.replica_done(slot, token, host as usize, now);
                }
                Event::OccWrite { slot, token, read } => self.occ_write(slot, token, read, now),
                Event::Reply {
                    slot,
                    token,
                    outcome,
                } => self.reply_arrived(slot, token, outcome, now),
                Event::AttemptTimer { slot, token } => self.attempt_timer(slot, token, now),
                Event::BulkheadTimer { slot, token } => self.bulkhead_timer(slot, token, now),
                Event::TokenDue { slot, token } => self.token_due(slot, token, now),
                Event::FallbackDone { slot } => self.finish_call(slot, Outcome::Degraded, now),
                Event::FaultEdge { host } => self.fault_edge(host as usize, now),
                Event::HedgeDue { slot, token } => self.hedge_due(slot, token, now),
            }
            if self.overflow.is_some() {
                return self.overflow.take();
            }
        }
    }

    /// The next request of group `group`'s open workload arrives now: the one after it is
    /// scheduled, and a client of the group, drawn uniformly, starts it.
    #[inline(always)]
    fn arrival(&mut self, group: u32, now: SimTime) -> Option<Truncation> {
        let sc = self.sc;
        let g = &sc.clients[group as usize];
        let Workload::Open(profile) = &g.workload else {
            unreachable!("arrivals belong to open workloads")
        };
        if let Some(next) = profile.next_arrival(now, self.arrivals(group))
            && next < self.end_of_arrivals
        {
            self.schedule_arrival(next, group);
        }
        let client = rand::RngExt::random_range(self.arrivals(group), 0..g.count);
        self.start_request(self.group_base[group as usize] + client, group, now)
    }

    /// An attempt reaches replica `host` of a replicated service, not its first: kept out of
    /// line, so that the loop's one call of `server_arrival` for every other service is
    /// inlined as it was before replicas (a build without replicas never gets here).
    #[inline(never)]
    fn replica_arrival(&mut self, slot: u32, token: u32, host: usize, now: SimTime) {
        if F::REPLICAS {
            self.server_arrival(slot, token, host, now);
            self.arm_timer(slot, token);
        }
    }

    /// Replica `host` of a replicated service, not its first, finishes an attempt's service
    /// time (out of line, as `replica_arrival`).
    #[inline(never)]
    fn replica_done(&mut self, slot: u32, token: u32, host: usize, now: SimTime) {
        if F::REPLICAS {
            self.service_done(slot, token, host, now);
        }
    }

    /// The loop's work before handling the event popped at `now`, the first since `last`:
    /// sweeping stale timers, noting the queue's length, stopping at a limit, and recording
    /// the buckets that have ended. Returns why the run stops, if it does. It is inlined
    /// because it runs once per event.
    #[inline(always)]
    fn housekeep(
        &mut self,
        hk: &mut Housekeeping,
        now: SimTime,
        last: SimTime,
    ) -> Option<Truncation> {
        let pending = self.queue.len();
        if pending > hk.compact_at {
            let calls = &self.calls;
            self.queue.retain(|e| !stale(calls, e));
            hk.compact_at = (2 * self.queue.len()).max(hk.compact_min);
        }
        self.rec.counters.max_pending = self.rec.counters.max_pending.max(pending as u64);
        if let Some(m) = hk.max_time
            && now > m
        {
            self.reach_until(last, (m, Ticket::LAST));
            return Some(Truncation::MaxTime {
                at: self.sc.max_time.expect("checked"),
                in_flight: self.in_flight,
            });
        }
        if now == SimTime::NEVER {
            // An instant past the end of simulated time: nothing happens there, so an
            // event due then ends the run.
            let at = self.reach_until(last, (SimTime(u64::MAX - 1), Ticket::LAST));
            return Some(Truncation::EndOfTime {
                at,
                in_flight: self.in_flight,
            });
        }
        if self.queue.events_processed() > hk.max_events {
            self.reach_until(last, self.queue.current());
            return Some(Truncation::MaxEvents {
                limit: hk.max_events,
                at: now,
            });
        }
        if now >= self.rec.series.next_boundary() {
            self.tick(last, now);
        }
        None
    }

    /// One or more time-series buckets have ended by `now`, the first event since `last`:
    /// every series records the states at each one's end. Nothing has happened since `last`,
    /// so the states are those it left, with the budgets' levels and the breakers' timers read
    /// at the bucket's end (not at `now`, which may lie well past it). From `gauges_settle`
    /// after `last` on they no longer change, and the rest of the buckets get one reading: a
    /// quiet stretch costs no more readings than a busy one of `gauges_settle`.
    #[cold]
    fn tick(&mut self, last: SimTime, now: SimTime) {
        let settled = last + self.gauges_settle;
        while now >= self.rec.series.next_boundary() {
            let end = self.rec.series.next_boundary();
            // Successes settled for instants before the boundary have happened.
            self.reach((end, Ticket::FIRST));
            if F::REPLICAS && self.detects {
                self.detectors_reach(end);
            }
            let gauges = self.gauges(end);
            if end >= settled && self.settled_ends.peek().is_none_or(|e| e.0.answered >= now) {
                self.rec.series.tick(now, || gauges);
                break;
            }
            self.rec.series.tick(end, || gauges);
        }
        // Only a graph's services keep series of their own.
        let graphed = if F::GRAPH { self.sc.services.len() } else { 0 };
        for i in 0..graphed {
            let (queue_len, in_service) = self.service_load(i);
            if let Some(series) = &mut self.services[i].series {
                series.tick(now, || Gauges {
                    queue_len,
                    in_service,
                    ..Gauges::default()
                });
            }
        }
        if F::REPLICAS && !self.replica_series.is_empty() {
            self.tick_replicas(|series, load| {
                series.tick(now, || Gauges {
                    queue_len: load.0,
                    in_service: load.1,
                    ..Gauges::default()
                });
            });
        }
    }

    /// Calls `f` with each replica's series and its load (waiting, holding a worker), in
    /// the order of `Sim::replica_series`.
    #[cold]
    fn tick_replicas(&mut self, mut f: impl FnMut(&mut TimeSeries, (u32, u32))) {
        for (s, spec) in self.sc.services.iter().enumerate() {
            let n = spec.server.pool.replicas;
            if n < 2 {
                continue;
            }
            let at = self.replica_series_at[s] as usize;
            for k in 0..n {
                let load = self.services[self.host(s, k)].load();
                f(&mut self.replica_series[at + k as usize], load);
            }
        }
    }

    /// Counts the successes settled ahead (`Sim::succeed_at_once`) whose answers' events
    /// would have come up before `until` (an instant and a place among its events): the run
    /// has reached them, and their requests are no longer in flight.
    #[inline(always)]
    fn reach(&mut self, until: (SimTime, Ticket)) {
        while let Some(&Reverse(end)) = self.settled_ends.peek()
            && (end.answered, end.place) < until
        {
            self.settled_ends.pop();
            self.reach_one(end);
        }
    }

    /// Counts one success settled ahead.
    #[inline(always)]
    fn reach_one(&mut self, end: SettledEnd) {
        self.in_flight -= 1;
        self.reached = end.answered;
        self.edges[0].counters.succeeded += 1;
        self.rec.attempt_ended_at(Outcome::Success, end.answered);
        self.rec
            .request_succeeded_at(end.answered - end.start, end.answered);
    }

    /// The run, whose last event was at `last`, goes on with no event but the successes
    /// settled ahead whose answers' events would have come up before `until`: each is
    /// counted at its instant, after the time series moves to it, as its answer's event
    /// would be. Returns the later of `last` and the last instant reached.
    #[cold]
    fn reach_until(&mut self, mut last: SimTime, until: (SimTime, Ticket)) -> SimTime {
        while let Some(&Reverse(end)) = self.settled_ends.peek()
            && (end.answered, end.place) < until
        {
            if end.answered >= self.rec.series.next_boundary() {
                // Reaches only the ends before the bucket's boundary, none of them `end`.
                self.tick(last, end.answered);
            }
            self.settled_ends.pop();
            self.reach_one(end);
            // An end may lie before the last event: the run reaches ends lazily.
            last = last.max(end.answered);
        }
        last
    }

    /// The states the main time series samples at the end of a bucket: the entry service's
    /// load and the clients' requests and policies.
    fn gauges(&self, now: SimTime) -> Gauges {
        let (queue_len, in_service) = self.service_load(0);
        // Every group's budgets and breakers: the mean level and how many are open.
        let (mut total, mut count, mut breakers_open) = (0.0, 0usize, 0usize);
        for edge in &self.edges.as_slice()[..self.client_edges as usize] {
            let policies = &edge.policies;
            if let Some(budgets) = &policies.budgets {
                let mut level: f64 = budgets.touched().map(|b| b.level(now)).sum();
                let untouched = budgets.untouched();
                if untouched > 0 {
                    level += untouched as f64 * budgets.fresh.level(now);
                }
                total += level;
                count += budgets.count;
            }
            // A fresh breaker is closed.
            breakers_open += policies.breakers.as_ref().map_or(0, |breakers| {
                breakers.touched().filter(|b| b.is_open(now)).count()
            });
        }
        let budget_level_ppm = if count > 0 {
            (total / count as f64 * 1e6).round() as u32
        } else {
            0
        };
        Gauges {
            queue_len,
            in_service,
            in_flight: self.in_flight.min(u64::from(u32::MAX)) as u32,
            breakers_open: breakers_open.min(u32::MAX as usize) as u32,
            budget_level_ppm,
            ejected: if F::REPLICAS { self.ejected_now() } else { 0 },
        }
    }

    /// Counts `col` in the series of the service of host `h` (and in the main series for
    /// the entry).
    #[inline(always)]
    fn tally(&mut self, h: usize, col: Column) {
        let service = self.spec(h);
        if service == 0 {
            self.rec.series.add(col);
        }
        if F::GRAPH
            && self.graph
            && let Some(series) = &mut self.services[service].series
        {
            series.add(col);
        }
    }

    /// Counts `a` and `b` in the series of the service of host `h` (and in the main series
    /// for the entry), finding each row once.
    #[inline(always)]
    fn tally_pair(&mut self, h: usize, a: Column, b: Column) {
        let service = self.spec(h);
        if service == 0 {
            self.rec.series.add_pair(a, b);
        }
        if F::GRAPH
            && self.graph
            && let Some(series) = &mut self.services[service].series
        {
            series.add_pair(a, b);
        }
    }

    /// Settles what a truncated run had ahead of it: a run that reached the end of time
    /// handled every event before it, and one stopped at an event handled those before it.
    fn settle_stop(&mut self, truncated: Option<Truncation>) -> Option<Truncation> {
        // A run that reached the end of time handled every event before it: the steps
        // settled ahead at any instant before the end all happened, though no event stood
        // for them, and the last of them may be the run's last instant.
        let truncated = match truncated {
            Some(Truncation::EndOfTime { at, in_flight }) => {
                let mut last = at;
                for call in self.calls.iter_mut() {
                    if let Some(ahead) = call.ahead.take() {
                        last = last.max(ahead.count(&mut self.rec, SimTime(u64::MAX - 1)));
                    }
                }
                Some(Truncation::EndOfTime {
                    at: last,
                    in_flight,
                })
            }
            t => t,
        };
        if let Some(
            Truncation::MaxInFlight { at, .. }
            | Truncation::ServerBacklog { at, .. }
            | Truncation::KeysHeld { at, .. },
        ) = truncated
        {
            // Stopped at an event: the successes settled to come up before it happened.
            self.reach_until(at, self.queue.current());
        }
        truncated
    }

    fn finish(mut self, truncated: Option<Truncation>) -> RunResult {
        let truncated = self.settle_stop(truncated);
        let end_time = {
            let clock = self.queue.now().max(self.reached);
            let c = &mut self.rec.counters;
            c.events = self.queue.events_processed();
            // A run cut off at max_time ends there, not at the first event it did not
            // process.
            c.end_time = match (&truncated, self.sc.max_time) {
                (Some(Truncation::EndOfTime { at, .. }), _) => *at,
                (Some(Truncation::MaxTime { at, .. }), _) => SimTime::ZERO + *at,
                (_, Some(m)) => clock.min(SimTime::ZERO + m),
                (_, None) => clock,
            };
            c.end_time
        };
        // A run that stopped at a limit with nothing in flight lost nothing: not truncated.
        let truncated = match truncated {
            Some(Truncation::MaxTime { in_flight: 0, .. }) => None,
            t => t,
        };
        if F::REPLICAS {
            self.count_ejections(end_time);
        }
        let loads: Vec<(u32, u32)> = (0..self.services.len())
            .map(|h| {
                let s = self.spec(h);
                if h == s { self.service_load(s) } else { (0, 0) }
            })
            .collect();
        for (s, load) in self.services.iter_mut().zip(loads) {
            s.close(end_time, truncated.is_some(), load);
        }
        self.tick_replicas(|series, (queue_len, in_service)| {
            series.close(Gauges {
                queue_len,
                in_service,
                ..Gauges::default()
            });
        });
        let groups = self.client_edges as usize;
        self.count_client_policies(end_time);
        // Steps settled ahead for instants the run reached are counted; a run cut off
        // earlier never got to the rest.
        for call in self.calls.iter_mut() {
            if let Some(ahead) = call.ahead.take() {
                ahead.count(&mut self.rec, end_time);
            }
        }
        let gauges = self.gauges(end_time);
        self.rec.series.close(gauges);
        // The first edges are the groups' calls to the entry, counted in the recorder's
        // counters; the others are calls between services.
        for edge in &mut self.edges.as_mut_slice()[groups..] {
            edge.policies.count_into(&mut edge.counters);
        }
        let calls = self
            .edges
            .into_vec()
            .drain(groups..)
            .map(|e| e.counters)
            .collect();
        let count = self.sc.services.len();
        let (hosts, service_series) = self
            .services
            .into_vec()
            .into_iter()
            .map(|s| s.into_results())
            .unzip::<_, _, Vec<_>, Vec<_>>();
        // Only a graph keeps per-service series (see `RunResult::service_series`).
        let service_series = service_series.into_iter().flatten().collect();
        let (services, replicas) = by_service(self.sc, &self.replica_base, hosts, count);
        let mut result = self.rec.finish(truncated, services, calls, service_series);
        result.replicas = replicas;
        result.replica_series = self.replica_series;
        result
    }

    /// The clients' breakers and hedges, counted into the recorder's counters.
    fn count_client_policies(&mut self, end_time: SimTime) {
        let groups = self.client_edges as usize;
        let c = &mut self.rec.counters;
        for edge in &self.edges.as_slice()[..groups] {
            let policies = &edge.policies;
            // A fresh breaker never refused, changed state or opened.
            c.breakers += policies.breakers.as_ref().map_or(0, |b| b.count as u64);
            c.hedges_denied += policies.hedges_denied();
            let (waits, waited) = policies.token_waits();
            c.token_waits += waits;
            c.token_wait_nanos += waited;
            for b in policies.breakers.iter().flat_map(|b| b.touched()) {
                c.breaker_refusals += b.refusals;
                c.breaker_transitions += b.transitions;
                c.breaker_openings += b.openings;
                c.breaker_open_nanos += b.time_open(end_time);
            }
        }
    }
}

/// An empty load series for each replica of every service with more than one (service by
/// service, replica by replica), and per service where its replicas' start among them.
fn build_replica_series(sc: &Scenario) -> (Vec<TimeSeries>, Vec<u32>) {
    let mut at = Vec::with_capacity(sc.services.len());
    let mut n = 0;
    for s in &sc.services {
        at.push(n);
        if s.server.pool.replicas > 1 {
            n += s.server.pool.replicas;
        }
    }
    let series = (0..n).map(|_| TimeSeries::new(sc.bucket)).collect();
    (series, at)
}

impl<F: Features> Sim<'_, F> {
    /// Brings every caller's outlier detector up to `now` (`model::outlier`: its ticks are
    /// not events), and its balancer's eligible replicas with it.
    fn detectors_reach(&mut self, now: SimTime) {
        for pool in self.pools.iter_mut().flatten() {
            if let Some(d) = &mut pool.detector
                && d.advance(now)
            {
                pool.balancer.set_eligible(d.eligible());
            }
        }
    }

    /// Replicas ejected now, every caller's detector's added up.
    fn ejected_now(&self) -> u32 {
        self.pools
            .iter()
            .flatten()
            .filter_map(|p| p.detector.as_ref())
            .map(|d| d.ejected())
            .sum()
    }

    /// Adds each caller's ejections of each replica, up to `end`, to the replica's counts.
    #[cold]
    fn count_ejections(&mut self, end: SimTime) {
        self.detectors_reach(end);
        for edge in 0..self.pools.len() {
            let Some(d) = self.pools[edge].as_ref().and_then(|p| p.detector.as_ref()) else {
                continue;
            };
            let to = self.edges[edge].to as usize;
            let ejections: Vec<_> = d.ejections(end).collect();
            for (k, e) in ejections.into_iter().enumerate() {
                let h = self.host(to, k as u32);
                let c = &mut self.services[h].counters;
                c.ejections += e.count;
                c.ejected_nanos += e.nanos;
            }
        }
    }
}

/// The counts of each service (every replica's added up) and of each replica of a
/// replicated service (service by service, replica by replica), from the counts of the
/// `hosts` (`Sim::services`, of which the first `count` are each service's first replica).
fn by_service(
    sc: &Scenario,
    base: &[u32],
    mut hosts: Vec<crate::metrics::ServiceCounters>,
    count: usize,
) -> (
    Vec<crate::metrics::ServiceCounters>,
    Vec<crate::metrics::ServiceCounters>,
) {
    let mut replicas = Vec::new();
    for (s, spec) in sc.services.iter().enumerate() {
        let n = spec.server.pool.replicas as usize;
        if n > 1 {
            let first = base[s] as usize;
            replicas.push(hosts[s].clone());
            replicas.extend_from_slice(&hosts[first..first + n - 1]);
            let (head, tail) = hosts.split_at_mut(count);
            for other in &tail[first - count..first - count + n - 1] {
                head[s].add(other);
            }
        }
    }
    hosts.truncate(count);
    (hosts, replicas)
}

#[cfg(test)]
mod tests;
