//! `replicas`, `balancer`, `sticky` and `balancer_sees` of a server (or a call's `balancer`
//! and `sticky`): a service run as a pool of
//! replicas and the way its callers spread attempts over them, in one place: the raw
//! settings, the rules and defaults that give the checked [`Pool`], and their words in
//! report.md. The balancer itself is `crate::model::balancer`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::{BalancerKind, Sees};
use crate::scenario::check::Checker;

/// The most replicas a service may have.
pub const MAX_REPLICAS: u64 = 1024;
/// The most replicas a `least_request` balancer may draw per pick.
pub const MAX_CHOICE_COUNT: u64 = 64;
/// `least_request`'s `choice_count` by default: the power of two choices.
pub const DEFAULT_CHOICE_COUNT: u32 = 2;
/// The balancer of a replicated service by default: Envoy's default `lb_policy`.
pub const DEFAULT_BALANCER: BalancerKind = BalancerKind::RoundRobin;

/// `balancer`: a word, or `least_request` with its `choice_count`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum RawBalancer {
    /// "random", "round_robin", "least_request" (two choices) or "least_outstanding".
    Word(RawBalancerWord),
    /// {"least_request": {"choice_count": k}}.
    Settings(RawBalancerSettings),
}

/// The balancers by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RawBalancerWord {
    /// A replica drawn at random.
    Random,
    /// Each replica in turn.
    RoundRobin,
    /// The fewest outstanding among two replicas drawn at random.
    LeastRequest,
    /// The fewest outstanding among all replicas.
    LeastOutstanding,
}

/// A balancer written as an object.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum RawBalancerSettings {
    /// The fewest outstanding among `choice_count` replicas drawn at random.
    LeastRequest(RawLeastRequest),
}

/// `balancer.least_request`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawLeastRequest {
    /// Replicas drawn per pick, 1 to 64 (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 64))]
    pub choice_count: Option<u64>,
}

/// `balancer_sees`: what a balancer that compares replicas reads of each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RawSees {
    /// The attempts the caller has out to each replica (Envoy's and gRPC's view).
    Outstanding,
    /// What each replica holds, waiting or in service, whoever sent it.
    Queue,
}

/// How callers spread a service's attempts over its replicas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Routing {
    /// Which replica an attempt goes to.
    pub balancer: BalancerKind,
    /// Every attempt of a logical call goes where its first went.
    pub sticky: bool,
}

/// A service's pool: its replicas and how its callers spread attempts over them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pool {
    /// Replicas (>= 1), each with its own workers, queue, rate limit and faults.
    pub replicas: u32,
    /// The callers' routing, unless a call says otherwise.
    pub routing: Routing,
    /// What every caller's balancer compares, if it compares replicas.
    pub sees: Sees,
    /// Each caller's outlier detection over the replicas, if any.
    pub outlier: Option<crate::model::OutlierConfig>,
}

impl Pool {
    /// One replica.
    pub const SINGLE: Pool = Pool {
        replicas: 1,
        routing: Routing {
            balancer: DEFAULT_BALANCER,
            sticky: false,
        },
        sees: Sees::Outstanding,
        outlier: None,
    };
}

/// `balancer_sees` at `at` (a server's path), over `replicas` replicas: "outstanding" by
/// default, written back only where there is a pool, as `balancer` is.
pub(in crate::scenario) fn sees(raw: &mut Option<RawSees>, replicas: u32) -> Sees {
    let sees = match raw {
        Some(RawSees::Queue) => Sees::Queue,
        Some(RawSees::Outstanding) | None => Sees::Outstanding,
    };
    if replicas > 1 {
        *raw = Some(match sees {
            Sees::Queue => RawSees::Queue,
            Sees::Outstanding => RawSees::Outstanding,
        });
    }
    sees
}

/// `replicas` at `at` (the server's path): 1 to [`MAX_REPLICAS`], default 1.
pub(in crate::scenario) fn replicas(c: &mut Checker, at: &str, raw: Option<u64>) -> u32 {
    match raw {
        None => 1,
        Some(n) if n > MAX_REPLICAS => {
            c.err(
                &format!("{at}.replicas"),
                format!("must be at most {MAX_REPLICAS} (got {n})"),
            );
            1
        }
        Some(n) => c.count_u32(&format!("{at}.replicas"), n, 1),
    }
}

/// `balancer` and `sticky` at `at` (a server's or a call's path), over `replicas` replicas,
/// with `inherited` the routing they leave unchanged. The filled-in settings are written back
/// only where there is a pool to balance (more than one replica), so a file without one
/// resolves as it always did.
pub(in crate::scenario) fn routing(
    c: &mut Checker,
    at: &str,
    (balancer, sticky): (&mut Option<RawBalancer>, &mut Option<bool>),
    replicas: u32,
    inherited: Routing,
) -> Routing {
    let kind = balancer
        .as_ref()
        .map_or(inherited.balancer, |b| kind(c, at, b));
    let routing = Routing {
        balancer: kind,
        sticky: sticky.unwrap_or(inherited.sticky),
    };
    if replicas > 1 {
        *balancer = Some(written(kind));
        *sticky = Some(routing.sticky);
    }
    routing
}

/// A call's `balancer` and `sticky` at `at`, each `None` where the call leaves the target
/// service's in force (they are not filled in: unset, they are the service's).
pub(in crate::scenario) fn call_routing(
    c: &mut Checker,
    at: &str,
    balancer: Option<&RawBalancer>,
    sticky: Option<bool>,
) -> (Option<BalancerKind>, Option<bool>) {
    (balancer.map(|b| kind(c, at, b)), sticky)
}

/// The balancer `raw` at `at` (a server's or a call's path) names.
fn kind(c: &mut Checker, at: &str, raw: &RawBalancer) -> BalancerKind {
    match raw {
        RawBalancer::Word(w) => match w {
            RawBalancerWord::Random => BalancerKind::Random,
            RawBalancerWord::RoundRobin => BalancerKind::RoundRobin,
            RawBalancerWord::LeastRequest => BalancerKind::LeastRequest {
                choice_count: DEFAULT_CHOICE_COUNT,
            },
            RawBalancerWord::LeastOutstanding => BalancerKind::LeastOutstanding,
        },
        RawBalancer::Settings(RawBalancerSettings::LeastRequest(l)) => {
            let path = format!("{at}.balancer.least_request.choice_count");
            let choice_count = match l.choice_count {
                None => DEFAULT_CHOICE_COUNT,
                Some(k) if k > MAX_CHOICE_COUNT => {
                    c.err(
                        &path,
                        format!(
                            "must be at most {MAX_CHOICE_COUNT} (got {k}); least_outstanding looks at every replica"
                        ),
                    );
                    DEFAULT_CHOICE_COUNT
                }
                Some(k) => c.count_u32(&path, k, 1),
            };
            BalancerKind::LeastRequest { choice_count }
        }
    }
}

/// The raw form of `kind`, as `scenario.resolved.json` writes it.
fn written(kind: BalancerKind) -> RawBalancer {
    match kind {
        BalancerKind::Random => RawBalancer::Word(RawBalancerWord::Random),
        BalancerKind::RoundRobin => RawBalancer::Word(RawBalancerWord::RoundRobin),
        BalancerKind::LeastOutstanding => RawBalancer::Word(RawBalancerWord::LeastOutstanding),
        BalancerKind::LeastRequest { choice_count } => {
            RawBalancer::Settings(RawBalancerSettings::LeastRequest(RawLeastRequest {
                choice_count: Some(u64::from(choice_count)),
            }))
        }
    }
}

/// A pool in words, for a server's sentence: empty for one replica.
pub(in crate::scenario) fn phrase(pool: &Pool) -> String {
    if pool.replicas == 1 {
        return String::new();
    }
    let compares = pool.routing.balancer.counts();
    format!(
        "{} replicas behind {}{}{}, each",
        pool.replicas,
        balancer_words(pool.routing.balancer),
        if compares && pool.sees == Sees::Queue {
            " that sees each replica's queue"
        } else {
            ""
        },
        if pool.routing.sticky {
            " (a request's retries stay on its first replica)"
        } else {
            ""
        }
    )
}

/// A balancer in words.
pub(in crate::scenario) fn balancer_words(kind: BalancerKind) -> String {
    match kind {
        BalancerKind::Random => "a random balancer".to_string(),
        BalancerKind::RoundRobin => "a round-robin balancer".to_string(),
        BalancerKind::LeastRequest { choice_count } => {
            format!("a least-request balancer ({choice_count} choices)")
        }
        BalancerKind::LeastOutstanding => "a least-outstanding balancer".to_string(),
    }
}
