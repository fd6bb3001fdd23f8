//! Services run as pools of replicas behind a balancer, against queueing theory and
//! probability: the power of two choices (Mitzenmacher), random routing as independent M/M/1
//! queues, round robin as E_N/M/1 queues, and a crashed replica with routes that stick, routes
//! drawn per attempt and retries that avoid the replicas already tried (Envoy's
//! `previous_hosts`). Every expected value is derived here from the model, never from a run.

use crate::{assert_close, metric, run_text, variant};

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
