//! Rules of the scenario format: [`RawScenario`] -> [`Scenario`], collecting every problem.
//!
//! Each rule is checked once, here, and reported with its JSON path, the rule, the value seen
//! and the fix. Defaults are filled in here too (and only here): each is written back into the
//! raw document where it is chosen, so the filled-in [`RawScenario`], serialised, is
//! `scenario.resolved.json` and shows exactly what ran.

use std::collections::HashMap;

use crate::engine::SimDuration;

use super::check::{Caller, Checker, written, zero_dist};
use super::error::{Problem, num, quote};
use super::policy::{
    breaker, budget, bulkhead, client_rate_limiter, fallback, hedge, idempotency_key, retry,
    throttle,
};
use super::schema::*;
use super::{Call, ClientGroup, Limits, Network, Policy, Scenario, ServerKind, Service, Workload};
use super::{clients, server};

/// The most replications a file may ask for.
pub const MAX_REPLICATIONS: u64 = 1_000_000;
/// Default number of time-series buckets over `duration`.
pub const DEFAULT_BUCKETS: u64 = 200;

/// The name a sweep axis gets without a `label`: its path's last two keys (and the list
/// indices among or just before them), joined by spaces, with underscores read as spaces.
/// "clients.count" -> "clients count", "policy.retry.max_attempts" -> "retry max attempts",
/// "server.faults.0.to" -> "faults 0 to". Never empty: a path without keys gives "sweep value".
pub fn label_from_path(path: &str) -> String {
    let mut keys = Vec::new();
    let mut named = 0;
    for key in path.split('.').rev() {
        let index = !key.is_empty() && key.bytes().all(|b| b.is_ascii_digit());
        if named == 2 && !index {
            break;
        }
        if !key.is_empty() {
            keys.push(key.replace('_', " "));
        }
        named += usize::from(!index);
    }
    keys.reverse();
    let label = keys.join(" ");
    if label.trim().is_empty() {
        "sweep value".to_string()
    } else {
        label
    }
}

/// The rules of the settings that belong to the whole file: `name` (where it is text), which
/// names the output folder, and `replications`.
pub(super) fn file_rules(name: Option<&str>, replications: u64, problems: &mut Vec<Problem>) {
    if let Some(name) = name {
        check_name(name, problems);
    }
    if replications == 0 || replications > MAX_REPLICATIONS {
        problems.push(Problem::new(
            "replications",
            format!("must be between 1 and 1000000 (got {replications})"),
        ));
    }
}

/// `name` names the output folder: a plain folder name.
fn check_name(name: &str, problems: &mut Vec<Problem>) {
    let ok = !name.is_empty()
        && name.len() <= 100
        && name != "."
        && name != ".."
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        && !name.starts_with('.');
    if !ok {
        problems.push(Problem::new(
            "name",
            format!(
                "must be a plain folder name of at most 100 letters, digits, '.', '_' and '-', not starting with '.' (got {}); it names the output folder",
                quote(name)
            ),
        ));
    }
}

/// Validates one merged scenario document (base, sweep value and variant patch applied), and
/// fills every default into it.
pub(super) fn validate(raw: &mut RawScenario) -> Result<Scenario, Vec<Problem>> {
    let mut c = Checker::default();
    // Values that cannot be read are `None` here, and the rules that compare them with
    // others are skipped: one mistake, one message.
    let (duration, max_time, bucket) = run_length(&mut c, raw);
    let groups = groups(&mut c, &mut raw.clients);
    let latency = raw
        .network
        .get_or_insert(RawNetwork { latency: None })
        .latency
        .get_or_insert_with(zero_dist);
    let network = Network {
        latency: c.dist("network.latency", latency),
    };
    let services = services(&mut c, raw, duration);
    let raw_policy = raw.policy.get_or_insert_with(RawPolicy::default);
    let policy = policy(&mut c, "policy", raw_policy, Caller::Clients);
    let occ_entry = services
        .first()
        .filter(|entry| matches!(entry.server.kind, ServerKind::Occ))
        .map(|entry| {
            if raw.services.is_some() {
                quote(&entry.name)
            } else {
                "the server".to_string()
            }
        });
    if let Some(to) = &occ_entry {
        no_hedge_at_occ(&mut c, "policy", raw_policy, to);
    }
    let mut clients = group_policies(&mut c, raw, groups, occ_entry.as_deref());
    // A single group's policy is the clients' policy, whether the file writes it at the top
    // level or in the group.
    let policy = match &mut clients[..] {
        [only] => only.policy.take().unwrap_or(policy),
        _ => policy,
    };
    let limits = limits(&mut c, &mut raw.limits);
    for (i, group) in clients.iter().enumerate() {
        let at = group_path(&raw.clients, i);
        clients::closed_within_limits(&mut c, &at, group, &limits);
        let own = group.policy.as_ref();
        clients::closed_against_breaker(&mut c, &at, group, own.unwrap_or(&policy));
    }
    drop_outages(&mut c, raw);
    if c.problems.is_empty() {
        Ok(Scenario {
            // Without a problem, every value was read.
            duration: duration.unwrap_or_default(),
            max_time,
            bucket: bucket.unwrap_or_default(),
            clients,
            network,
            services,
            policy,
            limits,
        })
    } else {
        Err(c.problems)
    }
}

/// The path of group `i` in messages: `clients` for a single group written as an object,
/// `clients[i]` in a list.
fn group_path(raw: &RawClients, i: usize) -> String {
    if raw.listed {
        format!("clients[{i}]")
    } else {
        "clients".to_string()
    }
}

/// Where the entry every group calls is written (the first group that names one), for
/// messages about it.
fn entry_path(raw: &RawClients) -> String {
    let i = raw.groups.iter().position(|g| g.entry.is_some());
    group_path(raw, i.unwrap_or(0))
}

/// The entry service the groups name: every group that names one must name the same.
fn common_entry(c: &mut Checker, raw: &RawClients) -> Option<String> {
    let mut named = raw
        .groups
        .iter()
        .enumerate()
        .filter_map(|(i, g)| Some((i, g.entry.as_ref()?)));
    let (first, entry) = named.next()?;
    for (i, other) in named {
        if other != entry {
            c.err(
                &format!("clients[{i}].entry"),
                format!(
                    "must name the entry the other groups call (got {}, but clients[{first}].entry is {}): every group calls the one entry service; name {} here, or leave entry out",
                    quote(other),
                    quote(entry),
                    quote(entry)
                ),
            );
        }
    }
    Some(entry.clone())
}

/// Every group's count and workload, with the rules between groups: a list holds at least
/// one group and at most [`clients::MAX_GROUPS`], each named, each name unique and a word
/// that can stand in a path.
fn groups(c: &mut Checker, raw: &mut RawClients) -> Vec<(String, u32, Workload)> {
    if raw.listed && raw.groups.is_empty() {
        c.err(
            "clients",
            "must list at least one group of clients (got []); e.g. [{\"name\": \"web\", \"count\": 100, \"workload\": {\"open\": {\"rate_per_s\": 900}}}], or write one group as an object",
        );
    }
    if raw.groups.len() > clients::MAX_GROUPS {
        c.err(
            "clients",
            format!(
                "lists {} groups, more than the {} a scenario may have; merge groups",
                raw.groups.len(),
                clients::MAX_GROUPS
            ),
        );
    }
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::with_capacity(raw.groups.len());
    for i in 0..raw.groups.len() {
        let at = group_path(raw, i);
        let listed = raw.listed;
        let group = &mut raw.groups[i];
        let name = match (&group.name, listed) {
            (Some(name), _) => {
                check_key_name(c, &format!("{at}.name"), "group", name, "clients.0.count");
                if let Some(j) = seen.insert(name.clone(), i) {
                    c.err(
                        &format!("{at}.name"),
                        format!(
                            "must be unique among the groups (got {}, the name of clients[{j}] too): a group's numbers are reported under its name; rename one",
                            quote(name)
                        ),
                    );
                }
                name.clone()
            }
            (None, true) => {
                c.err(
                    &format!("{at}.name"),
                    "is required for each group in a list of groups: its numbers are reported under it; name the group, e.g. \"name\": \"web\"",
                );
                String::new()
            }
            (None, false) => "clients".to_string(),
        };
        if !listed && group.policy.is_some() {
            c.err(
                "clients.policy",
                "belongs to a group in a list of groups: a single group of clients calls with the top-level policy; move it to \"policy\", or write clients as a list of groups",
            );
        }
        let (count, workload) = clients::check(c, &at, group);
        out.push((name, count, workload));
    }
    out
}

/// The groups, each with its own policy where it has one (checked here, its defaults written
/// back), which replaces the top-level `policy` as a whole for the group.
fn group_policies(
    c: &mut Checker,
    raw: &mut RawScenario,
    groups: Vec<(String, u32, Workload)>,
    occ_entry: Option<&str>,
) -> Vec<ClientGroup> {
    let listed = raw.clients.listed;
    groups
        .into_iter()
        .zip(raw.clients.groups.iter_mut())
        .enumerate()
        .map(|(i, ((name, count, workload), g))| {
            let policy = match g.policy.as_mut() {
                Some(own) if listed => {
                    let at = format!("clients[{i}].policy");
                    let p = policy(c, &at, own, Caller::Clients);
                    if let Some(to) = occ_entry {
                        no_hedge_at_occ(c, &at, own, to);
                    }
                    Some(p)
                }
                _ => None,
            };
            ClientGroup {
                name,
                count,
                workload,
                policy,
            }
        })
        .collect()
}

/// `duration`, `max_time` and `metrics.bucket` (by default `duration` over
/// [`DEFAULT_BUCKETS`]); `None` where one cannot be read.
fn run_length(
    c: &mut Checker,
    raw: &mut RawScenario,
) -> (
    Option<SimDuration>,
    Option<SimDuration>,
    Option<SimDuration>,
) {
    let duration = c.positive_duration("duration", &raw.duration);
    let max_time = raw.max_time.as_ref().and_then(|d| {
        let t = c.positive_duration("max_time", d)?;
        if let Some(duration) = duration
            && t < duration
        {
            c.err(
                "max_time",
                format!("must not be shorter than duration (got {t}, duration {duration})"),
            );
        }
        Some(t)
    });
    let metrics = raw.metrics.get_or_insert(RawMetrics { bucket: None });
    let bucket = match &metrics.bucket {
        Some(b) => c.positive_duration("metrics.bucket", b),
        None => {
            let bucket =
                duration.map(|d| SimDuration::from_nanos((d.as_nanos() / DEFAULT_BUCKETS).max(1)));
            metrics.bucket = bucket.map(written);
            bucket
        }
    };
    if let (Some(duration), Some(bucket)) = (duration, bucket)
        && duration.as_nanos() / bucket.as_nanos() > 1_000_000
    {
        c.err(
            "metrics.bucket",
            format!(
                "gives more than a million buckets over duration {duration} (got {bucket}); use a wider bucket"
            ),
        );
    }
    (duration, max_time, bucket)
}

/// `limits`, with their defaults.
fn limits(c: &mut Checker, raw: &mut Option<RawLimits>) -> Limits {
    let raw = raw.get_or_insert(RawLimits {
        max_events: None,
        max_in_flight: None,
        max_memory_mb: None,
    });
    let limits = Limits {
        max_events: *raw.max_events.get_or_insert(Limits::DEFAULT_MAX_EVENTS),
        max_in_flight: *raw
            .max_in_flight
            .get_or_insert(Limits::DEFAULT_MAX_IN_FLIGHT),
        // Not written back: the budget is the machine's, not the model's, so the resolved
        // scenario (what runs) is the same whatever it is.
        max_memory_mb: raw
            .max_memory_mb
            .unwrap_or(crate::memory::DEFAULT_MAX_MEMORY_MB),
    };
    if limits.max_events == 0 {
        c.err("limits.max_events", "must be at least 1 (got 0)");
    }
    if limits.max_in_flight == 0 {
        c.err("limits.max_in_flight", "must be at least 1 (got 0)");
    }
    if !(1..=crate::memory::MAX_MEMORY_MB).contains(&limits.max_memory_mb) {
        c.err(
            "limits.max_memory_mb",
            format!(
                "must be from 1 to {} (1 TiB) (got {})",
                crate::memory::MAX_MEMORY_MB,
                limits.max_memory_mb
            ),
        );
    }
    limits
}

/// The most services of a call graph.
pub const MAX_SERVICES: usize = 64;
/// The most calls one service makes.
pub const MAX_CALLS: usize = 64;
/// The most characters of a service's name.
pub const MAX_SERVICE_NAME: usize = 64;
/// How far the fractions of a service's routes may add up beyond 1: decimal fractions such as
/// 0.7 + 0.2 + 0.1 do not add up to exactly 1 in binary.
const ROUTE_SLACK: f64 = 1e-9;
/// Names or calls a message lists before it counts the rest.
const LISTED: usize = 8;

/// The services of a scenario, the entry first: the one `server` (or the default server) as a
/// service named "server", or the services of `services`.
fn services(c: &mut Checker, raw: &mut RawScenario, duration: Option<SimDuration>) -> Vec<Service> {
    let entry = common_entry(c, &raw.clients);
    let Some(list) = &mut raw.services else {
        if let Some(entry) = entry {
            c.err(
                &format!("{}.entry", entry_path(&raw.clients)),
                format!(
                    "applies only to a file with \"services\" (got {}): the clients call the file's one server; remove clients.entry, or describe the services under \"services\"",
                    quote(&entry)
                ),
            );
        }
        let raw_server = raw.server.get_or_insert_with(RawServer::default);
        return vec![Service {
            name: "server".to_owned(),
            server: server::check(c, "server", raw_server, duration),
            calls: Vec::new(),
            parallel: false,
        }];
    };
    if let Some(s) = &raw.server {
        c.err(
            "services",
            "cannot be used together with \"server\": a file describes one server or a graph of services; put the server's keys under a name in \"services\" and remove \"server\" (a variant patch removes it with \"server\": null)",
        );
        // Its own problems are still worth knowing.
        server::check(c, "server", &mut s.clone(), duration);
    }
    let mut entry = entry;
    let at = format!("{}.entry", entry_path(&raw.clients));
    let services = graph(c, &mut list.0, (&mut entry, &at), duration);
    // The entry chosen (the one service, where none is named) is written into every group.
    for group in &mut raw.clients.groups {
        group.entry.clone_from(&entry);
    }
    services
}

/// Whether `name` may name a service (see [`check_service_name`]).
fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= MAX_SERVICE_NAME
        && !name
            .chars()
            .any(|ch| ch.is_control() || matches!(ch, '.' | '[' | ']'))
}

/// `name` as messages write it: as it is, or quoted (escaped and cut short) when it breaks
/// the rules for names, so that a message stays one line.
fn shown_name(name: &str) -> String {
    if plain_name(name) {
        name.to_string()
    } else {
        quote(name)
    }
}

/// The path of service `name`'s settings: `services.<name>`.
fn service_path(name: &str) -> String {
    format!("services.{}", shown_name(name))
}

fn check_service_name(c: &mut Checker, name: &str) {
    check_key_name(
        c,
        "services",
        "service",
        name,
        "services.<name>.concurrency",
    );
}

/// The rules of a name that is a key in paths (a service's, or a call's in an object of
/// calls by name): `what` says which, `example` a path it appears in, `at` where it is.
fn check_key_name(c: &mut Checker, at: &str, what: &str, name: &str, example: &str) {
    let chars = name.chars().count();
    if name.is_empty() {
        c.err(
            at,
            format!("a {what}'s name must not be empty (got \"\"); name it, e.g. \"backend\""),
        );
    } else if chars > MAX_SERVICE_NAME {
        c.err(
            at,
            format!(
                "the {what} name {} has {chars} characters, more than the {MAX_SERVICE_NAME} a name may have; shorten it",
                quote(name)
            ),
        );
    } else if name.chars().any(char::is_control) {
        c.err(
            at,
            format!(
                "the {what} name {} must not contain control characters such as a newline or a tab: it is written into messages, tables and CSV files",
                quote(name)
            ),
        );
    } else if name.contains(['.', '[', ']']) {
        c.err(
            at,
            format!(
                "the {what} name {} must not contain '.', '[' or ']': a path such as {example} names a {what}'s setting in messages, sweeps and --sweep; write \"-\" or \"_\" instead",
                quote(name)
            ),
        );
    }
}

/// `"a", "b", "c"`: up to [`LISTED`] names, then how many more.
fn list_names(names: &[&str]) -> String {
    let mut listed: Vec<String> = names.iter().take(LISTED).map(|n| quote(n)).collect();
    if names.len() > LISTED {
        listed.push(format!("and {} more", names.len() - LISTED));
    }
    listed.join(", ")
}

/// "; did you mean "x"?" for the name nearest to `name`, else "; the services are ...". Only
/// a scenario of at most [`MAX_SERVICES`] services is searched for the nearest name, so that
/// a hint costs at most a bounded amount of work.
pub(super) fn name_hint(name: &str, names: &[&str]) -> String {
    let near = if names.len() <= MAX_SERVICES {
        super::shape::nearest(name, names)
    } else {
        None
    };
    match near {
        Some(near) => format!("; did you mean {}?", quote(near)),
        None if names.is_empty() => "; the file has no services".to_string(),
        None => format!("; the services are {}", list_names(names)),
    }
}

/// The services of `services` (`list`, in file order), the entry first and the others in file
/// order, with every rule of a call graph checked.
fn graph(
    c: &mut Checker,
    list: &mut [(String, RawService)],
    (raw_entry, entry_at): (&mut Option<String>, &str),
    duration: Option<SimDuration>,
) -> Vec<Service> {
    if list.is_empty() {
        c.err(
            "services",
            "must hold at least one service (got none): the services by name, e.g. {\"api\": {\"service_time\": {\"constant\": \"1ms\"}}}; or describe one server under \"server\"",
        );
        return Vec::new();
    }
    if list.len() > MAX_SERVICES {
        c.err(
            "services",
            format!(
                "has {} services, more than the {MAX_SERVICES} a scenario may have; merge services or split the scenario",
                list.len()
            ),
        );
    }
    let owned: Vec<String> = list.iter().map(|(name, _)| name.clone()).collect();
    let names: Vec<&str> = owned.iter().map(String::as_str).collect();
    for name in &names {
        check_service_name(c, name);
    }
    // Looked up, never iterated: the order of services is the file's.
    let index: HashMap<&str, usize> = names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let entry = entry_index(c, (raw_entry.as_deref(), entry_at), &index, &names);
    if let Some(entry) = entry {
        *raw_entry = Some(owned[entry].clone());
    }
    // Built in file order, each call's `to` the index of its target in the file; the targets
    // of every call as written (`None` where `to` names no service), for the graph's rules.
    let mut services = Vec::with_capacity(list.len());
    let mut targets: Vec<Vec<Option<usize>>> = Vec::with_capacity(list.len());
    let known = Known {
        kinds: list.iter().map(|(_, s)| s.kind).collect(),
        names: &names,
        index: &index,
    };
    let paths = target_paths(list);
    for (name, raw) in list {
        let (service, to_of) = service(c, &known, name, raw, duration);
        targets.push(to_of);
        services.push(service);
    }
    cycles(c, &names, &targets, &paths);
    // A call whose `to` names no service may have been meant for the one it leaves uncalled:
    // one mistake, one message.
    if let Some(entry) = entry
        && targets.iter().flatten().all(Option::is_some)
    {
        never_called(c, &names, &targets, entry);
    }
    entry_first(services, entry.unwrap_or(0))
}

/// The index in the file of the service `clients.entry` names; without one, the only service.
fn entry_index(
    c: &mut Checker,
    (entry, at): (Option<&str>, &str),
    index: &HashMap<&str, usize>,
    names: &[&str],
) -> Option<usize> {
    match entry {
        Some(e) => {
            let found = index.get(e).copied();
            if found.is_none() {
                c.err(
                    at,
                    format!("names no service (got {}){}", quote(e), name_hint(e, names)),
                );
            }
            found
        }
        None if names.len() == 1 => Some(0),
        None => {
            c.err(
                at,
                format!(
                    "is required with more than one service: it names the service the clients call, one of {}",
                    list_names(names)
                ),
            );
            None
        }
    }
}

/// The services of a call graph as written, for looking up a call's target.
struct Known<'a> {
    /// Each service's kind as written.
    kinds: Vec<Option<RawServerKind>>,
    names: &'a [&'a str],
    /// Each name's index in the file.
    index: &'a HashMap<&'a str, usize>,
}

/// Service `name` with its calls (each `to` the index of its target in the file), and the
/// target of every call as written (`None` where `to` names no service).
fn service(
    c: &mut Checker,
    known: &Known,
    name: &str,
    raw: &mut RawService,
    duration: Option<SimDuration>,
) -> (Service, Vec<Option<usize>>) {
    let at = service_path(name);
    let mut raw_server = raw.server();
    let server = server::check(c, &at, &mut raw_server, duration);
    raw.set_server(raw_server);
    if !matches!(server.kind, ServerKind::Occ) {
        raw.call_mode.get_or_insert(RawCallMode::Sequential);
        raw.calls.get_or_insert_with(RawCalls::default);
    }
    let parallel = raw.call_mode == Some(RawCallMode::Parallel);
    let mut none = RawCalls::default();
    let raw_calls = raw.calls.as_mut().unwrap_or(&mut none);
    if matches!(server.kind, ServerKind::Occ) {
        if !raw_calls.calls.is_empty() {
            c.err(
                &format!("{at}.calls"),
                "a service of kind \"occ\" cannot make calls: it is one row whose reads are instant and whose writes conflict; make the calls from a queue service",
            );
        }
        if raw.call_mode.is_some() {
            c.err(
                &format!("{at}.call_mode"),
                "applies to a service that makes calls; a service of kind \"occ\" makes none",
            );
        }
    }
    let count = raw_calls.calls.len();
    if count > MAX_CALLS {
        c.err(
            &format!("{at}.calls"),
            format!("has {count} calls, more than the {MAX_CALLS} a service may make"),
        );
    }
    let mut calls = Vec::with_capacity(count);
    let mut to_of = Vec::with_capacity(count);
    let mut fractions = Vec::with_capacity(count);
    for (k, (key, raw_call)) in raw_calls.calls.iter_mut().enumerate() {
        let p = call_path(&at, k, key.as_deref());
        if let Some(key) = key {
            let example = format!("{at}.calls.<name>.policy");
            check_key_name(c, &format!("{at}.calls"), "call", key, &example);
        }
        let (to, fraction, policy) = call(c, known, &p, key.as_deref(), raw_call);
        let (balancer, sticky) =
            server::balancer::call_routing(c, &p, raw_call.balancer.as_ref(), raw_call.sticky);
        if let Some(to) = to {
            calls.push(Call {
                to,
                fraction,
                policy,
                balancer,
                sticky,
            });
        }
        to_of.push(to);
        fractions.push((p[at.len() + 1..].to_string(), fraction));
    }
    routes(c, &at, &fractions);
    let service = Service {
        name: name.to_string(),
        server,
        calls,
        parallel,
    };
    (service, to_of)
}

/// The path of call `k` of the service at `at`, named `key` where the calls are written by
/// name: `services.a.calls[0]` or `services.a.calls.b`.
fn call_path(at: &str, k: usize, key: Option<&str>) -> String {
    match key {
        Some(key) => format!("{at}.calls.{}", shown_name(key)),
        None => format!("{at}.calls[{k}]"),
    }
}

/// Where each call of each service (in file order) names its target: its `to`, or the call
/// itself where its name says whom it calls.
fn target_paths(list: &[(String, RawService)]) -> Vec<Vec<String>> {
    list.iter()
        .map(|(name, s)| {
            let at = service_path(name);
            let calls = s.calls.as_ref().map_or(&[][..], |c| &c.calls[..]);
            calls
                .iter()
                .enumerate()
                .map(|(k, (key, call))| {
                    let p = call_path(&at, k, key.as_deref());
                    if call.to.is_some() {
                        format!("{p}.to")
                    } else {
                        p
                    }
                })
                .collect()
        })
        .collect()
}

/// One call at `p` (named `key` in an object of calls): its target's index in the file
/// (`None` where it names no service), its fraction and its policy. The target a call's name
/// implies is written into `to`.
fn call(
    c: &mut Checker,
    known: &Known,
    p: &str,
    key: Option<&str>,
    call: &mut RawCall,
) -> (Option<usize>, f64, Policy) {
    let target = RawCalls::target(key, call).unwrap_or_default().to_string();
    let to = known.index.get(target.as_str()).copied();
    if to.is_none() {
        // In an object of calls, a call without `to` calls the service it is named after.
        let (at, rule) = match (key, &call.to) {
            (Some(_), None) => (
                p.to_string(),
                "names no service: a call without \"to\" calls the service it is named after",
            ),
            _ => (format!("{p}.to"), "names no service"),
        };
        c.err(
            &at,
            format!(
                "{rule} (got {}){}",
                quote(&target),
                name_hint(&target, known.names)
            ),
        );
    }
    call.to.get_or_insert(target.clone());
    let fraction = *call.fraction.get_or_insert(1.0);
    if !(fraction > 0.0 && fraction <= 1.0) {
        c.err(
            &format!("{p}.fraction"),
            format!(
                "must be above 0 and at most 1 (got {}): it is the share of the caller's attempts that make this call",
                num(fraction)
            ),
        );
    }
    let raw_policy = call.policy.get_or_insert_with(RawPolicy::default);
    let policy = policy(c, &format!("{p}.policy"), raw_policy, Caller::Service);
    if let Some(t) = to
        && known.kinds[t] == Some(RawServerKind::Occ)
    {
        no_hedge_at_occ(c, &format!("{p}.policy"), raw_policy, &quote(&target));
    }
    (to, fraction, policy)
}

/// The services with `entry` first and the others in file order; each call follows its target.
fn entry_first(services: Vec<Service>, entry: usize) -> Vec<Service> {
    let order: Vec<usize> = std::iter::once(entry)
        .chain((0..services.len()).filter(|&i| i != entry))
        .collect();
    let mut position = vec![0; services.len()];
    for (p, &i) in order.iter().enumerate() {
        position[i] = p;
    }
    let mut slots: Vec<Option<Service>> = services.into_iter().map(Some).collect();
    order
        .iter()
        .filter_map(|&i| slots[i].take())
        .map(|mut service| {
            for call in &mut service.calls {
                call.to = position[call.to];
            }
            service
        })
        .collect()
}

/// The calls of one service with a fraction below 1 are exclusive routes, consecutive slices
/// of [0, 1) in file order: their fractions add up to at most 1.
fn routes(c: &mut Checker, at: &str, fractions: &[(String, f64)]) {
    let routes: Vec<&(String, f64)> = fractions
        .iter()
        // A fraction outside (0, 1] was reported on its own.
        .filter(|(_, f)| *f > 0.0 && *f < 1.0)
        .collect();
    let sum: f64 = routes.iter().map(|(_, f)| f).sum();
    if sum > 1.0 + ROUTE_SLACK {
        let mut listed: Vec<String> = routes
            .iter()
            .take(LISTED)
            .map(|(call, f)| format!("{call} {}", num(*f)))
            .collect();
        if routes.len() > LISTED {
            listed.push(format!("and {} more", routes.len() - LISTED));
        }
        c.err(
            &format!("{at}.calls"),
            format!(
                "the calls with a fraction below 1 are exclusive routes, taking consecutive slices of [0, 1) in file order (one draw per request picks one), so their fractions must add up to at most 1 (got {} from {}); lower them, or write 1 (the default) for a call that every attempt makes",
                // Rounded to the slack: 0.7 + 0.6 reads 1.3, not 1.2999999999999998.
                num((sum / ROUTE_SLACK).round() * ROUTE_SLACK),
                listed.join(", ")
            ),
        );
    }
}

/// The cycle of the services `on_path` and back to `to` (the first of them), `a -> b -> a`,
/// cut in the middle when long: its cost does not grow with the cycle.
fn show_cycle(names: &[&str], on_path: &[usize], to: usize) -> String {
    let len = on_path.len() + 1;
    let at = |i: usize| shown_name(names[on_path.get(i).copied().unwrap_or(to)]);
    let join = |range: std::ops::Range<usize>| range.map(at).collect::<Vec<_>>().join(" -> ");
    if len > LISTED {
        format!(
            "{} -> ... ({} more) -> {}",
            join(0..3),
            len - 6,
            join(len - 3..len)
        )
    } else {
        join(0..len)
    }
}

/// Every call that closes a cycle (a call to the caller itself among them), each reported
/// once at its `to` with the cycle it closes. Depth first from each service in file order,
/// calls in file order, so the same file always gives the same messages; linear in the calls.
fn cycles(c: &mut Checker, names: &[&str], targets: &[Vec<Option<usize>>], paths: &[Vec<String>]) {
    const OFF_PATH: usize = usize::MAX;
    // Each service's place on the current path from the root, and whether it is done: every
    // service it reaches has been walked.
    let mut depth = vec![OFF_PATH; names.len()];
    let mut done = vec![false; names.len()];
    for root in 0..names.len() {
        if done[root] {
            continue;
        }
        // The services on the path from the root, and the index of each one's next call.
        let mut path = vec![root];
        let mut next = vec![0];
        depth[root] = 0;
        while let (Some(&from), Some(k)) = (path.last(), next.last_mut()) {
            let Some(to) = targets[from].get(*k) else {
                done[from] = true;
                depth[from] = OFF_PATH;
                path.pop();
                next.pop();
                continue;
            };
            let call = *k;
            *k += 1;
            let Some(to) = *to else { continue };
            if done[to] {
                continue;
            }
            if depth[to] == OFF_PATH {
                depth[to] = path.len();
                path.push(to);
                next.push(0);
                continue;
            }
            c.err(
                &paths[from][call],
                format!(
                    "closes the cycle {} (got {}): an attempt would wait on a call that comes back to a service on its own path; the calls between services must not loop, so remove a call of the cycle",
                    show_cycle(names, &path[depth[to]..], to),
                    quote(names[to])
                ),
            );
        }
    }
}

/// Every service that no chain of calls from the entry reaches.
fn never_called(c: &mut Checker, names: &[&str], targets: &[Vec<Option<usize>>], entry: usize) {
    let mut reached = vec![false; names.len()];
    reached[entry] = true;
    let mut next = vec![entry];
    while let Some(from) = next.pop() {
        for &to in targets[from].iter().flatten() {
            if !reached[to] {
                reached[to] = true;
                next.push(to);
            }
        }
    }
    for (i, name) in names.iter().enumerate() {
        if !reached[i] {
            c.err(
                &service_path(name),
                format!(
                    "is never called: no chain of calls from the entry service {} reaches it; call it from a service that is reached, or remove it",
                    quote(names[entry])
                ),
            );
        }
    }
}

/// A "drop" outage never answers, so whoever calls a service with one must give up on its
/// own: the clients (for the one server, or the entry service) need a timeout or a deadline,
/// and so does every call to another service. What is written counts, even with a mistake in
/// it: a timeout with a mistake is still meant as a timeout.
fn drop_outages(c: &mut Checker, raw: &RawScenario) {
    let gives_up =
        |p: Option<&RawPolicy>| p.is_some_and(|p| p.timeout.is_some() || p.deadline.is_some());
    // Every group gives up on its own: with its own policy, or with the top-level one.
    let clients_give_up = raw
        .clients
        .groups
        .iter()
        .all(|g| gives_up(g.policy.as_ref().or(raw.policy.as_ref())));
    let clients_message = "\"drop\" never answers, so it needs policy.timeout or policy.deadline: without one the clients would wait for ever; use \"reject\" for an outage that answers";
    let drops = |faults: Option<&Vec<RawFault>>| -> Vec<usize> {
        faults
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .enumerate()
            .filter(|(_, f)| f.outage == Some(RawOutage::Drop))
            .map(|(i, _)| i)
            .collect()
    };
    let Some(graph) = &raw.services else {
        if !clients_give_up {
            for i in drops(raw.server.as_ref().and_then(|s| s.faults.as_ref())) {
                c.err(&format!("server.faults[{i}].outage"), clients_message);
            }
        }
        return;
    };
    let entry = match raw.clients.groups.first().and_then(|g| g.entry.as_ref()) {
        Some(e) => graph.0.iter().position(|(name, _)| name == e),
        None => (graph.0.len() == 1).then_some(0),
    };
    // The calls that would wait for ever on each service: how many, and the first few.
    let mut waiting: HashMap<&str, (usize, Vec<String>)> = HashMap::new();
    for (caller, from) in &graph.0 {
        let calls = from.calls.as_ref().map_or(&[][..], |c| &c.calls[..]);
        for (k, (key, call)) in calls.iter().enumerate() {
            let to = RawCalls::target(key.as_deref(), call).unwrap_or_default();
            if !gives_up(call.policy.as_ref()) {
                let (count, listed) = waiting.entry(to).or_default();
                *count += 1;
                if listed.len() < LISTED {
                    listed.push(call_path(&service_path(caller), k, key.as_deref()));
                }
            }
        }
    }
    for (i, (name, service)) in graph.0.iter().enumerate() {
        let at = service_path(name);
        for w in drops(service.faults.as_ref()) {
            let path = format!("{at}.faults[{w}].outage");
            if Some(i) == entry {
                if !clients_give_up {
                    c.err(&path, clients_message);
                }
                continue;
            }
            let Some((count, listed)) = waiting.get(name.as_str()) else {
                continue;
            };
            let count = *count;
            let mut waiting = listed.clone();
            if count > LISTED {
                waiting.push(format!("and {} more", count - LISTED));
            }
            c.err(
                &path,
                format!(
                    "\"drop\" never answers, so every call to this service needs a timeout or a deadline in its policy, and {} {} neither: without one a caller would wait for ever; give {} a timeout or deadline, or use \"reject\" for an outage that answers",
                    waiting.join(", "),
                    if count == 1 { "has" } else { "have" },
                    if count == 1 { "that call" } else { "each" },
                ),
            );
        }
    }
}

/// The policy `at` (`policy`, or a call's `services.<name>.calls[i].policy`) describes.
fn policy(c: &mut Checker, at: &str, raw: &mut RawPolicy, caller: Caller) -> Policy {
    let timeout = raw
        .timeout
        .as_ref()
        .and_then(|d| c.positive_duration(&format!("{at}.timeout"), d));
    let deadline = raw
        .deadline
        .as_ref()
        .and_then(|d| c.positive_duration(&format!("{at}.deadline"), d));
    let retry = retry::check(c, at, &mut raw.retry);
    let bulkhead = raw.bulkhead.as_mut().map(|b| bulkhead::check(c, at, b));
    let fallback = raw.fallback.as_mut().map(|f| fallback::check(c, at, f));
    if caller == Caller::Clients {
        clients_policy_keys(c, at, raw);
    }
    Policy {
        preset: raw.preset,
        timeout,
        deadline,
        budget: raw.budget.as_mut().map(|b| budget::check(c, at, b, caller)),
        breaker: raw
            .breaker
            .as_mut()
            .map(|b| breaker::check(c, at, b, caller)),
        retry,
        bulkhead,
        fallback,
        propagate_deadline: caller == Caller::Service
            && *raw.propagate_deadline.get_or_insert(false),
        hedge: raw.hedge.as_mut().map(|h| hedge::check(c, at, h)),
        idempotent: raw.idempotent.unwrap_or(true),
        idempotency_key: raw
            .idempotency_key
            .as_mut()
            .and_then(|k| idempotency_key::check(c, at, k)),
        adaptive_throttle: raw
            .adaptive_throttle
            .as_mut()
            .and_then(|t| throttle::check(c, at, t)),
        read_from: read_from(c, at, raw),
        client_rate_limiter: client_rate_limiter::check(
            c,
            at,
            raw.client_rate_limiter.as_mut(),
            raw.bulkhead.is_some(),
        ),
    }
}

/// What the policy `at` read from a config file, in words; a config not yet read came from a
/// sweep or `--set`, which may not bring one.
fn read_from(c: &mut Checker, at: &str, raw: &RawPolicy) -> Option<String> {
    use crate::scenario::{envoy_config, grpc_config};
    let (key, read_as, words) = if let Some(g) = &raw.grpc_service_config {
        ("grpc_service_config", &g.read_as, grpc_config::sentence(g))
    } else if let Some(e) = &raw.envoy_config {
        ("envoy_config", &e.read_as, envoy_config::sentence(e))
    } else {
        return None;
    };
    if read_as.is_none() {
        c.err(
            &format!("{at}.{key}"),
            "is read where the file writes it, in the scenario or a variant's patch; a sweep or --set may not bring one: write it in the file",
        );
    }
    words
}

/// The keys of a policy that apply only to calls between services, refused in the clients'.
fn clients_policy_keys(c: &mut Checker, at: &str, raw: &RawPolicy) {
    if raw.bulkhead.is_some() {
        c.err(
                &format!("{at}.bulkhead"),
                "applies to calls between services; the clients call the entry service without one: set it in a call's policy, services.<name>.calls[i].policy.bulkhead",
            );
    }
    if raw.propagate_deadline.is_some() {
        c.err(
                &format!("{at}.propagate_deadline"),
                "applies to calls between services; the clients have no caller whose wait could bound their deadline: remove it (policy.deadline sets the clients' deadline), or set it in a call's policy",
            );
    }
}

/// Hedges and idempotency keys on a call to an occ service (or the clients' towards an occ
/// server), which the simulation does not support: an error at each setting. `to` names
/// the service called, for the message.
fn no_hedge_at_occ(c: &mut Checker, at: &str, raw: &RawPolicy, to: &str) {
    let why = format!(
        "is not supported on calls to {to}, of kind \"occ\": an occ attempt is a read and a conditional write, whose version check already keeps a repeat from writing twice"
    );
    if raw.hedge.is_some() {
        c.err(&format!("{at}.hedge"), format!("{why}; remove hedge"));
    }
    if raw.idempotent == Some(false) {
        c.err(
            &format!("{at}.idempotent"),
            format!("{why}; remove idempotent"),
        );
    }
    if raw
        .idempotency_key
        .as_ref()
        .is_some_and(|k| !matches!(k, RawIdempotencyKey::On(false)))
    {
        c.err(
            &format!("{at}.idempotency_key"),
            format!("{why}; remove idempotency_key"),
        );
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::engine::SimDuration;
    use crate::model::{Outcome, OutcomeSet, Scope};
    use crate::scenario::policy::hedge::{DEFAULT_HEDGE_WINDOW, MAX_HEDGE_WINDOW};
    use crate::scenario::{
        Experiment, HedgeConfig, HedgeDelay, IdempotencyKey, LoadOptions, Problem, Scenario,
        ScenarioError, ServerKind, load_file, load_str, resolved_json,
    };

    /// A three-tier graph, written with the entry in the middle of the file: `backend`, then
    /// `frontend` (the entry, calling both others), then `cache`.
    fn three_tier() -> Value {
        json!({
            "name": "three-tier", "duration": "2s",
            "clients": {"count": 10, "workload": {"open": {"rate_per_s": 100}}, "entry": "frontend"},
            "policy": {"timeout": "1s"},
            "services": {
                "backend": {"concurrency": 4, "service_time": {"constant": "2ms"}},
                "frontend": {
                    "concurrency": 8, "service_time": {"constant": "1ms"},
                    "calls": [{"to": "cache"}, {"to": "backend", "policy": {"timeout": "50ms"}}]
                },
                "cache": {"service_time": {"constant": "100us"}}
            }
        })
    }

    fn load(doc: &Value) -> Experiment {
        load_str(&doc.to_string(), "test", &LoadOptions::default())
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn scenario(doc: &Value) -> Scenario {
        load(doc).points[0].variants[0].scenario.clone()
    }

    fn problems(doc: &Value) -> Vec<Problem> {
        match load_str(&doc.to_string(), "test", &LoadOptions::default()) {
            Err(ScenarioError::Invalid { problems, .. }) => problems,
            other => panic!("expected problems, got {other:?}"),
        }
    }

    fn names(s: &Scenario) -> Vec<&str> {
        s.services.iter().map(|s| s.name.as_str()).collect()
    }

    fn concurrency(s: &Scenario, i: usize) -> Option<u32> {
        match &s.services[i].server.kind {
            ServerKind::Queue(q) => q.concurrency,
            ServerKind::Occ => panic!("an occ server"),
        }
    }

    #[test]
    fn the_entry_comes_first_and_the_others_follow_in_file_order() {
        let s = scenario(&three_tier());
        assert_eq!(names(&s), ["frontend", "backend", "cache"]);
        assert!(s.is_graph());
        assert_eq!(concurrency(&s, 0), Some(8));
        // Calls point at the reordered services.
        let targets: Vec<&str> = s.services[0]
            .calls
            .iter()
            .map(|c| s.services[c.to].name.as_str())
            .collect();
        assert_eq!(targets, ["cache", "backend"]);
        assert_eq!(
            s.services[0].calls[1].policy.timeout.unwrap().as_nanos(),
            50_000_000
        );
        assert!(s.services[1].calls.is_empty() && s.services[2].calls.is_empty());
    }

    #[test]
    fn services_calls_and_call_policies_take_their_defaults() {
        let mut doc = three_tier();
        doc["services"]["frontend"]["calls"][1]["policy"] = json!({
            "bulkhead": {"max_concurrent": 3},
            "fallback": {},
            "budget": {"ratio": {"percent": 0.1}},
            "breaker": {}
        });
        let s = scenario(&doc);
        let frontend = &s.services[0];
        assert!(!frontend.parallel, "call_mode defaults to sequential");
        let cache = &frontend.calls[0];
        assert_eq!(cache.fraction, 1.0);
        let p = &cache.policy;
        assert_eq!((p.timeout, p.deadline), (None, None));
        assert_eq!(p.retry.max_attempts, Some(3));
        assert_eq!(p.retry.retry_on, OutcomeSet::default_retryable());
        assert!(p.bulkhead.is_none() && p.fallback.is_none() && !p.propagate_deadline);
        assert!(p.budget.is_none() && p.breaker.is_none());
        let p = &frontend.calls[1].policy;
        let bulkhead = p.bulkhead.unwrap();
        assert_eq!(bulkhead.max_concurrent, 3);
        assert_eq!(bulkhead.max_wait.as_nanos(), 0);
        assert_eq!(
            format!("{:?}", p.fallback.as_ref().unwrap()),
            format!("{:?}", crate::model::Dist::ZERO)
        );
        // One budget and one breaker per call edge: the scope reads "shared".
        assert_eq!(p.budget.unwrap().scope, Scope::Shared);
        assert_eq!(p.breaker.unwrap().scope, Scope::Shared);
        // The clients' policy keeps its own defaults.
        assert!(s.policy.bulkhead.is_none() && !s.policy.propagate_deadline);

        doc["services"]["frontend"]["call_mode"] = json!("parallel");
        doc["services"]["frontend"]["calls"][1]["policy"] = json!({
            "bulkhead": {"max_concurrent": 3, "max_wait": "5ms"},
            "fallback": {"latency": {"constant": "2ms"}},
            "propagate_deadline": true,
            "retry": {"retry_on": ["bulkhead_full", "timeout"]}
        });
        let s = scenario(&doc);
        assert!(s.services[0].parallel);
        let p = &s.services[0].calls[1].policy;
        assert_eq!(p.bulkhead.unwrap().max_wait.as_nanos(), 5_000_000);
        assert!(p.propagate_deadline);
        let retry_on: Vec<Outcome> = p.retry.retry_on.iter().collect();
        assert_eq!(retry_on, [Outcome::Timeout, Outcome::BulkheadFull]);
    }

    #[test]
    fn one_service_without_calls_loads_like_one_server() {
        let server = json!({"concurrency": 3, "service_time": {"exponential": {"mean": "2ms"}},
                            "faults": [{"from": "0.5s", "to": "1s", "outage": "reject"}],
                            "rate_limit": {"rate_per_s": 50, "burst": 5}});
        let mut doc = three_tier();
        doc["clients"].as_object_mut().unwrap().remove("entry");
        doc.as_object_mut().unwrap().remove("services");
        doc["server"] = server.clone();
        let plain = scenario(&doc);
        assert_eq!(names(&plain), ["server"]);
        assert!(!plain.is_graph());
        doc.as_object_mut().unwrap().remove("server");
        doc["services"] = json!({ "api": server });
        let graph = scenario(&doc);
        assert_eq!(names(&graph), ["api"], "the one service is the entry");
        assert!(graph.services[0].calls.is_empty() && !graph.is_graph());
        let simulated = |s: &Scenario| {
            let mut s = s.clone();
            s.services[0].name.clear();
            format!("{s:?}")
        };
        assert_eq!(simulated(&plain), simulated(&graph));
        // Each resolved form keeps the shape the file wrote and loads again to itself, to
        // the same scenario.
        doc["clients"]["entry"] = json!("api");
        let mut plain_doc = doc.clone();
        plain_doc["server"] = plain_doc["services"]["api"].take();
        plain_doc.as_object_mut().unwrap().remove("services");
        plain_doc["clients"]
            .as_object_mut()
            .unwrap()
            .remove("entry");
        for (doc, shape) in [(&doc, "services"), (&plain_doc, "server")] {
            let resolved = resolved_json(&load(doc));
            let first = resolved["variants"][0]["scenario"].clone();
            assert!(first.get(shape).is_some(), "{shape}");
            let again = load(&first);
            assert_eq!(resolved_json(&again), resolved);
            assert_eq!(
                simulated(&again.points[0].variants[0].scenario),
                simulated(&plain)
            );
        }
    }

    /// The bundled scenarios are single servers, and load as one service named "server".
    #[test]
    fn bundled_scenarios_load_as_one_server() {
        let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
        let mut checked = 0;
        // The scenario files; `configs/` holds the service configs they read.
        let files = std::fs::read_dir(folder)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"));
        for path in files {
            let e = load_file(&path, &LoadOptions::default()).unwrap();
            // The call-graph scenarios are graphs in every variant.
            if std::fs::read_to_string(&path)
                .unwrap()
                .contains("\"services\"")
            {
                assert!(
                    e.points
                        .iter()
                        .flat_map(|p| &p.variants)
                        .all(|v| v.scenario.is_graph())
                );
                continue;
            }
            for v in e.points.iter().flat_map(|p| &p.variants) {
                let s = &v.scenario;
                assert_eq!(names(s), ["server"], "{}", path.display());
                assert!(s.services[0].calls.is_empty() && !s.services[0].parallel);
                assert!(!s.is_graph());
                let p = &s.policy;
                assert!(p.bulkhead.is_none() && p.fallback.is_none() && !p.propagate_deadline);
                checked += 1;
            }
            // The resolved form keeps its single-server shape.
            let resolved = resolved_json(&e);
            let first = &resolved["variants"][0]["scenario"];
            assert!(first["server"].is_object() && first.get("services").is_none());
            assert!(first["clients"].get("entry").is_none());
        }
        assert!(checked >= 13, "{checked}");
    }

    #[test]
    fn route_fractions_add_up_to_at_most_one() {
        let with_fractions = |fractions: &[Value]| {
            let mut doc = three_tier();
            let calls: Vec<Value> = fractions
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let to = if i % 2 == 0 { "cache" } else { "backend" };
                    let mut call = json!({"to": to, "policy": {"timeout": "1s"}});
                    if !f.is_null() {
                        call["fraction"] = f.clone();
                    }
                    call
                })
                .collect();
            doc["services"]["frontend"]["calls"] = json!(calls);
            doc
        };
        for ok in [
            vec![json!(0.5), json!(0.5)],
            vec![json!(0.7), json!(0.2), json!(0.1)],
            vec![json!(1), json!(0.9)],
            vec![Value::Null, json!(0.3), Value::Null],
        ] {
            let s = scenario(&with_fractions(&ok));
            let fractions: Vec<f64> = s.services[0].calls.iter().map(|c| c.fraction).collect();
            let expected: Vec<f64> = ok.iter().map(|f| f.as_f64().unwrap_or(1.0)).collect();
            assert_eq!(fractions, expected);
        }
        let found = problems(&with_fractions(&[json!(0.7), json!(0.6)]));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].path, "services.frontend.calls");
        for needle in [
            "exclusive routes",
            "consecutive slices of [0, 1) in file order",
            "add up to at most 1 (got 1.3 from calls[0] 0.7, calls[1] 0.6)",
        ] {
            assert!(
                found[0].message.contains(needle),
                "{needle}: {}",
                found[0].message
            );
        }
        for bad in [json!(0), json!(1.5), json!(-0.1)] {
            let found = problems(&with_fractions(&[bad.clone(), Value::Null]));
            assert_eq!(found.len(), 1, "{found:?}");
            assert_eq!(found[0].path, "services.frontend.calls[0].fraction");
            assert!(
                found[0]
                    .message
                    .starts_with("must be above 0 and at most 1 (got")
            );
        }
    }

    #[test]
    fn a_sweep_reaches_a_services_setting_and_a_calls_policy() {
        let mut doc = three_tier();
        doc["sweep"] = json!({"path": "services.backend.concurrency", "values": [1, 2, 16],
            "second": {"path": "services.frontend.calls.1.policy.retry.max_attempts", "values": [1, 5]}});
        let e = load(&doc);
        assert_eq!(e.points.len(), 6);
        let sweep = e.sweep.as_ref().unwrap();
        assert_eq!(sweep.base_value, Some(json!(4)));
        assert_eq!(sweep.label, "backend concurrency");
        for (k, point) in e.points.iter().enumerate() {
            let s = &point.variants[0].scenario;
            assert_eq!(names(s), ["frontend", "backend", "cache"]);
            assert_eq!(concurrency(s, 1), Some([1, 2, 16][k / 2]));
            let attempts = s.services[0].calls[1].policy.retry.max_attempts;
            assert_eq!(attempts, Some([1, 5][k % 2]));
            assert_eq!(s.services[0].calls[0].policy.retry.max_attempts, Some(3));
        }
        // A sweep value that breaks a rule says where and which value.
        doc["sweep"] = json!({"path": "services.backend.concurrency", "values": [0]});
        let found = problems(&doc);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].path, "services.backend.concurrency");
        assert!(
            found[0]
                .message
                .contains("(with services.backend.concurrency = 0)"),
            "{}",
            found[0].message
        );
        // A misspelt service is not silently added as a service of one setting.
        doc["sweep"] = json!({"path": "services.bakend.concurrency", "values": [1]});
        let found = problems(&doc);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].path, "sweep.path");
        assert!(
            found[0].message.starts_with(
                "\"services.bakend.concurrency\" names no service of the file (got \"bakend\"); did you mean \"backend\"?"
            ),
            "{}",
            found[0].message
        );
    }

    #[test]
    fn a_variant_overrides_a_calls_policy() {
        let mut doc = three_tier();
        // A merge patch replaces a list whole: the variant writes the calls out again.
        doc["variants"] = json!([
            {"name": "base"},
            {"name": "bulkhead", "patch": {"services": {"frontend": {"calls": [
                {"to": "cache"},
                {"to": "backend", "policy": {"timeout": "50ms",
                    "bulkhead": {"max_concurrent": 2, "max_wait": "1ms"},
                    "retry": {"max_attempts": 1}}}
            ]}}}},
            {"name": "no cache", "patch": {"services": {"cache": null, "frontend": {"calls": [
                {"to": "backend", "policy": {"timeout": "50ms"}}
            ]}}}},
            {"name": "extra", "patch": {"services": {"audit": {"service_time": {"constant": "1ms"}},
                "frontend": {"calls": [{"to": "audit"}, {"to": "backend"}, {"to": "cache"}]}}}}
        ]);
        let e = load(&doc);
        let v = &e.points[0].variants;
        assert!(v[0].scenario.services[0].calls[1].policy.bulkhead.is_none());
        let p = &v[1].scenario.services[0].calls[1].policy;
        assert_eq!(p.bulkhead.unwrap().max_concurrent, 2);
        assert_eq!(p.retry.max_attempts, Some(1));
        // A service removed with null leaves the others in their order; one a patch adds
        // comes last.
        assert_eq!(names(&v[2].scenario), ["frontend", "backend"]);
        assert_eq!(
            names(&v[3].scenario),
            ["frontend", "backend", "cache", "audit"]
        );
        // A variant that calls nothing new leaves a service never called.
        doc["variants"] = json!([{"name": "orphan", "patch": {"services": {"frontend": {"calls": [
            {"to": "backend"}
        ]}}}}]);
        let found = problems(&doc);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].path, "services.cache");
        assert!(
            found[0].message.starts_with("is never called"),
            "{}",
            found[0].message
        );
        assert!(
            found[0].message.ends_with("(in variants[0] \"orphan\")"),
            "{}",
            found[0].message
        );
    }

    /// `scenario.resolved.json` of a call graph is a scenario itself (`retrystorm report`
    /// loads it again): it loads to the same resolved form.
    #[test]
    fn a_resolved_graph_loads_again_to_itself() {
        let mut doc = three_tier();
        doc["services"]["frontend"]["call_mode"] = json!("parallel");
        doc["services"]["frontend"]["calls"][0]["fraction"] = json!(0.25);
        doc["services"]["frontend"]["calls"][1]["policy"] = json!({"timeout": "50ms",
            "bulkhead": {"max_concurrent": 2}, "fallback": {"latency": {"constant": "3ms"}},
            "propagate_deadline": true, "budget": {"ratio": {"percent": 0.2}},
            "breaker": {"window": {"count": 10}}});
        doc["policy"]["fallback"] = json!({});
        let resolved = resolved_json(&load(&doc));
        let first = &resolved["variants"][0]["scenario"];
        assert_eq!(first["clients"]["entry"], "frontend");
        // The services in the file's order, every default filled in.
        let order: Vec<&String> = first["services"].as_object().unwrap().keys().collect();
        assert_eq!(order, ["backend", "frontend", "cache"]);
        let cache = &first["services"]["cache"];
        assert_eq!(cache["concurrency"], 1);
        assert_eq!(cache["queue_limit"], "unlimited");
        assert_eq!(cache["call_mode"], "sequential");
        let calls = &first["services"]["frontend"]["calls"];
        assert_eq!(calls[1]["fraction"], 1.0);
        assert_eq!(calls[0]["policy"]["retry"]["max_attempts"], 3);
        assert_eq!(calls[0]["policy"]["propagate_deadline"], false);
        assert!(first["policy"].get("propagate_deadline").is_none());
        assert!(first.get("server").is_none());
        let mut again = first.clone();
        again["name"] = json!("three-tier");
        assert_eq!(resolved_json(&load(&again)), resolved);
    }

    #[test]
    fn an_existing_rule_names_the_service_or_call() {
        let mut doc = three_tier();
        doc["services"]["backend"]["concurrency"] = json!(0);
        doc["services"]["frontend"]["calls"][1]["policy"]["retry"] = json!({"max_attempts": 0});
        doc["services"]["cache"]["faults"] =
            json!([{"from": "0.1s", "to": "0.2s", "outage": "drop"}]);
        // Without the line and column, which the text of the test document decides.
        let found: Vec<String> = problems(&doc)
            .iter()
            .map(|p| p.to_string().split(" (line ").next().unwrap().to_string())
            .collect();
        assert_eq!(
            found,
            [
                "services.backend.concurrency: must be at least 1 (got 0)",
                "services.frontend.calls[1].policy.retry.max_attempts: must be at least 1 (got 0); it counts the first attempt, so 1 means no retries",
                "services.cache.faults[0].outage: \"drop\" never answers, so every call to this service needs a timeout or a deadline in its policy, and services.frontend.calls[0] has neither: without one a caller would wait for ever; give that call a timeout or deadline, or use \"reject\" for an outage that answers",
            ]
        );
    }

    #[test]
    fn hedges_and_idempotency_take_their_defaults() {
        let mut doc = three_tier();
        let s = scenario(&doc);
        for p in std::iter::once(&s.policy)
            .chain(s.services.iter().flat_map(|x| &x.calls).map(|c| &c.policy))
        {
            assert!(p.hedge.is_none() && p.idempotent && p.idempotency_key.is_none());
        }
        doc["policy"]["hedge"] = json!({"delay": "10ms"});
        doc["policy"]["idempotency_key"] = json!(true);
        doc["services"]["frontend"]["calls"][1]["policy"] = json!({
            "hedge": {"delay": "p95"}, "idempotent": false, "idempotency_key": {}});
        let s = scenario(&doc);
        let hedge = s.policy.hedge.unwrap();
        assert_eq!(
            hedge,
            HedgeConfig {
                delay: HedgeDelay::Fixed(SimDuration::from_millis(10)),
                max_hedges: 1,
                cancel: false,
                budget: None,
            }
        );
        let key = IdempotencyKey {
            ttl: SimDuration::from_secs(24 * 3600),
            cost: SimDuration::ZERO,
        };
        assert_eq!(s.policy.idempotency_key, Some(key));
        assert!(s.policy.idempotent);
        let call = &s.services[0].calls[1].policy;
        assert_eq!(
            call.hedge.unwrap().delay,
            HedgeDelay::Percentile {
                quantile: 0.95,
                window: DEFAULT_HEDGE_WINDOW,
            }
        );
        assert!(!call.idempotent);
        assert_eq!(call.idempotency_key, Some(key));
        // The other call keeps the defaults.
        let other = &s.services[0].calls[0].policy;
        assert!(other.hedge.is_none() && other.idempotent && other.idempotency_key.is_none());
    }

    #[test]
    fn every_form_of_hedge_and_idempotency_key_is_read() {
        let mut doc = three_tier();
        doc["policy"]["hedge"] =
            json!({"delay": "p99.9", "window": 20, "max_hedges": 10, "cancel": true, "budget": 1});
        doc["policy"]["idempotency_key"] = json!({"ttl": "1h", "cost": "1ms"});
        doc["services"]["frontend"]["calls"][0]["policy"] = json!({
            "hedge": {"delay": "2.5ms", "max_hedges": 3, "budget": 0.05},
            "idempotency_key": false, "idempotent": true});
        let s = scenario(&doc);
        assert_eq!(
            s.policy.hedge,
            Some(HedgeConfig {
                delay: HedgeDelay::Percentile {
                    quantile: 0.999,
                    window: 20
                },
                max_hedges: 10,
                cancel: true,
                budget: Some(1.0),
            })
        );
        assert_eq!(
            s.policy.idempotency_key,
            Some(IdempotencyKey {
                ttl: SimDuration::from_secs(3600),
                cost: SimDuration::from_millis(1),
            })
        );
        let call = &s.services[0].calls[0].policy;
        assert_eq!(
            call.hedge,
            Some(HedgeConfig {
                delay: HedgeDelay::Fixed(SimDuration::from_nanos(2_500_000)),
                max_hedges: 3,
                cancel: false,
                budget: Some(0.05),
            })
        );
        assert!(call.idempotency_key.is_none() && call.idempotent);
        // The window's bounds are inclusive.
        doc["policy"]["hedge"] = json!({"delay": "p50", "window": MAX_HEDGE_WINDOW});
        assert_eq!(
            scenario(&doc).policy.hedge.unwrap().delay,
            HedgeDelay::Percentile {
                quantile: 0.5,
                window: 1_000_000
            }
        );
    }

    #[test]
    fn hedge_and_idempotency_rules_name_the_path_the_value_and_the_fix() {
        let mut doc = three_tier();
        let call = "services.frontend.calls[1].policy";
        doc["services"]["frontend"]["calls"][1]["policy"] = json!({
            "hedge": {"delay": "10ms", "window": 100, "max_hedges": 11, "budget": 0}});
        doc["policy"]["hedge"] = json!({"delay": "p100", "window": 19});
        doc["policy"]["idempotency_key"] = json!({"ttl": "0s", "cost": "1"});
        let found: Vec<String> = problems(&doc).iter().map(|p| p.to_string()).collect();
        let expected = [
            format!(
                "{call}.hedge.window: applies to a percentile delay such as \"p95\" only (got 100 with delay \"10ms\")"
            ),
            format!("{call}.hedge.max_hedges: must be at least 1 and at most 10 (got 11)"),
            format!("{call}.hedge.budget: must be a share above 0 and at most 1 (got 0)"),
            "policy.hedge.delay: must be a percentile above p0 and below p100 (got \"p100\")"
                .to_string(),
            "policy.hedge.window: must be at least 20 and at most 1000000 (got 19)".to_string(),
            "policy.idempotency_key.ttl: must be longer than zero (got \"0s\")".to_string(),
            "policy.idempotency_key.cost: a duration needs a unit (got \"1\")".to_string(),
        ];
        assert_eq!(found.len(), expected.len(), "{found:#?}");
        for e in &expected {
            assert!(
                found.iter().any(|f| f.contains(e.as_str())),
                "{e} not in {found:#?}"
            );
        }
    }

    #[test]
    fn hedges_and_keys_on_calls_to_an_occ_service_are_refused() {
        let mut doc = three_tier();
        doc["services"]["backend"] = json!({"kind": "occ"});
        doc["services"]["frontend"]["calls"][1]["policy"] = json!({"timeout": "50ms",
            "hedge": {"delay": "1ms"}, "idempotent": false, "idempotency_key": true});
        // The call to the queue service may hedge.
        doc["services"]["frontend"]["calls"][0]["policy"] = json!({"hedge": {"delay": "1ms"}});
        let found: Vec<String> = problems(&doc).iter().map(|p| p.to_string()).collect();
        assert_eq!(found.len(), 3, "{found:#?}");
        for key in ["hedge", "idempotent", "idempotency_key"] {
            let start = format!(
                "services.frontend.calls[1].policy.{key}: is not supported on calls to \"backend\", of kind \"occ\": an occ attempt is a read and a conditional write"
            );
            assert!(
                found
                    .iter()
                    .any(|f| f.starts_with(&start) && f.contains(&format!("; remove {key}"))),
                "{start} not in {found:#?}"
            );
        }
        // What says "off" is no setting to refuse.
        doc["services"]["frontend"]["calls"][1]["policy"] =
            json!({"idempotent": true, "idempotency_key": false});
        scenario(&doc);
        // The clients towards an occ server, or an occ entry.
        let single = json!({"name": "s", "duration": "1s",
            "clients": {"count": 1, "workload": {"open": {"rate_per_s": 1}}},
            "server": {"kind": "occ"}, "policy": {"hedge": {"delay": "p90"}}});
        let found: Vec<String> = problems(&single).iter().map(|p| p.to_string()).collect();
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(
            found[0].starts_with(
                "policy.hedge: is not supported on calls to the server, of kind \"occ\""
            )
        );
        let mut entry = three_tier();
        entry["services"]["frontend"] = json!({"kind": "occ"});
        entry["services"]["x"] = json!({"kind": "occ"});
        entry["clients"]["entry"] = json!("x");
        entry["policy"]["idempotency_key"] = json!({"ttl": "1s"});
        let found: Vec<String> = problems(&entry).iter().map(|p| p.to_string()).collect();
        assert!(
            found.iter().any(|f| f.starts_with(
                "policy.idempotency_key: is not supported on calls to \"x\", of kind \"occ\""
            )),
            "{found:#?}"
        );
    }

    #[test]
    fn a_variant_and_a_sweep_set_hedges_and_idempotency() {
        let mut doc = three_tier();
        doc["policy"]["hedge"] = json!({"delay": "10ms"});
        doc["variants"] = json!([
            {"name": "base", "patch": {}},
            {"name": "budgeted", "patch": {"policy": {"hedge": {"budget": 0.1, "cancel": true},
                                                      "idempotent": false}}},
            {"name": "percentile", "patch": {"policy": {"hedge": {"delay": "p99", "window": 50}}}},
            {"name": "unhedged", "patch": {"policy": {"hedge": null, "idempotency_key": true}}}
        ]);
        let e = load(&doc);
        let v = &e.points[0].variants;
        // A patch's null removes the hedge.
        assert!(v[3].scenario.policy.hedge.is_none());
        assert!(v[3].scenario.policy.idempotency_key.is_some());
        let h = |i: usize| v[i].scenario.policy.hedge.unwrap();
        assert_eq!(h(0).max_hedges, 1);
        assert_eq!(h(1).budget, Some(0.1));
        assert!(h(1).cancel && !v[1].scenario.policy.idempotent);
        assert_eq!(h(1).delay, HedgeDelay::Fixed(SimDuration::from_millis(10)));
        assert_eq!(
            h(2).delay,
            HedgeDelay::Percentile {
                quantile: 0.99,
                window: 50
            }
        );
        // A sweep of the delay over durations and a percentile, on a call's policy.
        let mut doc = three_tier();
        doc["sweep"] = json!({"path": "services.frontend.calls.1.policy.hedge.delay",
                              "values": ["1ms", "5ms", "p90"]});
        let e = load(&doc);
        let delays: Vec<HedgeDelay> = e
            .points
            .iter()
            .map(|p| {
                p.variants[0].scenario.services[0].calls[1]
                    .policy
                    .hedge
                    .unwrap()
                    .delay
            })
            .collect();
        assert_eq!(
            delays,
            [
                HedgeDelay::Fixed(SimDuration::from_millis(1)),
                HedgeDelay::Fixed(SimDuration::from_millis(5)),
                HedgeDelay::Percentile {
                    quantile: 0.9,
                    window: DEFAULT_HEDGE_WINDOW
                },
            ]
        );
        assert_eq!(e.sweep.unwrap().label, "hedge delay");
        // Sweeps of max_hedges and of idempotent.
        let mut doc = three_tier();
        doc["policy"]["hedge"] = json!({"delay": "10ms"});
        doc["sweep"] = json!({"path": "policy.hedge.max_hedges", "values": [1, 3],
                              "second": {"path": "policy.idempotent", "values": [true, false]}});
        let e = load(&doc);
        let swept: Vec<(u32, bool)> = e
            .points
            .iter()
            .map(|p| {
                let policy = &p.variants[0].scenario.policy;
                (policy.hedge.unwrap().max_hedges, policy.idempotent)
            })
            .collect();
        assert_eq!(swept, [(1, true), (1, false), (3, true), (3, false)]);
    }

    #[test]
    fn a_resolved_hedge_and_key_load_again_to_themselves() {
        let mut doc = three_tier();
        doc["policy"]["hedge"] = json!({"delay": "p99.9", "window": 200, "budget": 0.05});
        doc["policy"]["idempotency_key"] = json!(true);
        doc["services"]["frontend"]["calls"][1]["policy"] = json!({
            "hedge": {"delay": "3ms", "max_hedges": 2, "cancel": true},
            "idempotent": false, "idempotency_key": {"ttl": "90s", "cost": "250us"}});
        let resolved = resolved_json(&load(&doc));
        let first = &resolved["variants"][0]["scenario"];
        assert_eq!(
            first["policy"]["hedge"],
            json!({"delay": "p99.9", "window": 200, "max_hedges": 1, "cancel": false, "budget": 0.05})
        );
        assert_eq!(
            first["policy"]["idempotency_key"],
            json!({"ttl": "24h", "cost": "0s"})
        );
        assert!(first["policy"].get("idempotent").is_none());
        let call = &first["services"]["frontend"]["calls"][1]["policy"];
        assert_eq!(
            call["hedge"],
            json!({"delay": "3ms", "max_hedges": 2, "cancel": true})
        );
        assert_eq!(call["idempotent"], json!(false));
        assert_eq!(
            call["idempotency_key"],
            json!({"ttl": "90s", "cost": "250us"})
        );
        // Settings left out are not written: the echo of a policy without them is unchanged.
        let plain = &first["services"]["frontend"]["calls"][0]["policy"];
        for key in ["hedge", "idempotent", "idempotency_key"] {
            assert!(plain.get(key).is_none(), "{key}");
        }
        let mut again = first.clone();
        again["name"] = json!("three-tier");
        assert_eq!(resolved_json(&load(&again)), resolved);
    }

    #[test]
    fn adaptive_throttles_take_their_defaults_and_echo_to_themselves() {
        use crate::scenario::ThrottleConfig;
        let mut doc = three_tier();
        assert!(scenario(&doc).policy.adaptive_throttle.is_none());
        doc["policy"]["adaptive_throttle"] = json!(true);
        doc["services"]["frontend"]["calls"][1]["policy"] =
            json!({"adaptive_throttle": {"k": 1.1, "window": "30s"}});
        doc["services"]["frontend"]["calls"][0]["policy"] = json!({"adaptive_throttle": false});
        let s = scenario(&doc);
        assert_eq!(
            s.policy.adaptive_throttle,
            Some(ThrottleConfig {
                k_micros: 2_000_000,
                window: SimDuration::from_secs(120),
            })
        );
        let call = s.services[0].calls[1].policy.adaptive_throttle.unwrap();
        assert_eq!(call.k_micros, 1_100_000);
        assert_eq!(call.k(), 1.1);
        assert_eq!(call.window, SimDuration::from_secs(30));
        assert!(s.services[0].calls[0].policy.adaptive_throttle.is_none());
        let resolved = resolved_json(&load(&doc));
        let first = &resolved["variants"][0]["scenario"];
        assert_eq!(
            first["policy"]["adaptive_throttle"],
            json!({"k": 2.0, "window": "2m"})
        );
        let calls = &first["services"]["frontend"]["calls"];
        assert_eq!(
            calls[1]["policy"]["adaptive_throttle"],
            json!({"k": 1.1, "window": "30s"})
        );
        // Kept as written where it is off, and left out where the file has none.
        assert_eq!(calls[0]["policy"]["adaptive_throttle"], json!(false));
        assert!(
            first["services"]["backend"]
                .get("adaptive_throttle")
                .is_none()
        );
        let mut again = first.clone();
        again["name"] = json!("three-tier");
        assert_eq!(resolved_json(&load(&again)), resolved);
    }
}
