//! The simulated system's parts as plain state machines: distributions, arrival processes,
//! backoff schedules, retry budgets, circuit breakers, bulkheads, hedging's timers and budget,
//! client-side adaptive throttles, load balancers over a service's replicas and their
//! outlier detectors,
//! idempotency key stores, fault windows, a server's
//! admission rate limit and the servers (the `queue` server and the `occ` row), and the random
//! streams each purpose draws from.
//!
//! Every function here takes validated values and the current time; none of them checks ranges
//! again, reads a clock, or does I/O. The driver (`crate::sim`) owns the event loop and
//! calls into these.

pub mod backoff;
pub mod balancer;
pub mod breaker;
pub mod budget;
pub mod bulkhead;
pub mod dist;
pub mod fault;
pub mod hedge;
pub mod idempotency;
pub mod occ;
pub mod outcome;
pub mod outlier;
pub mod rate_limit;
pub mod rate_limiter;
pub mod server;
pub mod streams;
pub mod throttle;
pub mod workload;
pub mod ziggurat;

pub use backoff::{Backoff, Jitter};
pub use balancer::{Balancer, BalancerKind, Sees};
pub use breaker::{Breaker, BreakerConfig, BreakerMode, BreakerState, BreakerWindow};
pub use budget::{Budget, BudgetConfig, BudgetKind, EnvoyLimit, Scope};
pub use bulkhead::Bulkhead;
pub use dist::Dist;
pub use fault::{Fault, FaultEffect, Faults, Outage};
pub use hedge::{
    HEDGE_BUDGET_BURST, HEDGE_MIN_SAMPLES, HedgeBudget, HedgeDelay, HedgeTimer, LatencyWindow,
};
pub use idempotency::{KeyStore, Lookup};
pub use occ::OccServer;
pub use outcome::{Outcome, OutcomeSet};
pub use outlier::{Detector, Ejections, OutlierConfig, Report};
pub use rate_limit::{RateLimit, RateLimiter};
pub use rate_limiter::{ClientRateLimiter, TokenWait};
pub use server::{Admission, Discipline, Job, QueueConfig, QueueServer};
pub use throttle::Throttle;
pub use workload::{RateProfile, RateStep};
