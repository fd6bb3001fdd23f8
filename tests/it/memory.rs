//! Memory follows what is in flight: neither the client count nor the number of replications
//! sets what a run holds.

use retrystorm::metrics::{Column, recovery};
use retrystorm::report;
use retrystorm::scenario::{LoadOptions, load_file};

use crate::{run_text, scenario_path};

/// Regression: a budget and a breaker were allocated for every client up front, so
/// 4,294,967,295 clients asked for hundreds of gigabytes and aborted, even at a trickle of
/// requests. Only the clients that start a request have one now: this run is about a hundred
/// requests.
#[test]
fn the_largest_client_count_runs_at_a_low_rate() {
    let (_, result) = run_text(
        r#"{
      "name": "many-clients", "duration": "10s", "replications": 2,
      "clients": {"count": 4294967295, "workload": {"open": {"rate_per_s": 10}}},
      "server": {"concurrency": 1, "error_rate": 0.5, "service_time": {"constant": "1ms"}},
      "policy": {"timeout": "100ms", "retry": {"max_attempts": 3, "retry_on": ["error"]},
        "budget": {"token_bucket": {"max_tokens": 10, "token_ratio": 0.1}},
        "breaker": {"failure_rate_threshold": 0.5, "window": {"count": 4}, "minimum_calls": 2,
                    "open_duration": "1s"}},
      "metrics": {"bucket": "1s"}
    }"#,
    );
    let v = &result.points[0].variants[0];
    assert!(v.metrics.requests > 50.0 && v.metrics.requests < 200.0);
    assert!(v.metrics.retries > 0.0);
    assert!(v.metrics.breaker.refusals > 0.0, "the touched breakers act");
    assert!(!v.is_truncated());
}

/// Replications are folded into their variant in replication order as they finish, with at
/// most a window of finished ones waiting; the outputs are the same bytes whatever the thread
/// count, also where the window cuts across variants (23 replications, 4 variants) and where
/// typical runs are simulated again for the variants whose replications split.
#[test]
fn folding_as_replications_finish_gives_the_same_bytes_on_any_thread_count() {
    let options = LoadOptions {
        replications: Some(23),
        ..LoadOptions::default()
    };
    let experiment = load_file(&scenario_path("collapse-after-spike"), &options).unwrap();
    let render = |jobs: usize| {
        let result = retrystorm::runner::run(&experiment, jobs, &|| {});
        assert!(
            result.points[0]
                .variants
                .iter()
                .any(|v| !v.examples.is_empty()),
            "a variant splits, so typical runs are simulated again"
        );
        let files =
            retrystorm::output::render(&experiment, &result, report::ImageFormat::Svg, 0).unwrap();
        files
            .into_iter()
            .map(|f| (f.name, f.bytes))
            .collect::<Vec<_>>()
    };
    let one = render(1);
    assert!(one == render(2), "--jobs 1 and --jobs 2 differ");
    assert!(one == render(3), "--jobs 1 and --jobs 3 differ");
}

/// The typical recovered and collapsed runs are chosen from every replication's goodput and
/// recovery, then simulated again: they are the replications with the median goodput of each
/// kind (the lower median for an even count), and their series are those replications' own.
#[test]
fn typical_runs_are_the_median_replications_of_each_kind() {
    let options = LoadOptions {
        replications: Some(40),
        ..LoadOptions::default()
    };
    let experiment = load_file(&scenario_path("collapse-after-spike"), &options).unwrap();
    let result = retrystorm::runner::run(&experiment, 2, &|| {});
    let mut split = 0;
    for (v, r) in experiment.points[0]
        .variants
        .iter()
        .zip(&result.points[0].variants)
    {
        let sc = &v.scenario;
        let runs: Vec<_> = (0..40)
            .map(|i| retrystorm::sim::run(sc, experiment.seed, i))
            .collect();
        let mut kinds: [Vec<(u64, u32)>; 2] = Default::default();
        for (i, run) in runs.iter().enumerate() {
            let rec = recovery::analyse(&run.series, &sc.triggers(), sc.duration).unwrap();
            let goodput: u64 = run
                .series
                .rows()
                .iter()
                .map(|row| u64::from(row[Column::Succeeded as usize]))
                .sum();
            kinds[usize::from(rec.recovered_at.is_none())].push((goodput, i as u32));
        }
        if kinds.iter().any(Vec::is_empty) {
            assert!(r.examples.is_empty(), "{}", v.name);
            continue;
        }
        split += 1;
        assert_eq!(r.examples.len(), 2, "{}", v.name);
        for (kind, example) in kinds.iter_mut().zip(&r.examples) {
            kind.sort();
            let (_, median) = kind[(kind.len() - 1) / 2];
            assert_eq!(example.replication, median, "{}: {}", v.name, example.label);
            let own = &runs[median as usize].series;
            assert_eq!(example.bucket, own.bucket());
            assert_eq!(example.series.len(), own.rows().len());
            for (mean, row) in example.series.iter().zip(own.rows()) {
                for ((x, n), col) in mean.iter().zip(row).zip(Column::ALL) {
                    assert_eq!(*x, f64::from(*n) * col.scale(), "{}", v.name);
                }
            }
        }
    }
    assert!(split > 0, "some variant splits");
}
