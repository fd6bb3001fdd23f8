//! Budget dilution (docs/reference-results.md section 15): the same total load split over N
//! clients, each with a budget of its own, lets through retries that grow with N, and one
//! budget shared by all of them does not. The expected counts are the closed forms derived
//! there; each simulated mean over R replications must lie within the interval that the
//! closed form's own variance gives it, or match exactly where the count is not random. A
//! test makes m such checks at once, so each interval is the 95 % one for all m together
//! (Bonferroni: z = the normal quantile of 1 - 0.05 / (2 m)), not 95 % each, which would fail
//! one test in two by chance alone.

use retrystorm::metrics::{ExperimentResult, VariantResult};
use retrystorm::scenario::LoadOptions;

use crate::{metric, run_bundled, run_text};

/// The variant `name` at the point `clients.count` = `n`.
fn at<'a>(result: &'a ExperimentResult, n: u64, name: &str) -> &'a VariantResult {
    result
        .points
        .iter()
        .find(|p| p.value.as_ref().and_then(|v| v.as_u64()) == Some(n))
        .unwrap_or_else(|| panic!("no sweep point {n}"))
        .variants
        .iter()
        .find(|v| v.name == name)
        .unwrap_or_else(|| panic!("no variant {name:?}"))
}

/// The sweep's client counts, in order.
fn counts(result: &ExperimentResult) -> Vec<u64> {
    result
        .points
        .iter()
        .map(|p| p.value.as_ref().and_then(|v| v.as_u64()).expect("a count"))
        .collect()
}

/// Asserts that `simulated` lies within `expected` ± `half_width` (and a rounding allowance
/// for counts that are not random, whose half-width is 0).
fn within(what: &str, simulated: f64, expected: f64, half_width: f64) {
    let tolerance = half_width + 1e-6 * expected.abs().max(1.0);
    assert!(
        (simulated - expected).abs() <= tolerance,
        "{what}: simulated {simulated}, closed form {expected} ± {half_width}"
    );
}

/// The normal quantile of 1 - 0.05 / 24: a 95 % interval for 12 checks together (the bundled
/// scenario's: no budget and per-client buckets at 5 client counts, per-client ratio budgets
/// at 2). Replication means are means of independent replications, and the variance is the
/// closed form's, so the normal quantile applies.
const Z95_OF_12: f64 = 2.865;

/// The normal quantile of 1 - 0.05 / 16: a 95 % interval for 8 checks together (the ratio
/// test's: per-client and shared budgets at 4 client counts).
const Z95_OF_8: f64 = 2.734;

/// Retries a gRPC token bucket of `max_tokens` lets through when every attempt fails: a
/// failed attempt takes a token and a retry goes out only while tokens > max_tokens / 2, so
/// after its k-th failure a full bucket allows the retry iff k < max_tokens / 2.
fn bucket_retries(max_tokens: f64) -> f64 {
    (max_tokens / 2.0).ceil() - 1.0
}

#[test]
fn bucket_retries_follow_the_tokens_rule() {
    // By hand: 10 tokens allow retries after failures 1-4 (9, 8, 7, 6 left), not after the
    // fifth (5 is not above 5); 11 allow 1-5 (6 > 5.5); 1 token allows none.
    assert_eq!(bucket_retries(10.0), 4.0);
    assert_eq!(bucket_retries(11.0), 5.0);
    assert_eq!(bucket_retries(1.0), 0.0);
}

#[test]
fn budget_dilution_token_buckets_let_through_the_closed_form() {
    // budget-dilution.json: 1000 requests/s, 5 ms hops, an outage from 10 s past the end of
    // the 40 s run, 5 attempts, a bucket of 10 tokens. A request started at or after
    // 10 s - 5 ms reaches the server in the outage: lambda T = 1000 * 30.005 such requests,
    // each making 5 attempts without a budget, every one of them failing.
    let (experiment, result) = run_bundled("budget-dilution", &LoadOptions::default());
    let replications = f64::from(experiment.replications);
    let lambda_t = 1000.0 * 30.005;
    let k = bucket_retries(10.0);
    assert_eq!(counts(&result), [1, 10, 100, 1000, 10000]);
    let mut last = 0.0;
    for n in counts(&result) {
        let retries = |name: &str| metric(at(&result, n, name), "retries").0;
        // No budget: 4 retries per request in the outage; the count of such requests is
        // Poisson with mean lambda T.
        within(
            &format!("no budget, {n} clients"),
            retries("no budget"),
            4.0 * lambda_t,
            Z95_OF_12 * 4.0 * (lambda_t / replications).sqrt(),
        );
        // Per client: k retries for every client that starts a request in the outage, and
        // each of the n clients does so independently with probability 1 - exp(-lambda T / n)
        // (a Poisson stream split at random over the clients).
        let nf = n as f64;
        let p = 1.0 - (-lambda_t / nf).exp();
        let per_client = retries("token bucket per client");
        within(
            &format!("per-client buckets, {n} clients"),
            per_client,
            k * nf * p,
            Z95_OF_12 * k * (nf * p * (1.0 - p) / replications).sqrt(),
        );
        assert!(per_client > last, "dilution grows with the client count");
        last = per_client;
        // Shared: one bucket, k retries, whatever the client count.
        within(
            &format!("shared bucket, {n} clients"),
            retries("token bucket shared"),
            k,
            0.0,
        );
        let shared_ratio = retries("ratio 10 % shared");
        let per_client_ratio = retries("ratio 10 % per client");
        assert!(
            n == 1 || per_client_ratio > shared_ratio,
            "{n} clients: per-client ratio budgets {per_client_ratio} against shared {shared_ratio}"
        );
        // A ratio budget of 10 % plus 1 per second over 1 s allows floor(0.1 S + 1) retries
        // in a window holding S starts: 1 until S reaches 10. With 1000 clients or more a
        // client's window holds 10 starts with probability below 1e-7 (Poisson with mean 1
        // or less), so each budget refills one place as `refills` says, with its client's
        // requests that reach the outage: rate 1000 / n over 30.005 s.
        if n >= 1000 {
            let (mean, var) = refills(1000.0 / nf, 30.005, 1.0);
            within(
                &format!("per-client ratio budgets, {n} clients"),
                per_client_ratio,
                nf * mean,
                Z95_OF_12 * (nf * var / replications).sqrt(),
            );
        }
    }
    // At 10,000 clients the per-client buckets let through K N p / (4 lambda T) of what no
    // budget sends, nearly a third; the two intervals above bound the simulated share.
    let share = metric(at(&result, 10000, "token bucket per client"), "retries").0
        / metric(at(&result, 10000, "no budget"), "retries").0;
    let p = 1.0 - (-lambda_t / 10000.0).exp();
    let (allowed, allowed_hw) = (
        k * 10000.0 * p,
        Z95_OF_12 * k * (10000.0 * p * (1.0 - p) / replications).sqrt(),
    );
    let (demand, demand_hw) = (
        4.0 * lambda_t,
        Z95_OF_12 * 4.0 * (lambda_t / replications).sqrt(),
    );
    let (low, high) = (
        (allowed - allowed_hw) / (demand + demand_hw),
        (allowed + allowed_hw) / (demand - demand_hw),
    );
    assert!(
        (0.31..0.33).contains(&(allowed / demand)) && (low..=high).contains(&share),
        "share {share}, closed form {} in [{low}, {high}]",
        allowed / demand
    );
}

/// The mean and variance of the number of times one ratio budget refills in a total outage of
/// `t` seconds, when every window allows it the same k places (see section 15) and its
/// requests start as a Poisson stream of `rate` per second, with window `w` seconds: the j-th refill is at S_j = (j - 1) w + a Gamma(j, rate)
/// time (a window of retries, then the wait for the next start, memoryless), so
/// P(S_j < t) = P(Poisson(rate (t - (j - 1) w)) >= j), and E[M] = sum_j P(S_j < t),
/// E[M^2] = sum_j (2 j - 1) P(S_j < t).
fn refills(rate: f64, t: f64, w: f64) -> (f64, f64) {
    let (mut mean, mut square) = (0.0, 0.0);
    let mut j = 1u32;
    while f64::from(j - 1) * w < t {
        let mu = rate * (t - f64::from(j - 1) * w);
        // P(Poisson(mu) < j), summed in logarithms so that a large mu does not underflow.
        let below: f64 = (0..j)
            .map(|i| {
                let ln_fact: f64 = (1..=i).map(|x| f64::from(x).ln()).sum();
                (-mu + f64::from(i) * mu.ln() - ln_fact).exp()
            })
            .sum();
        let p = (1.0 - below).max(0.0);
        mean += p;
        square += f64::from(2 * j - 1) * p;
        j += 1;
    }
    (mean, square - mean * mean)
}

#[test]
fn refills_match_hand_counts() {
    // A start every instant (rate -> infinity): refills at 0, w, 2w, ... below t: t = 2.5 s,
    // w = 1 s gives 3 and no variance.
    let (mean, var) = refills(1e6, 2.5, 1.0);
    assert!(
        (mean - 3.0).abs() < 1e-9 && var.abs() < 1e-6,
        "{mean} {var}"
    );
    // w = 0 cannot be written; a window much longer than the run refills once, when the
    // first request starts: probability 1 - exp(-rate t) = 1 - exp(-1).
    let (mean, _) = refills(0.5, 2.0, 100.0);
    assert!((mean - (1.0 - (-1.0f64).exp())).abs() < 1e-12, "{mean}");
}

#[test]
fn ratio_budget_floors_add_up_over_clients_as_the_closed_form_says() {
    // A ratio budget of percent 0 and min_per_s 2 over a 1 s window allows k = 2 retries in
    // any window. In a total outage with no delays and no backoff, a request's first failure
    // takes every free place at once (2 retries, then the third is denied: 5 attempts are
    // never reached), and the places all come free one window later; the next start then
    // takes them again. So each budget refills as a renewal process (see `refills`), with
    // its own clients' starts: rate 100 / N per client budget, 100 for the shared one.
    let (experiment, result) = run_text(
        r#"{
      "name": "ratio-floor", "seed": 17, "replications": 20, "duration": "20s",
      "clients": { "count": 1, "workload": { "open": { "rate_per_s": 100 } } },
      "server": { "concurrency": "unlimited", "service_time": { "constant": "0ms" },
                  "faults": [ { "from": "0s", "to": "1h", "outage": "reject" } ] },
      "policy": { "retry": { "max_attempts": 5 } },
      "variants": [
        { "name": "per client", "patch": { "policy": { "budget": { "scope": "per_client", "ratio": { "percent": 0, "min_per_s": 2, "window": "1s" } } } } },
        { "name": "shared", "patch": { "policy": { "budget": { "scope": "shared", "ratio": { "percent": 0, "min_per_s": 2, "window": "1s" } } } } }
      ],
      "sweep": { "path": "clients.count", "values": [1, 10, 100, 1000] }
    }"#,
    );
    let replications = f64::from(experiment.replications);
    let (k, t, w, lambda) = (2.0, 20.0, 1.0, 100.0);
    let (shared_mean, shared_var) = refills(lambda, t, w);
    for n in counts(&result) {
        let nf = n as f64;
        let (mean, var) = refills(lambda / nf, t, w);
        let retries = |name: &str| metric(at(&result, n, name), "retries").0;
        within(
            &format!("per-client ratio budgets, {n} clients"),
            retries("per client"),
            nf * k * mean,
            Z95_OF_8 * k * (nf * var / replications).sqrt(),
        );
        within(
            &format!("shared ratio budget, {n} clients"),
            retries("shared"),
            k * shared_mean,
            Z95_OF_8 * k * (shared_var / replications).sqrt(),
        );
        // Every request's last failure asks for a retry and is denied.
        let v = at(&result, n, "per client");
        assert_eq!(
            metric(v, "budget_denials").0,
            metric(v, "requests").0,
            "{n} clients"
        );
    }
}
