//! `server` (and the server settings of each service of `services`), in one place: the raw
//! settings a scenario file writes, the checked [`Server`] the simulation takes, the rules and
//! defaults between them (validation writes the defaults back into the raw settings) and the
//! words report.md says of a server. Each setting with rules of its own has its file here:
//! the waiting room's `discipline`, the `rate_limit`, the `faults`, the pool's `balancer` and
//! its `outlier_detection`. The server itself is
//! `crate::model::server`.

pub mod balancer;
pub mod discipline;
pub mod faults;
pub mod outlier;
pub mod rate_limit;

use std::fmt::Write as _;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::engine::SimDuration;
use crate::model::{Dist, Faults, QueueConfig, RateLimit};
use crate::scenario::RetryAfter;
use crate::scenario::check::{Checker, written};
use crate::scenario::phrase::words;
use crate::scenario::schema::{Count, RawServer};

/// The largest `server.slowdown_per_inflight` (it is added once per attempt in service).
pub const MAX_SLOWDOWN: SimDuration = SimDuration::from_secs(10);

/// `server.kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RawServerKind {
    /// Workers with a waiting room.
    Queue,
    /// One database row with optimistic concurrency control.
    Occ,
}

/// `server`.
#[derive(Debug, Clone)]
pub struct Server {
    /// What kind of server, with its settings.
    pub kind: ServerKind,
    /// Probability that a logical request is bad (every attempt ends `permanent`).
    pub permanent_error_rate: f64,
    /// Fault windows (queue servers only; empty otherwise).
    pub faults: Faults,
    /// The admission rate limit (queue servers only).
    pub rate_limit: Option<RateLimit>,
    /// Its replicas and how callers spread attempts over them (one replica for an `occ`
    /// row).
    pub pool: balancer::Pool,
}

/// The server kinds.
#[derive(Debug, Clone)]
pub enum ServerKind {
    /// Workers with a waiting room.
    Queue(QueueConfig),
    /// One row written with optimistic concurrency control.
    Occ,
}

/// The server `at` (`server`, or `services.<name>` for a service) describes; `duration` is
/// the scenario's, which a fault window must start before.
pub(in crate::scenario) fn check(
    c: &mut Checker,
    at: &str,
    raw: &mut RawServer,
    duration: Option<SimDuration>,
) -> Server {
    let permanent_error_rate = c.probability(
        &format!("{at}.permanent_error_rate"),
        raw.permanent_error_rate,
    );
    raw.permanent_error_rate = Some(permanent_error_rate);
    if raw.kind == Some(RawServerKind::Occ) {
        refuse_queue_settings(c, at, raw);
        return Server {
            kind: ServerKind::Occ,
            permanent_error_rate,
            faults: Faults::default(),
            rate_limit: None,
            pool: balancer::Pool::SINGLE,
        };
    }
    raw.kind = Some(RawServerKind::Queue);
    let concurrency = match *raw.concurrency.get_or_insert(Count::Finite(1)) {
        Count::Unlimited(_) => None,
        Count::Finite(n) => Some(c.count_u32(&format!("{at}.concurrency"), n, 1)),
    };
    let queue_limit = match *raw.queue_limit.get_or_insert(Count::UNLIMITED) {
        Count::Unlimited(_) => None,
        Count::Finite(n) => Some(c.count_u32(&format!("{at}.queue_limit"), n, 0)),
    };
    let service_time = match &raw.service_time {
        Some(d) => c.dist(&format!("{at}.service_time"), d),
        None => {
            c.err(
                &format!("{at}.service_time"),
                "is required for a queue server, e.g. {\"exponential\": {\"mean\": \"10ms\"}}",
            );
            Dist::ZERO
        }
    };
    let slowdown_per_inflight = raw
        .slowdown_per_inflight
        .get_or_insert_with(|| written(SimDuration::ZERO));
    let slowdown_per_inflight = c
        .duration(
            &format!("{at}.slowdown_per_inflight"),
            slowdown_per_inflight,
        )
        .unwrap_or_default();
    if slowdown_per_inflight > MAX_SLOWDOWN {
        c.err(
            &format!("{at}.slowdown_per_inflight"),
            format!(
                "must be at most 10s (got {slowdown_per_inflight}): it is added once for every attempt in service, so a longer one would run simulated time out"
            ),
        );
    }
    let pool = pool(c, at, raw);
    Server {
        kind: ServerKind::Queue(QueueConfig {
            concurrency,
            queue_limit,
            discipline: discipline::check(c, &format!("{at}.discipline"), &mut raw.discipline),
            service_time,
            slowdown_per_inflight,
            error_rate: *raw
                .error_rate
                .insert(c.probability(&format!("{at}.error_rate"), raw.error_rate)),
            drop_expired: *raw.drop_expired.get_or_insert(false),
        }),
        permanent_error_rate,
        faults: faults::check(
            c,
            at,
            raw.faults.as_deref().unwrap_or_default(),
            duration,
            pool.replicas,
        ),
        rate_limit: raw.rate_limit.as_ref().map(|r| rate_limit::check(c, at, r)),
        pool,
    }
}

/// An occ server is one row: every setting of a queue server is an error on it.
fn refuse_queue_settings(c: &mut Checker, at: &str, raw: &RawServer) {
    let queue_only = [
        ("concurrency", raw.concurrency.is_some()),
        ("queue_limit", raw.queue_limit.is_some()),
        ("discipline", raw.discipline.is_some()),
        ("service_time", raw.service_time.is_some()),
        ("slowdown_per_inflight", raw.slowdown_per_inflight.is_some()),
        ("error_rate", raw.error_rate.is_some()),
        ("drop_expired", raw.drop_expired.is_some()),
        ("rate_limit", raw.rate_limit.is_some()),
        ("faults", raw.faults.as_ref().is_some_and(|f| !f.is_empty())),
        ("replicas", raw.replicas.is_some_and(|n| n != 1)),
        ("balancer", raw.balancer.is_some()),
        ("sticky", raw.sticky.is_some()),
        ("balancer_sees", raw.balancer_sees.is_some()),
        ("outlier_detection", raw.outlier_detection.is_some()),
    ];
    for (key, _) in queue_only.iter().filter(|(_, set)| *set) {
        c.err(
            &format!("{at}.{key}"),
            "applies to a queue server only; an occ server is one row whose reads are instant and whose writes conflict",
        );
    }
}

/// The pool of the queue server at `at`: its `replicas`, their `balancer` and `sticky`, and
/// its callers' `outlier_detection`.
fn pool(c: &mut Checker, at: &str, raw: &mut RawServer) -> balancer::Pool {
    let replicas = balancer::replicas(c, at, raw.replicas);
    let routing = balancer::routing(
        c,
        at,
        (&mut raw.balancer, &mut raw.sticky),
        replicas,
        balancer::Pool::SINGLE.routing,
    );
    balancer::Pool {
        replicas,
        routing,
        sees: balancer::sees(&mut raw.balancer_sees, replicas),
        outlier: outlier::check(c, at, raw.outlier_detection.as_mut(), replicas),
    }
}

/// A server in words, one sentence per part: `who` is `None` for the one server of a
/// single-server scenario (the words it always had), else a call graph's service in bold.
/// `retry_after` is the clients' setting when they are the only callers.
pub(in crate::scenario) fn lines(
    server: &Server,
    retry_after: Option<RetryAfter>,
    who: Option<&str>,
) -> Vec<String> {
    let name = who.map_or("Server".to_string(), |w| format!("Service {w}"));
    let mut lines = vec![match &server.kind {
        ServerKind::Queue(q) => queue_line(q, &name, &balancer::phrase(&server.pool)),
        ServerKind::Occ => format!(
            "{name}: one database row written with optimistic concurrency control; a write that finds the row changed since its read conflicts."
        ),
    }];
    if server.permanent_error_rate > 0.0 {
        lines.push(format!(
            "{}{} % of requests are bad (4xx) and never retried.",
            who.map_or(String::new(), |w| format!("At {w}, ")),
            100.0 * server.permanent_error_rate
        ));
    }
    if let Some(r) = &server.rate_limit {
        lines.push(rate_limit::sentence(r, retry_after, who));
    }
    if let Some(o) = &server.pool.outlier {
        lines.push(outlier::sentence(o, who));
    }
    lines.extend(
        server
            .faults
            .windows()
            .iter()
            .map(|f| faults::sentence(f, who)),
    );
    lines
}

/// A queueing server in one sentence: its workers, waiting room and order, service time and
/// what can go wrong in service.
fn queue_line(q: &QueueConfig, name: &str, pool: &str) -> String {
    let workers = q.concurrency.map_or("unlimited workers".to_string(), |c| {
        format!("{c} worker{}", if c == 1 { "" } else { "s" })
    });
    let room = q
        .queue_limit
        .map_or("an unlimited waiting room".to_string(), |l| {
            format!("{l} waiting places")
        });
    let order = discipline::phrase(&q.discipline);
    let pool = if pool.is_empty() {
        String::new()
    } else {
        format!("{pool} ")
    };
    let mut line = format!(
        "{name}: {pool}{workers} with {room}{order}; service takes {}",
        words(&q.service_time)
    );
    if q.slowdown_per_inflight > SimDuration::ZERO {
        let _ = write!(
            line,
            " plus {} per attempt already in service",
            q.slowdown_per_inflight
        );
    }
    if q.error_rate > 0.0 {
        let _ = write!(line, "; {} % of served attempts fail", 100.0 * q.error_rate);
    }
    if q.drop_expired {
        line.push_str("; attempts whose client gave up are dropped unserved");
    }
    line.push('.');
    line
}
