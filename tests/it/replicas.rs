//! Services run as pools of replicas behind a balancer, against queueing theory and
//! probability: the power of two choices (Mitzenmacher), random routing as independent M/M/1
//! queues, round robin as E_N/M/1 queues, and a crashed replica with routes that stick, routes
//! drawn per attempt and retries that avoid the replicas already tried (Envoy's
//! `previous_hosts`). Every expected value is derived here from the model, never from a run.

use retrystorm::metrics::ExperimentResult;
use retrystorm::scenario::LoadOptions;

use crate::{assert_close, metric, run_bundled, run_text, variant};

/// The mean time in system, in service times, of the supermarket model with two choices as
/// the number of queues grows (Mitzenmacher, "The Power of Two Choices in Randomized Load
/// Balancing", 2001): the sum over i >= 1 of lambda^(2^i - 2).
fn two_choices_limit(lambda: f64) -> f64 {
    (1..30).map(|i| lambda.powi((1 << i) - 2)).sum()
}

#[test]
fn two_choices_come_near_mitzenmachers_limit_and_random_routing_near_m_m_1() {
    // 100 replicas of one worker each, exponential service of 10 ms (mu = 100/s), offered
    // 90/s per replica (lambda = 0.9 of a service rate). One balancer for the clients' edge,
    // no network delay and no timeout: what it has out to a replica is what that replica
    // holds, waiting or in service, which is the queue length the closed form assumes.
    let text = r#"{
      "name": "two-choices", "seed": 11, "replications": 4, "duration": "120s",
      "clients": { "count": 1, "workload": { "open": { "rate_per_s": 9000 } } },
      "server": { "concurrency": 1, "service_time": { "exponential": { "mean": "10ms" } },
                  "replicas": 100, "balancer": "least_request" },
      "policy": { "retry": { "max_attempts": 1 } },
      "variants": [
        { "name": "two choices", "patch": {} },
        { "name": "random", "patch": { "server": { "balancer": "random" } } }
      ]
    }"#;
    let (_, result) = run_text(text);
    let limit = two_choices_limit(0.9);
    assert_close("the closed form at 0.9", limit, 2.614, 0.001);
    let (two, half) = metric(variant(&result, "two choices"), "latency_ms.mean");
    let two = two / 10.0;
    // With 100 queues the fixed point is approached from above: a finite pool has more
    // chance of drawing two busy replicas than the limit's independent queues, and
    // Mitzenmacher's simulations at n = 100 sit about 2 % over the limit. The run starts
    // empty, which pulls the mean down by less than 1 %: the simulated mean must lie at most
    // 4 % above the limit and not more than 1 % below it.
    assert!(
        two > limit * 0.99 && two < limit * 1.04,
        "two choices: {two} service times (± {}), limit {limit}",
        half / 10.0
    );
    // Random routing splits a Poisson stream into 100 independent M/M/1 queues at load 0.9:
    // 1 / (mu - lambda) = 100 ms, ten service times. It starts empty and relaxes slowly at
    // this load (in about 1 / (mu (1 - sqrt(rho))^2) = 3.8 s), so the mean of a 120 s run
    // lies up to a few percent below.
    let (random, _) = metric(variant(&result, "random"), "latency_ms.mean");
    let random = random / 10.0;
    assert!(
        random > 9.5 && random < 10.3,
        "random: {random} service times, M/M/1 gives 10"
    );
}

/// The root in (0, 1) of sigma = A*(mu (1 - sigma)) for Erlang-`k` interarrival times of
/// rate `lambda` each phase (mean k / lambda): A*(s) = (lambda / (lambda + s))^k. The
/// iteration from 0 climbs monotonically to the smallest root, which lies below 1 when the
/// load, lambda / (k mu), is below 1.
fn erlang_sigma(k: i32, lambda: f64, mu: f64) -> f64 {
    let mut sigma = 0.0;
    for _ in 0..10_000 {
        sigma = (lambda / (lambda + mu * (1.0 - sigma))).powi(k);
    }
    sigma
}

#[test]
fn random_routing_gives_m_m_1_and_round_robin_gives_erlang_arrivals() {
    // Four replicas of one worker, mu = 100/s, and 320 requests per second: 80 per replica,
    // load 0.8.
    let text = r#"{
      "name": "routing", "seed": 5, "replications": 8, "duration": "400s",
      "clients": { "count": 1, "workload": { "open": { "rate_per_s": 320 } } },
      "server": { "concurrency": 1, "service_time": { "exponential": { "mean": "10ms" } },
                  "replicas": 4, "balancer": "random" },
      "policy": { "retry": { "max_attempts": 1 } },
      "variants": [
        { "name": "random", "patch": {} },
        { "name": "round robin", "patch": { "server": { "balancer": "round_robin" } } }
      ]
    }"#;
    let (_, result) = run_text(text);
    let mu = 100.0;
    // Random: each replica sees a Poisson stream of 80/s, an M/M/1 queue:
    // W = 1 / (mu - lambda') = 50 ms.
    let random = variant(&result, "random");
    let (mean, half) = metric(random, "latency_ms.mean");
    assert_close(
        "random routing, mean time in system (ms)",
        mean,
        50.0,
        2.0 * half.max(0.5),
    );
    // Every replica of the four serves a quarter of the attempts.
    for k in 0..4 {
        let (attempts, _) = metric(random, &format!("replicas.{k}.attempts"));
        let (all, _) = metric(random, "server.attempts");
        assert_close("a replica's share", attempts / all, 0.25, 0.005);
    }
    // Round robin: each replica takes every fourth arrival of a Poisson stream of 320/s, so
    // its interarrival times are Erlang-4 with phase rate 320/s. For E_k/M/1 the waiting
    // time is W_q = sigma / (mu (1 - sigma)), sigma the root in (0, 1) of
    // sigma = A*(mu (1 - sigma)), A* the Laplace transform of the interarrival time.
    let sigma = erlang_sigma(4, 320.0, mu);
    assert!((0.69..0.71).contains(&sigma), "sigma {sigma}");
    let expected = 1000.0 * (sigma / (mu * (1.0 - sigma)) + 1.0 / mu);
    let (mean, half) = metric(variant(&result, "round robin"), "latency_ms.mean");
    assert_close(
        "round robin, mean time in system (ms)",
        mean,
        expected,
        2.0 * half.max(0.3),
    );
    assert!(
        expected < 35.0,
        "round robin waits less than random: {expected}"
    );
}

#[test]
fn a_crashed_replica_fails_requests_by_how_retries_are_routed() {
    // Four replicas, replica 0 answering every attempt `error` for the whole run, a random
    // balancer, two attempts and no backoff. 20 000 requests per variant.
    let text = r#"{
      "name": "crashed-replica", "seed": 3, "replications": 4, "duration": "50s",
      "clients": { "count": 10, "workload": { "open": { "rate_per_s": 100 } } },
      "server": { "concurrency": 100, "service_time": { "constant": "1ms" },
                  "replicas": 4, "balancer": "random",
                  "faults": [ { "from": "0s", "to": "60s", "outage": "reject", "replica": 0 } ] },
      "policy": { "retry": { "max_attempts": 2 } },
      "variants": [
        { "name": "sticky", "patch": { "server": { "sticky": true } } },
        { "name": "per attempt", "patch": {} },
        { "name": "previous hosts", "patch": { "policy": { "retry": {
            "retry_host_predicate": ["previous_hosts"] } } } },
        { "name": "previous hosts, 20 tries", "patch": { "policy": { "retry": {
            "retry_host_predicate": ["previous_hosts"],
            "host_selection_retry_max_attempts": 20 } } } }
      ]
    }"#;
    let (_, result) = run_text(text);
    let n = 4.0 * 5000.0;
    let within = |p: f64| 4.0 * (p * (1.0 - p) / n).sqrt();
    // Sticky: a request fails when its first replica is the crashed one, 1/4.
    // Per attempt: both independent draws hit it, 1/16.
    // previous_hosts with one reselection: the first attempt hits it (1/4), the retry's pick
    // hits it again (1/4), and so does the one reselection (1/4): 1/64.
    for (name, p) in [
        ("sticky", 0.25),
        ("per attempt", 1.0 / 16.0),
        ("previous hosts", 1.0 / 64.0),
    ] {
        let (share, _) = metric(variant(&result, name), "failure_rate");
        assert_close(name, share, p, within(p));
    }
    // With twenty reselections a retry lands on the crashed replica with probability
    // (1/4)^21: no request fails.
    let (share, _) = metric(variant(&result, "previous hosts, 20 tries"), "failure_rate");
    assert_eq!(share, 0.0);
    // The crashed replica answered every attempt it got from its outage, and only it did.
    let v = variant(&result, "per attempt");
    let (rejected, _) = metric(v, "replicas.0.outage_rejected");
    let (attempts, _) = metric(v, "replicas.0.attempts");
    assert_eq!(rejected, attempts);
    for k in 1..4 {
        let path = format!("replicas.{k}.attempts");
        assert!(metric(v, &path).0 > 0.0, "{path}");
        let v = serde_json::to_value(&v.metrics).unwrap();
        assert!(v["replicas"][k].get("outage_rejected").is_none());
    }
}

#[test]
fn bundled_crashed_replica_fails_a_quarter_a_sixteenth_and_a_sixty_fourth_during_the_crash() {
    // crashed-replica.json: 400 requests/s for 40 s to 4 replicas behind a random balancer,
    // replica 0 answering `error` at once from 10 s to 30 s, 2 attempts. Half the requests
    // start in the crash; the others meet four healthy replicas and never fail.
    let (experiment, result) = run_bundled("crashed-replica", &LoadOptions::default());
    assert_eq!(experiment.replications, 10);
    let requests = |name: &str| metric(variant(&result, name), "requests").0;
    let n = requests("sticky") * 10.0;
    // Requests are independent: a share of n of them has a binomial spread. A request that
    // starts within a backoff (at most 100 ms) of the crash's edges may meet it with one
    // attempt only, a share of 0.2 s / 40 s of the requests at most, which moves no share
    // below by more than half a percent of itself.
    let within = |p: f64| 3.0 * (p * (1.0 - p) / n).sqrt() + 0.005 * p;
    // The failure shares of the docs (section 6): sticky 1/4, balanced anew 1/16, and
    // previous_hosts with one reselection 1/64, over the half of the run under the crash.
    for (name, p) in [
        ("sticky", 0.25),
        ("per attempt", 1.0 / 16.0),
        ("previous hosts", 1.0 / 64.0),
    ] {
        let (share, _) = metric(variant(&result, name), "failure_rate");
        assert_close(name, share, p / 2.0, within(p / 2.0));
    }
    // Where the retries went, per request: every replica gets a quarter of the first
    // attempts; a quarter of the requests in the crash (an eighth of all) retry.
    // Sticky: every retry goes back to replica 0, 1/4 + 1/8 = 3/8, the others 1/4.
    // Per attempt: a retry lands anywhere, 1/4 + 1/32 = 9/32 each, replica 0 included.
    // previous_hosts: it lands on replica 0 only if the pick and the reselection both do,
    // 1/16: replica 0 gets 1/4 + 1/128, each other 1/4 + (1/8)(15/16)/3 = 1/4 + 5/128.
    let shares: [(&str, [f64; 2]); 3] = [
        ("sticky", [3.0 / 8.0, 1.0 / 4.0]),
        ("per attempt", [9.0 / 32.0, 9.0 / 32.0]),
        ("previous hosts", [33.0 / 128.0, 37.0 / 128.0]),
    ];
    for (name, [first, other]) in shares {
        let v = variant(&result, name);
        for k in 0..4 {
            let (attempts, _) = metric(v, &format!("replicas.{k}.attempts"));
            let p = if k == 0 { first } else { other };
            assert_close(
                &format!("{name}: replica {k}'s attempts per request"),
                attempts / requests(name),
                p,
                within(p),
            );
        }
    }
    // Outlier detection (balanced anew, 5 consecutive 5xx eject for 30 s, a quarter of the
    // pool at most): replica 0 is ejected at its fifth error, some 50 ms into the crash, and
    // stays out to the first tick (every 10 s) at least 30 s later, 50 s, past the run's end.
    // So exactly one ejection a replication; a request fails only when both its attempts were
    // among those 5 errors, at most 2.5 requests a replication; replica 0 serves only the
    // first attempts of the first 10 s, a sixteenth of the requests, and its 5 errors.
    let v = variant(&result, "outlier detection");
    // The same count in every replication: summary.json gives it no interval.
    let ejections =
        serde_json::to_value(&v.metrics).expect("metrics serialise")["replicas"][0]["ejections"]
            .as_f64();
    assert_eq!(ejections, Some(1.0));
    let (failed, _) = metric(v, "failure_rate");
    assert!(
        failed * requests("outlier detection") <= 2.5,
        "{failed} of the requests failed"
    );
    let (attempts, _) = metric(v, "replicas.0.attempts");
    let share = attempts / requests("outlier detection");
    assert_close(
        "replica 0 with outlier detection",
        share,
        1.0 / 16.0,
        within(1.0 / 16.0) + 5.0 / requests("outlier detection"),
    );
    // The figure of load per replica is drawn, and its series add up to the table's counts.
    let v = variant(&result, "sticky");
    assert_eq!(v.replica_series.len(), 4);
    for (k, series) in v.replica_series.iter().enumerate() {
        let sent: f64 = series
            .rows
            .iter()
            .map(|r| r[retrystorm::metrics::Column::Attempts as usize])
            .sum();
        let (received, _) = metric(v, &format!("replicas.{k}.attempts"));
        assert_close("sent and received", sent, received, 1e-9 * received);
    }
}

/// The mean latency of `name` at sweep point `p` of `result`, in service times (10 ms), with
/// its 95 % half-width.
fn service_times(result: &ExperimentResult, p: usize, name: &str) -> (f64, f64) {
    let v = result.points[p]
        .variants
        .iter()
        .find(|v| v.name == name)
        .unwrap_or_else(|| panic!("no variant {name:?}"));
    let (mean, half) = metric(v, "latency_ms.mean");
    (mean / 10.0, half / 10.0)
}

#[test]
fn bundled_balancers_near_saturation_part_as_queueing_theory_says() {
    // balancers-near-saturation.json: 16 replicas of one worker, 10 ms exponential service
    // (mu = 100/s each), no network delay, one balancer, offered 50 % to 95 % of capacity;
    // the focus point, 1440/s, is lambda = 0.9 per replica. 3 replications of 60 s.
    let (experiment, result) = run_bundled("balancers-near-saturation", &LoadOptions::default());
    let focus = experiment.sweep.as_ref().unwrap().focus();
    let rate = |p: usize| result.points[p].value.as_ref().unwrap().as_f64().unwrap();
    assert_eq!(rate(focus), 1440.0);
    // Each run starts empty and an M/M/1 queue at 0.9 relaxes in about
    // 1 / (mu (1 - sqrt(rho))^2) = 3.8 s, so the mean over 60 s lies below the steady state by
    // at most 3.8 / 60, 6.4 %. Three standard errors are 3 / 4.30 of a 95 % half-width of 3
    // replications (Student's t with 2 degrees of freedom).
    let bias = 3.8 / 60.0;
    let band = |what: &str, (mean, half): (f64, f64), expected: f64| {
        let se3 = 3.0 * half / 4.303;
        assert!(
            mean >= expected * (1.0 - bias) - se3 && mean <= expected + se3,
            "{what}: {mean} ± {half} service times, theory {expected}"
        );
    };
    // Random routing: 16 independent M/M/1 queues, 1 / (1 - rho) = 10 service times.
    let random = service_times(&result, focus, "random");
    band("random at 0.9", random, 10.0);
    // Round robin: Erlang-16 gaps at each replica, an E_16/M/1 queue: W = sigma / (mu (1 -
    // sigma)) + 1 / mu, sigma the root of sigma = (lambda / (lambda + mu (1 - sigma)))^16 with
    // the whole stream's rate as the phase rate; relaxes faster than M/M/1.
    let sigma = erlang_sigma(16, 1440.0, 100.0);
    let round_robin = 100.0 * (sigma / (100.0 * (1.0 - sigma)) + 0.01);
    assert!((5.4..5.6).contains(&round_robin), "{round_robin}");
    band(
        "round robin at 0.9",
        service_times(&result, focus, "round robin"),
        round_robin,
    );
    // Two choices: Mitzenmacher's limit, approached from above; a pool of 16 draws two busy
    // replicas more often than the limit's independent queues. The excess is about 2 % at
    // 100 replicas and shrinks as 1/n, so at 16 it stays under 6 x 2 %, 12 %.
    let limit = two_choices_limit(0.9);
    let (two, half) = service_times(&result, focus, "least request (2 choices)");
    assert!(
        two > limit * (1.0 - bias) && two < limit * 1.12 + 3.0 * half / 4.303,
        "two choices: {two} ± {half} service times, limit {limit}"
    );
    // Joining the shortest of all 16 queues waits less still, and random waits over three
    // times as long as two choices.
    let (shortest, _) = service_times(&result, focus, "least outstanding");
    assert!(shortest < two && 1.0 < shortest, "{shortest}");
    assert!(random.0 > 3.0 * two, "{random:?} {two}");
    // Along the sweep, the ratio of random's latency to two choices' grows with the load.
    let ratios: Vec<f64> = (0..result.points.len())
        .map(|p| {
            service_times(&result, p, "random").0
                / service_times(&result, p, "least request (2 choices)").0
        })
        .collect();
    assert!(ratios.windows(2).all(|w| w[0] < w[1]), "{ratios:?}");
}

/// A pool of 8 single-worker replicas, 10 ms exponential service, offered 720 requests/s
/// (0.9 of capacity) with no network delay, behind least_outstanding balancers, reached by
/// `callers` proxies (services of no service time that each take an equal, exclusive share
/// of the requests and call the pool), or by the entry itself with `callers` = 0.
fn callers_text(callers: usize, sees: &str) -> String {
    let front_calls = if callers == 0 {
        r#"[{"to": "backend"}]"#.to_string()
    } else {
        let share = 1.0 / callers as f64;
        let calls: Vec<String> = (0..callers)
            .map(|i| format!(r#"{{"to": "p{i}", "fraction": {share}}}"#))
            .collect();
        format!("[{}]", calls.join(", "))
    };
    let proxies: String = (0..callers)
        .map(|i| {
            format!(
                r#""p{i}": {{"concurrency": "unlimited", "service_time": {{"constant": "0ms"}},
                           "calls": [{{"to": "backend"}}]}},"#
            )
        })
        .collect();
    format!(
        r#"{{"name": "callers", "seed": 9, "replications": 6, "duration": "60s",
          "clients": {{"count": 1, "workload": {{"open": {{"rate_per_s": 720}}}}, "entry": "front"}},
          "services": {{
            "front": {{"concurrency": "unlimited", "service_time": {{"constant": "0ms"}},
                       "calls": {front_calls}}},
            {proxies}
            "backend": {{"concurrency": 1, "service_time": {{"exponential": {{"mean": "10ms"}}}},
                         "replicas": 8, "balancer": "least_outstanding",
                         "balancer_sees": "{sees}"}}}},
          "policy": {{"retry": {{"max_attempts": 1}}}}}}"#
    )
}

#[test]
fn a_balancer_that_sees_the_queue_balances_many_callers_as_one() {
    let run = |callers: usize, sees: &str| {
        let (_, result) = run_text(&callers_text(callers, sees));
        metric(&result.points[0].variants[0], "latency_ms.mean")
    };
    // One caller and no network delay: what the balancer has out to a replica is exactly
    // what the replica holds, so both views pick the same replicas and give the same run.
    let one = run(0, "outstanding");
    assert_eq!(one, run(0, "queue"), "one caller sees the queue either way");
    // Four callers: each balancer has out only its quarter of the pool's attempts. Seeing
    // the queue, each picks as one balancer of every attempt would, and the requests meet a
    // pool joined at the shortest queue as the single caller's are: the means agree within
    // three standard errors (a 95 % half-width of 6 replications is 2.57 of them).
    let (queue, queue_half) = run(4, "queue");
    let se = |half: f64| half / 2.571;
    let spread = 3.0 * (se(one.1).powi(2) + se(queue_half).powi(2)).sqrt();
    assert_close("four callers seeing the queue", queue, one.0, spread);
    // Seeing only what it has out, each balancer takes replicas the others have filled:
    // the mean is longer, by more than the spread.
    let (outstanding, outstanding_half) = run(4, "outstanding");
    let apart = 3.0 * (se(one.1).powi(2) + se(outstanding_half).powi(2)).sqrt();
    assert!(
        outstanding > one.0 + apart,
        "four callers seeing what they have out: {outstanding} ms against {} ms",
        one.0
    );
}

/// The problems `load_str` finds in a one-server file with `server` and `policy`, as `check`
/// prints them.
fn problems(server: &str, policy: &str) -> String {
    let text = format!(
        r#"{{"name": "bad", "duration": "1s",
            "clients": {{"count": 1, "workload": {{"open": {{"rate_per_s": 1}}}}}},
            "server": {server}, "policy": {policy}}}"#
    );
    match retrystorm::scenario::load_str(&text, "test", &Default::default()) {
        Ok(_) => panic!("{server} {policy} should be refused"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn replica_settings_are_refused_with_their_path_rule_value_and_fix() {
    let queue =
        |extra: &str| format!(r#"{{"service_time": {{"constant": "1ms"}}, "replicas": 4{extra}}}"#);
    let cases = [
        (
            r#"{"service_time": {"constant": "1ms"}, "replicas": 0}"#.to_string(),
            "{}",
            ["server.replicas", "got 0"],
        ),
        (
            r#"{"service_time": {"constant": "1ms"}, "replicas": 2000}"#.to_string(),
            "{}",
            ["server.replicas", "2000"],
        ),
        (
            queue(r#", "faults": [{"from": "0s", "to": "1s", "outage": "reject", "replica": 4}]"#),
            "{}",
            ["server.faults[0].replica", "0 to 3; got 4"],
        ),
        (
            queue(r#", "balancer": {"least_request": {"choice_count": 100}}"#),
            "{}",
            ["server.balancer.least_request.choice_count", "100"],
        ),
        (
            queue(r#", "balancer": "least_conn""#),
            "{}",
            ["server.balancer", "least_conn"],
        ),
        (
            queue(""),
            r#"{"retry": {"host_selection_retry_max_attempts": 3}}"#,
            [
                "policy.retry.host_selection_retry_max_attempts",
                "add \"retry_host_predicate\": [\"previous_hosts\"]",
            ],
        ),
        (
            r#"{"kind": "occ", "replicas": 2}"#.to_string(),
            "{}",
            ["server.replicas", "applies to a queue server only"],
        ),
        (
            r#"{"kind": "occ", "balancer_sees": "queue"}"#.to_string(),
            "{}",
            ["server.balancer_sees", "applies to a queue server only"],
        ),
        (
            queue(r#", "balancer_sees": "queues""#),
            "{}",
            ["server.balancer_sees", "queues"],
        ),
    ];
    for (server, policy, needles) in cases {
        let found = problems(&server, policy);
        for needle in needles {
            assert!(
                found.contains(needle),
                "{server} {policy}: {needle} in {found}"
            );
        }
    }
}

#[test]
fn report_md_has_a_table_per_replica_and_summary_json_names_the_replicas() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pool.json");
    std::fs::write(
        &file,
        r#"{
          "name": "pool", "seed": 1, "replications": 2, "duration": "5s",
          "clients": { "count": 10, "workload": { "open": { "rate_per_s": 100 } } },
          "server": { "concurrency": 4, "service_time": { "constant": "1ms" },
                      "replicas": 3, "balancer": "random",
                      "faults": [ { "from": "1s", "to": "2s", "outage": "reject", "replica": 2 } ] },
          "policy": { "retry": { "max_attempts": 2, "retry_host_predicate": ["previous_hosts"] } }
        }"#,
    )
    .unwrap();
    let out = dir.path().join("out");
    let run = crate::cli::retrystorm(
        dir.path(),
        &[
            "run",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ],
    );
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("### Per replica"), "{report}");
    for k in 0..3 {
        assert!(report.contains(&format!("| server #{k} |")), "{report}");
    }
    assert!(report.contains("outage rejected"), "{report}");
    // The scenario's words say what the pool, the fault and the retries do.
    for words in [
        "3 replicas behind a random balancer, each 4 workers",
        "Fault at replica 2 from 1s to 2s",
        "A retry avoids the replicas its request already tried (its balancer picks again at most once)",
    ] {
        assert!(report.contains(words), "{words} in {report}");
    }
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let v = &summary["variants"][0];
    assert_eq!(v["graph"]["services"][0]["replicas"], 3);
    let replicas = v["metrics"]["replicas"].as_array().unwrap();
    assert_eq!(replicas.len(), 3);
    // The service's attempts are its replicas' added up; only replica 2 had an outage.
    let sum: f64 = replicas
        .iter()
        .map(|r| r["attempts"].as_f64().unwrap())
        .sum();
    let all = v["metrics"]["services"][0]["attempts"].as_f64().unwrap();
    assert!((sum - all).abs() < 1e-6 * all, "{sum} {all}");
    assert!(replicas[2]["outage_rejected"].as_f64().unwrap() > 0.0);
    assert!(replicas[0].get("outage_rejected").is_none());
    // And `report DIR` renders it again from the folder alone.
    let again = crate::cli::retrystorm(dir.path(), &["report", out.to_str().unwrap()]);
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
}
