//! The feature sets the driver is compiled for: one driver, specialised by the compiler.
//!
//! `Sim` takes a [`Features`] type whose constants say which parts of the model a scenario
//! can use. Each check of the hot path that asks about such a part asks the constant first,
//! so in a build for fewer features the compiler removes the branch and what it guards; in
//! the full build ([`Full`]) every constant is true and each check is the run-time one it
//! always was. The set a run takes is chosen when it is assembled ([`Lean::fits`]), with
//! [`Full`] for every scenario that uses more. The two builds are the same code, so they give
//! the same results; `sim/tests.rs` runs every bundled scenario both ways and compares them.

use crate::scenario::{Policy, Scenario};

/// Which parts of the model a build of the driver can run.
pub(super) trait Features {
    /// More than one service: routes, per-service series, work that makes calls.
    const GRAPH: bool;
    /// Call policies that admit, learn, limit or remember: a budget, breaker, bulkhead,
    /// hedging, adaptive throttle, fallback, idempotency keys or counted executions
    /// (`idempotent: false`).
    const POLICIES: bool;
    /// Services with fault windows or a rate limit.
    const FAULTS: bool;
    /// Services run as pools of replicas behind their callers' balancers.
    const REPLICAS: bool;
    /// Clients in more than one group, each with its own arrivals and policy.
    const GROUPS: bool;
}

/// Every feature: runs any scenario.
pub(super) struct Full;

impl Features for Full {
    const GRAPH: bool = true;
    const POLICIES: bool = true;
    const FAULTS: bool = true;
    const REPLICAS: bool = true;
    const GROUPS: bool = true;
}

/// A single service of one replica without faults or a rate limit, called by one group of
/// clients through a passive policy (retries, backoff, timeout and deadline only): the
/// storms of the benchmarks.
pub(super) struct Lean;

impl Features for Lean {
    const GRAPH: bool = false;
    const POLICIES: bool = false;
    const FAULTS: bool = false;
    const REPLICAS: bool = false;
    const GROUPS: bool = false;
}

impl Lean {
    /// Whether `sc` uses nothing but what [`Lean`] runs.
    pub fn fits(sc: &Scenario) -> bool {
        let server = &sc.services[0].server;
        !sc.is_graph()
            && sc.clients.len() == 1
            && passive(&sc.policy)
            && server.faults.is_empty()
            && server.rate_limit.is_none()
            && server.pool.replicas == 1
    }
}

/// Whether `policy` only retries: what `CallPolicies::passive` says of its policies, and no
/// fallback, keys or counted executions either.
fn passive(policy: &Policy) -> bool {
    policy.budget.is_none()
        && policy.breaker.is_none()
        && policy.bulkhead.is_none()
        && policy.hedge.is_none()
        && policy.adaptive_throttle.is_none()
        && policy.client_rate_limiter.is_none()
        && policy.fallback.is_none()
        && policy.idempotency_key.is_none()
        && policy.idempotent
}
