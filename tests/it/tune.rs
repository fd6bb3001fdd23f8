//! `retrystorm tune` against answers derived by hand: the front of independent failures,
//! the hedge delay at the 95th percentile, gRPC throttling's token-ratio threshold; racing
//! against the grid; determinism; bad tune files.

use std::path::Path;
use std::process::Command;

use retrystorm::report::charts::ImageFormat;
use retrystorm::tune::file::{RawTune, Tune, check};
use retrystorm::tune::front::Standing;
use retrystorm::tune::{Found, Progress, Searched, decide, search};
use serde_json::{Value, json};

struct Quiet;

impl Progress for Quiet {
    fn round(&self, _: usize, _: u32, _: u64) {}
    fn replication(&self) {}
}

fn data() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tune")
}

fn tune_of(doc: Value) -> Tune {
    let raw: RawTune = serde_json::from_value(doc).expect("the tune's shape");
    check(raw, &data()).unwrap_or_else(|e| panic!("tune refused: {e:?}"))
}

fn tuned(doc: Value) -> (Tune, Searched, Found) {
    let tune = tune_of(doc);
    let s = search(&tune, 0, &Quiet);
    let found = decide(&tune, &s);
    (tune, s, found)
}

/// The value of setting `path` in candidate `c`.
fn setting(tune: &Tune, c: usize, path: &str) -> Value {
    let k = tune.settings.iter().position(|s| s.path == path).unwrap();
    tune.settings[k].values[tune.candidates[c].choice[k]].clone()
}

#[test]
fn the_front_of_independent_failures_is_every_attempt_count_and_nothing_dominated() {
    // f = 0.5: k attempts succeed with 1 - f^k and cost (1 - f^k) / (1 - f). A timeout
    // shorter than any answer makes every candidate with it fail at k attempts a request:
    // dominated by one attempt with the long timeout.
    let (tune, _, found) = tuned(json!({
        "name": "attempts", "scenario": "independent-failures.json", "replications": 8,
        "search": [
            { "path": "policy.timeout", "values": ["1s", "500us"] },
            { "path": "policy.retry.max_attempts", "from": 1, "to": 6, "step": 1 }
        ],
        "objectives": [ { "metric": "success_rate" }, { "metric": "amplification" } ]
    }));
    let f: f64 = 0.5;
    let mut ks = Vec::new();
    for &c in &found.front {
        assert_eq!(setting(&tune, c, "policy.timeout"), json!("1s"));
        let k = setting(&tune, c, "policy.retry.max_attempts")
            .as_i64()
            .unwrap() as i32;
        let (success, amp) = (found.worst[c][0].unwrap(), found.worst[c][1].unwrap());
        let want = 1.0 - f.powi(k);
        assert!(
            (success.value - want).abs() < (3.0 * success.half_width).max(0.004),
            "k = {k}: success {success:?}, theory {want}"
        );
        let want = want / (1.0 - f);
        assert!(
            (amp.value - want).abs() < (3.0 * amp.half_width).max(0.01),
            "k = {k}: amplification {amp:?}, theory {want}"
        );
        ks.push(k);
    }
    assert_eq!(ks, [1, 2, 3, 4, 5, 6], "every k is on the front");
    for c in 0..tune.candidates.len() {
        if setting(&tune, c, "policy.timeout") == json!("500us") {
            assert_ne!(found.standing[c], Standing::Front);
        }
    }
}

#[test]
fn racing_spends_at_most_a_third_of_the_grid_and_finds_its_front() {
    let doc = |method: &str| {
        json!({
            "name": "race", "scenario": "independent-failures.json", "replications": 20,
            "method": method,
            "search": [ { "path": "policy.retry.max_attempts", "from": 1, "to": 6, "step": 1 } ],
            "objectives": [ { "metric": "success_rate" } ]
        })
    };
    let (tune, raced, race) = tuned(doc("race"));
    let (_, full, grid) = tuned(doc("grid"));
    let spent = raced.spent(1);
    assert_eq!(full.spent(1), 120);
    assert!(3 * spent <= 120, "the race ran {spent} of 120 replications");
    assert_eq!(race.front, grid.front);
    assert_eq!(race.front.len(), 1);
    assert_eq!(
        setting(&tune, race.front[0], "policy.retry.max_attempts"),
        json!(6)
    );
}

#[test]
fn a_hedge_delay_under_five_percent_extra_attempts_lands_at_the_95th_percentile() {
    // Exponential answers of mean 100 ms: the 95th percentile is 100 ms x ln 20 = 299.6 ms,
    // where a hedge adds 5 % attempts and p99 = 100 ms x (ln 100 + ln 20) / 2 = 380.3 ms.
    // The grid's step is 25 ms: 280 ms adds 6.1 %, 305 ms 4.7 %.
    let (tune, _, found) = tuned(json!({
        "name": "hedge", "scenario": "hedge-tail.json", "replications": 10,
        "search": [ { "path": "policy.hedge.delay", "from": "255ms", "to": "355ms", "step": "25ms" } ],
        "objectives": [ { "metric": "latency_ms.p99" } ],
        "constraints": [ { "metric": "amplification", "at_most": 1.05 } ]
    }));
    let r = found.recommended.expect("a delay keeps the constraint");
    assert_eq!(setting(&tune, r, "policy.hedge.delay"), json!("305ms"));
    let p99 = found.worst[r][0].unwrap().value;
    let theory = 100.0 * (100f64.ln() + 20f64.ln()) / 2.0;
    assert!(
        (p99 - theory).abs() / theory < 0.02,
        "p99 {p99} ms against {theory} ms"
    );
}

#[test]
fn the_smallest_token_ratio_that_keeps_retries_on_is_q_over_1_minus_q() {
    // q = 0.1: a failure takes a token and a success gives r, so the bucket drifts down and
    // retries stop below r = q / (1 - q) = 0.111; above it every retry goes out, and every
    // ratio gives the same runs. The first listed of those is 0.125, one step above.
    let (tune, _, found) = tuned(json!({
        "name": "ratio", "scenario": "token-ratio.json", "replications": 5,
        "search": [ { "path": "policy.budget.token_bucket.token_ratio", "values": [0.05, 0.075, 0.1, 0.125, 0.15, 0.2] } ],
        "objectives": [ { "metric": "success_rate" } ]
    }));
    let r = found.recommended.expect("a recommendation");
    let ratio = setting(&tune, r, "policy.budget.token_bucket.token_ratio")
        .as_f64()
        .unwrap();
    let threshold = 0.1 / 0.9;
    assert!(
        ratio >= threshold && ratio - threshold <= 0.025,
        "recommended {ratio}"
    );
}

#[test]
fn a_tune_is_the_same_on_one_thread_and_on_two() {
    let tune = tune_of(json!({
        "name": "jobs", "scenario": "independent-failures.json", "replications": 6,
        "search": [ { "path": "policy.retry.max_attempts", "values": [1, 3, 5] } ],
        "objectives": [ { "metric": "success_rate" }, { "metric": "latency_ms.p99" } ]
    }));
    let files = |jobs| {
        let s = search(&tune, jobs, &Quiet);
        let found = decide(&tune, &s);
        retrystorm::tune::files(&tune, &s, &found, ImageFormat::Svg).unwrap()
    };
    let (one, two) = (files(1), files(2));
    assert_eq!(one.len(), two.len());
    for (a, b) in one.iter().zip(&two) {
        assert_eq!(a.name, b.name);
        assert!(
            a.bytes == b.bytes,
            "{} differs between one thread and two",
            a.name
        );
    }
}

fn tune_cli(file: &Path, out: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .args(["tune", "--quiet", "--jobs", "2"])
        .arg(file)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap()
}

#[test]
fn a_bad_tune_file_says_where_and_what_to_do_exits_2_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = data().join("independent-failures.json");
    let cases = [
        (
            json!({"name": "x", "scenario": "missing.json", "replications": 2, "search": [{"path": "policy.retry.max_attempts", "values": [1]}], "objectives": [{"metric": "success_rate"}]}),
            "scenario: cannot read",
        ),
        (
            json!({"name": "x", "scenario": scenario, "replications": 2, "search": [{"path": "policy.retry.max_attempts", "values": [1]}], "objectives": [{"metric": "succes_rate"}]}),
            "objectives[0]: metric \"succes_rate\" is not one",
        ),
        (
            json!({"name": "x", "scenario": scenario, "replications": 2, "search": [{"path": "policy.retry.max_attempts", "values": [0, 2]}], "objectives": [{"metric": "success_rate"}]}),
            "policy.retry.max_attempts = 0 is refused",
        ),
        (
            json!({"name": "x", "scenario": scenario, "replications": 2, "search": [{"path": "policy.retry.max_attempts", "values": [1]}], "objectives": [{"metric": "success_rate"}], "constraints": [{"metric": "amplification", "fault": "outage", "at_most": 2}]}),
            "constraints[0].fault: \"outage\" is not a fault",
        ),
        (
            json!({"name": "x", "scenario": scenario, "replications": 2, "search": [{"path": "policy.retry.max_attempts", "from": 1, "to": 3}], "objectives": [{"metric": "success_rate"}]}),
            "search[0]: give either",
        ),
        (
            json!({"name": "x", "scenario": scenario, "replications": 2, "serach": []}),
            "unknown field `serach`",
        ),
    ];
    for (i, (doc, words)) in cases.iter().enumerate() {
        let file = dir.path().join(format!("bad-{i}.json"));
        std::fs::write(&file, doc.to_string()).unwrap();
        let out = dir.path().join(format!("out-{i}"));
        let done = tune_cli(&file, &out);
        let stderr = String::from_utf8_lossy(&done.stderr);
        assert_eq!(done.status.code(), Some(2), "case {i}: {stderr}");
        assert!(stderr.contains(words), "case {i}: {stderr}");
        assert!(!out.exists(), "case {i} wrote {}", out.display());
    }
}

#[test]
fn a_tune_folder_holds_its_files_and_a_run_never_replaces_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("tuned");
    let done = tune_cli(&data().join("independent-failures.tune.json"), &out);
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    for name in [
        "tune.json",
        "candidates.csv",
        "report.md",
        "recommended.json",
        "front-1-2.png",
        "front-1-2.csv",
        "front-over-faults.png",
        "manifest.json",
    ] {
        assert!(out.join(name).is_file(), "{name} is missing");
    }
    // The recommended scenario runs as it is.
    let run = Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .args(["check"])
        .arg(out.join("recommended.json"))
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let run = Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .args(["run", "--quiet"])
        .arg(data().join("independent-failures.json"))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&run.stderr).contains("tune's results"));
    assert!(out.join("tune.json").is_file());
}

/// The files of `tune` searched with `store` (or none).
fn files_with(tune: &Tune, store: Option<&dyn retrystorm::tune::Store>) -> Vec<(String, Vec<u8>)> {
    let s = retrystorm::tune::search_with(tune, 2, &Quiet, store).unwrap();
    let found = decide(tune, &s);
    retrystorm::tune::files(tune, &s, &found, ImageFormat::Svg)
        .unwrap()
        .into_iter()
        .map(|f| (f.name, f.bytes))
        .collect()
}

fn raced() -> Tune {
    tune_of(json!({
        "name": "state", "scenario": "independent-failures.json", "replications": 8, "first_round": 2,
        "search": [
            { "path": "policy.timeout", "values": ["1s", "500us"] },
            { "path": "policy.retry.max_attempts", "from": 1, "to": 4, "step": 1 }
        ],
        "objectives": [ { "metric": "success_rate" }, { "metric": "latency_ms.p99" } ]
    }))
}

#[test]
fn shards_sharing_a_state_folder_and_a_resumed_tune_write_what_one_process_writes() {
    use retrystorm::tune::StateDir;
    let tune = raced();
    let alone = files_with(&tune, None);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::thread::scope(|scope| {
        for i in 0..3 {
            let (tune, state) = (&tune, &state);
            scope.spawn(move || {
                let store = StateDir::open(state, tune, Some((i, 3))).unwrap();
                files_with(tune, Some(&store));
            });
        }
    });
    let store = StateDir::open(&state, &tune, None).unwrap();
    assert!(
        files_with(&tune, Some(&store)) == alone,
        "three shards differ from one process"
    );
    // Resume: take away the last rounds' blocks, as a tune killed in its third round leaves it.
    let mut removed = 0;
    for entry in std::fs::read_dir(&state).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if name.starts_with("r2-") || name.starts_with("r3-") || name.ends_with(".claim") {
            std::fs::remove_file(&path).unwrap();
            removed += 1;
        }
    }
    assert!(removed > 0);
    assert!(
        files_with(&tune, Some(&store)) == alone,
        "a resumed tune differs"
    );
}

#[test]
fn a_state_folder_of_another_tune_is_refused() {
    use retrystorm::tune::StateDir;
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    StateDir::open(&state, &raced(), None).unwrap();
    let other = tune_of(json!({
        "name": "other", "scenario": "independent-failures.json", "replications": 4,
        "search": [ { "path": "policy.retry.max_attempts", "values": [1, 2] } ],
        "objectives": [ { "metric": "success_rate" } ]
    }));
    let err = StateDir::open(&state, &other, None).err().expect("refused");
    assert!(
        format!("{err}").contains("holds the state of the tune \"state\""),
        "{err}"
    );
}

#[test]
fn a_tune_that_would_keep_more_than_the_memory_budget_is_refused_before_it_runs() {
    // 10,000 candidates at 3 faults, each pooling its latencies for p99: about 7 GB.
    let raw: RawTune = serde_json::from_value(json!({
        "name": "huge", "scenario": "../../../tunes/hedge-suite.json", "replications": 2,
        "search": [
            { "path": "policy.timeout", "from": "1ms", "to": "10000ms", "step": "10ms" },
            { "path": "policy.hedge.max_hedges", "from": 1, "to": 10, "step": 1 }
        ],
        "objectives": [ { "metric": "latency_ms.p99" } ]
    }))
    .unwrap();
    let problems = check(raw, &data()).expect_err("refused");
    assert!(
        problems[0].contains("more than the scenario's limits.max_memory_mb = 4096")
            && problems[0].contains("compare a metric that is not a latency percentile"),
        "{problems:?}"
    );
}
