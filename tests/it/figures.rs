//! Figures a reviewer can compare at a glance: the over-time figures draw rates on one time
//! axis and one scale, and their CSVs are exactly that table; gauge means do not fall to 0
//! when replications end; the latency histogram's shares add up; a split variant gets its
//! typical runs.

use std::collections::HashMap;
use std::path::Path;

use crate::cli::retrystorm;
use crate::{run_bundled, scenario_path};
use retrystorm::scenario::LoadOptions;

type Row = HashMap<String, String>;

fn rows(path: &Path) -> Vec<Row> {
    let mut reader =
        csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    reader
        .records()
        .map(|r| {
            header
                .iter()
                .cloned()
                .zip(r.unwrap().iter().map(String::from))
                .collect()
        })
        .collect()
}

fn num(r: &Row, key: &str) -> f64 {
    r[key]
        .parse()
        .unwrap_or_else(|e| panic!("{key} = {:?}: {e}", r[key]))
}

fn run_ok(dir: &Path, args: &[&str]) {
    let out = retrystorm(dir, args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs a bundled scenario into `dir/name` with extra flags.
fn run(dir: &Path, name: &str, extra: &[&str]) -> std::path::PathBuf {
    let out = dir.join(name);
    let file = scenario_path(name);
    let mut args = vec![
        "run",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ];
    args.extend(extra);
    run_ok(dir, &args);
    out
}

/// Sum of a column of timeseries.csv per variant (no sweep).
fn totals(out: &Path, column: &str) -> HashMap<String, f64> {
    let mut sums = HashMap::new();
    for r in rows(&out.join("timeseries.csv")) {
        *sums.entry(r["variant"].clone()).or_insert(0.0) += num(&r, column);
    }
    sums
}

#[test]
fn over_time_csvs_are_rates_on_one_bucket_that_add_up_to_the_counts() {
    let dir = tempfile::tempdir().unwrap();
    // A herd at t = 0 and retries that spread over seconds: bucket widths and spans differ.
    let out = run(dir.path(), "thundering-herd", &["--replications", "3"]);
    for (figure, column) in [
        ("retries-over-time", "retries"),
        ("attempts-over-time", "attempts"),
        ("load-over-time", "first_attempts"),
        ("load-over-time", "succeeded"),
        ("server-over-time", "attempt_success"),
    ] {
        let drawn = rows(&out.join(format!("{figure}.csv")));
        let buckets: Vec<f64> = drawn.iter().map(|r| num(r, "bucket_s")).collect();
        assert!(
            buckets.windows(2).all(|w| w[0] == w[1]),
            "{figure}: one bucket width for every panel"
        );
        let key = format!("{column}_per_s");
        let mut drawn_totals: HashMap<String, f64> = HashMap::new();
        for r in &drawn {
            *drawn_totals.entry(r["variant"].clone()).or_insert(0.0) +=
                num(r, &key) * num(r, "bucket_s");
        }
        for (variant, total) in totals(&out, column) {
            let got = drawn_totals.get(&variant).copied().unwrap_or(0.0);
            assert!(
                (got - total).abs() <= 1e-6 * total.max(1.0),
                "{figure} {variant}: rate x bucket adds up to {got}, the counts to {total}"
            );
        }
    }
}

#[test]
fn a_figure_spans_every_panel_on_one_time_axis_and_stops_each_at_its_last_activity() {
    let dir = tempfile::tempdir().unwrap();
    // Retry-chapter's "permanent failure" has all its attempts in one bucket at t = 0.
    let out = run(dir.path(), "retry-chapter", &[]);
    let drawn = rows(&out.join("attempts-over-time.csv"));
    let last = |name: &str| {
        drawn
            .iter()
            .filter(|r| r["variant"] == name)
            .map(|r| num(r, "bucket_start_s"))
            .fold(f64::NEG_INFINITY, f64::max)
    };
    let bucket = num(&drawn[0], "bucket_s");
    assert_eq!(last("permanent failure"), 0.0, "one bucket, then nothing");
    assert!(last("no jitter") > 100.0 * bucket, "the others run on");
    let permanent: Vec<&Row> = drawn
        .iter()
        .filter(|r| r["variant"] == "permanent failure")
        .collect();
    // 100 attempts in one display bucket, as a rate.
    assert!((num(permanent[0], "attempts_per_s") * bucket - 100.0).abs() < 1e-6);
}

#[test]
fn gauges_do_not_fall_to_zero_when_replications_end() {
    // Every token bucket is full again long before its run ends; replications end at
    // different times (they drain), which used to average the ended ones in as empty.
    let (_, result) = run_bundled("collapse-after-spike", &LoadOptions::default());
    let v = crate::variant(&result, "token bucket");
    let level = retrystorm::metrics::Column::BudgetLevel as usize;
    let tail: Vec<f64> = v.series.iter().rev().take(5).map(|r| r[level]).collect();
    assert!(
        tail.iter().all(|x| *x > 0.9),
        "budget level at the end of the series: {tail:?}"
    );
}

#[test]
fn theory_is_drawn_where_a_closed_form_describes_a_variant() {
    // amplification-closed-form: every attempt fails with probability f, a request makes at
    // most m attempts. Amplification is 1 + f + ... + f^(m-1), success 1 - f^m: for f = 1,
    // 4 and 3 attempts exactly; for f = 0.5 and 4 attempts 1.875 and 93.75 %.
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        "amplification-closed-form",
        &["--replications", "3"],
    );
    let drawn = rows(&out.join("theory.csv"));
    let row = |variant: &str, quantity: &str| {
        let r = drawn
            .iter()
            .find(|r| r["variant"] == variant && r["quantity"].starts_with(quantity))
            .unwrap_or_else(|| panic!("no {variant} / {quantity} row in {drawn:?}"));
        (
            num(r, "theory"),
            num(r, "simulated"),
            num(r, "ci95"),
            r["inside"].clone(),
        )
    };
    assert_eq!(drawn.len(), 6);
    for (variant, amplification) in [("f=1, 4 attempts", 4.0), ("f=1, 3 attempts", 3.0)] {
        assert_eq!(
            row(variant, "amplification"),
            (amplification, amplification, 0.0, "yes".into())
        );
        assert_eq!(row(variant, "success"), (0.0, 0.0, 0.0, "yes".into()));
    }
    let (theory, mean, half, inside) = row("f=0.5, 4 attempts", "amplification");
    assert!((theory - 1.875).abs() < 1e-12);
    assert_eq!(inside == "yes", (mean - theory).abs() <= half);
    let (theory, ..) = row("f=0.5, 4 attempts", "success");
    assert!((theory - 93.75).abs() < 1e-9);
    assert!(out.join("theory.png").exists());
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        report.contains("(theory.png)"),
        "report.md shows the figure"
    );
    // A run that no closed form describes gets no theory figure.
    let other = run(dir.path(), "retry-chapter", &["--replications", "2"]);
    assert!(!other.join("theory.png").exists());
}

#[test]
fn the_latency_histogram_shares_add_up_to_100_percent() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), "queueing-theory", &["--replications", "2"]);
    let drawn = rows(&out.join("latency-histogram.csv"));
    let mut sums: HashMap<String, f64> = HashMap::new();
    for r in &drawn {
        *sums.entry(r["variant"].clone()).or_insert(0.0) += num(r, "share_pct");
        assert!(num(r, "latency_ms_from") < num(r, "latency_ms_to"));
    }
    assert_eq!(sums.len(), 4);
    for (variant, sum) in sums {
        assert!((sum - 100.0).abs() < 1e-6, "{variant}: {sum}");
    }
    let png = image::open(out.join("latency-histogram.png")).unwrap();
    assert_eq!(
        png.width(),
        2000,
        "a 1000-pixel layout at twice the resolution"
    );
}

#[test]
fn a_split_variant_gets_a_typical_recovered_and_a_typical_collapsed_run() {
    let (_, result) = run_bundled("collapse-after-spike", &LoadOptions::default());
    for v in &result.points[0].variants {
        let recovery = v
            .metrics
            .recovery
            .expect("collapse-after-spike has a trigger");
        let (k, n) = (recovery.recovered, recovery.replications);
        let split = k > 0.0 && k < n;
        assert_eq!(
            v.examples.len(),
            if split { 2 } else { 0 },
            "{}: at most the two typical runs, only when the replications split",
            v.name
        );
        if split {
            assert!(v.examples[0].label.starts_with("typical recovered"));
            assert!(v.examples[1].label.starts_with("typical collapsed"));
            let goodput = |e: &retrystorm::metrics::ExampleRun| -> f64 {
                e.series
                    .iter()
                    .map(|r| r[retrystorm::metrics::Column::Succeeded as usize])
                    .sum()
            };
            assert!(goodput(&v.examples[0]) > goodput(&v.examples[1]));
        }
    }
    assert!(
        result.points[0]
            .variants
            .iter()
            .any(|v| !v.examples.is_empty()),
        "collapse-after-spike has a split variant"
    );
}

/// The bundled scenarios' names, the benchmarks left out.
fn bundled() -> Vec<String> {
    let dir = scenario_path("x").parent().unwrap().to_path_buf();
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            let stem = name.strip_suffix(".json")?.to_string();
            (!stem.starts_with("bench-")).then_some(stem)
        })
        .collect();
    names.sort();
    names
}

/// report.md's figure list: each figure's file and caption.
fn figure_captions(report: &str) -> HashMap<String, String> {
    report
        .lines()
        .filter_map(|l| {
            let (caption, file) = l.strip_prefix("![")?.rsplit_once("](")?;
            Some((file.strip_suffix(')')?.to_string(), caption.to_string()))
        })
        .collect()
}

/// Every bundled report said "without jitter they pile up ...; with jitter they spread" (also
/// with no jitter variant at all) and spoke of the server's queue "(grey, right axis)" where
/// no queue was drawn: each caption now states what its figure shows for the run.
#[test]
fn bundled_captions_say_only_what_the_figures_of_the_run_show() {
    let once = LoadOptions {
        replications: Some(1),
        ..LoadOptions::default()
    };
    let svg = retrystorm::report::ImageFormat::Svg;
    let mut jitter_words = Vec::new();
    let mut shed_words = Vec::new();
    for name in bundled() {
        let (experiment, result) = run_bundled(&name, &once);
        let files = retrystorm::report::render_report(&experiment, &result, svg, 0).unwrap();
        let text = |file: &str| {
            let f = files.iter().find(|f| f.name == file);
            f.map(|f| String::from_utf8_lossy(&f.bytes).into_owned())
        };
        let report = text("report.md").unwrap();
        let captions = figure_captions(&report);
        let caption = |stem: &str| captions.get(&format!("{stem}.svg")).cloned();
        if caption("retries-over-time").is_some_and(|c| c.contains("with jitter they spread")) {
            jitter_words.push(name.clone());
        }
        // The queue is named exactly where the load figure's data has one.
        let load = text("load-over-time.csv").unwrap();
        let mut reader = csv::Reader::from_reader(load.as_bytes());
        let column = reader
            .headers()
            .unwrap()
            .iter()
            .position(|h| h == "queue_len");
        let queue = reader.records().any(|r| {
            let r = r.unwrap();
            column.is_some_and(|i| r[i].parse::<f64>().unwrap() > 0.0)
        });
        let said = caption("load-over-time").unwrap();
        assert_eq!(
            said.contains("queue (grey, right axis)"),
            queue,
            "{name}: {said}"
        );
        if name == "tail-at-scale" {
            let hedges = caption("retries-over-time").unwrap();
            assert!(hedges.starts_with("When hedges were sent"), "{hedges}");
            // Its `sweep.focus`: the hedge storm, not 200 requests/s where nothing happens.
            assert!(report.contains("## Results at offered load (req/s) = 1800"));
        }
        // A shed attempt is answered rejected: the server figure says so where it sheds.
        let server = caption("server-over-time").unwrap_or_default();
        if server.contains("shed is answered as rejected") {
            shed_words.push(name.clone());
        }
        // The fallback variant's 0 bulkhead failures are refusals a fallback answered.
        let comparison = caption("comparison").unwrap();
        assert_eq!(
            comparison.contains("a refusal a fallback answered is degraded instead"),
            name == "tiers-bulkhead",
            "{name}: {comparison}"
        );
        // Without a variant that can retry or hedge, the attempts are the requests.
        let attempts = caption("attempts-over-time").is_some();
        let once = ["queueing-theory", "balancers-near-saturation"];
        assert_eq!(attempts, !once.contains(&name.as_str()), "{name}");
        // Load per replica is drawn exactly where a service has replicas.
        let replicas = experiment
            .scenarios()
            .any(|s| s.services.iter().any(|x| x.server.pool.replicas > 1));
        assert_eq!(caption("replica-load").is_some(), replicas, "{name}");
    }
    // Only the runs whose variants back off both with jitter and without.
    assert_eq!(
        jitter_words,
        ["aws-backoff-jitter", "retry-chapter", "thundering-herd"]
    );
    // Only the runs with a variant whose server sheds.
    assert_eq!(shed_words, ["hotos-metastable", "load-shedding"]);
}

/// A panel that draws nothing says so, and a sweep line that lies wholly under another is
/// named: retry-chapter's "permanent failure" panel looked like a drawing that failed, and
/// brooker-2022's "no retries" line was nowhere to be seen under "retry breaker".
#[test]
fn empty_panels_and_hidden_lines_are_said_in_words() {
    let once = LoadOptions {
        replications: Some(1),
        ..LoadOptions::default()
    };
    let svg = retrystorm::report::ImageFormat::Svg;
    let text = |name: &str, file: &str| {
        let (experiment, result) = run_bundled(name, &once);
        let files = retrystorm::report::render_report(&experiment, &result, svg, 0).unwrap();
        let f = files.iter().find(|f| f.name == file).unwrap();
        String::from_utf8_lossy(&f.bytes).into_owned()
    };
    let retries = text("retry-chapter", "retries-over-time.svg");
    assert!(retries.contains("permanent failure: no retries at all"));
    assert!(!retries.contains("full jitter: no retries"));
    let amplification = text("brooker-2022", "amplification.svg");
    assert!(
        amplification.contains("no retries drawn under retry breaker"),
        "the hidden line is named"
    );
    // first-storm's 0.8 s without an answer while the server refused was left unsaid.
    let latency = text("first-storm", "latency-over-time.svg");
    assert!(
        latency.contains("reject outage: nothing answered from 10.2 s to 11 s"),
        "a short silence is named"
    );
    let grid = text("brooker-2022", "sweep-metrics.svg");
    assert!(
        grid.contains("amplification (x) (1 hidden)"),
        "one line under another"
    );
}

/// tiers-bulkhead's server figure dropped every attempt a bulkhead refused or a fallback
/// answered: "bulkhead on a -> c" ended 100 attempts a second during the trigger out of 200
/// sent. Each of the clients' attempts now ends in exactly one outcome column.
#[test]
fn every_attempt_at_the_entry_ends_in_one_outcome_column() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), "tiers-bulkhead", &["--replications", "1"]);
    let sum = |column: &str| totals(&out, column);
    let attempts = sum("attempts");
    let outcomes = [
        "success",
        "error",
        "rejected",
        "throttled",
        "timeout",
        "conflict",
        "permanent",
        "bulkhead_full",
        "degraded",
    ];
    for (variant, sent) in &attempts {
        let ended: f64 = outcomes
            .iter()
            .map(|o| sum(&format!("attempt_{o}"))[variant])
            .sum();
        assert_eq!(ended, *sent, "{variant}: every attempt ends once");
    }
    assert!(sum("attempt_bulkhead_full")["bulkhead on a -> c"] > 0.0);
    assert!(sum("attempt_degraded")["bulkhead and fallback on a -> c"] > 0.0);
    let drawn = std::fs::read_to_string(out.join("server-over-time.csv")).unwrap();
    let header = drawn.lines().next().unwrap();
    assert!(header.contains("attempt_bulkhead_full_per_s"), "{header}");
    assert!(header.contains("attempt_degraded_per_s"), "{header}");
}
