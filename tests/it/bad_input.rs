//! Bad input gets a message naming the JSON path, the rule and the value, exit code 2, and
//! nothing written. Each case is named after what it catches.

use std::path::Path;

use crate::cli::retrystorm;

const GOOD: &str = r#"{
  "name": "bad",
  "duration": "1s",
  "clients": { "count": 2, "workload": { "open": { "rate_per_s": 10 } } },
  "server": { "service_time": { "constant": "1ms" } },
  "policy": { "retry": { "max_attempts": 3 } }
}"#;

/// Runs `retrystorm run` on `text`; asserts exit code 2 and no output; returns stderr.
fn reject(text: &str) -> String {
    reject_by("run", text)
}

/// Runs `retrystorm <command>` on `text`; asserts exit code 2 and no output; returns stderr.
fn reject_by(command: &str, text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("scenario.json");
    std::fs::write(&file, text).unwrap();
    let out = retrystorm(dir.path(), &[command, "scenario.json"]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.code(),
        Some(2),
        "expected exit code 2; stderr:\n{stderr}"
    );
    assert_nothing_written(dir.path());
    stderr
}

fn assert_nothing_written(dir: &Path) {
    let entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n != "scenario.json")
        .collect();
    assert!(entries.is_empty(), "a rejected scenario wrote {entries:?}");
    assert!(!dir.join("../escaped").exists());
}

fn assert_says(stderr: &str, needles: &[&str]) {
    for n in needles {
        assert!(stderr.contains(n), "message lacks {n:?}:\n{stderr}");
    }
}

#[test]
fn the_good_scenario_runs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("s.json"), GOOD).unwrap();
    let out = retrystorm(dir.path(), &["run", "s.json", "--quiet"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Regression: a file saved with a UTF-8 byte-order mark was "not valid JSON" at 1:1.
#[test]
fn a_byte_order_mark_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("s.json"), format!("\u{feff}{GOOD}")).unwrap();
    let out = retrystorm(dir.path(), &["check", "s.json"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("s.json: ok"), "{stdout}");
    // Only at the start: anywhere else it is still not JSON.
    let inside = GOOD.replace("\"duration\"", "\u{feff}\"duration\"");
    assert_says(&reject(&inside), &["scenario.json:3:", "not valid JSON"]);
}

#[test]
fn malformed_json_gives_line_and_column() {
    let broken = GOOD.replace("\"duration\": \"1s\",", "\"duration\": \"1s\"");
    let stderr = reject(&broken);
    assert_says(&stderr, &["scenario.json:4:", "not valid JSON"]);
}

#[test]
fn unknown_key_names_the_nearest_valid_one() {
    let stderr = reject(&GOOD.replace("rate_per_s", "rate_per_sec"));
    assert_says(
        &stderr,
        &[
            "1 problem in the scenario",
            "clients.workload.open.rate_per_sec: unknown key; did you mean `rate_per_s`? (line 4, column 52)",
        ],
    );
}

#[test]
fn duration_without_unit_says_which_unit_to_add() {
    let stderr = reject(&GOOD.replace("\"duration\": \"1s\"", "\"duration\": 5"));
    assert_says(&stderr, &["duration: a duration needs a unit", "\"5s\""]);
}

#[test]
fn probability_above_one_is_rejected() {
    let stderr = reject(&GOOD.replace(
        "\"service_time\": { \"constant\": \"1ms\" }",
        "\"service_time\": { \"constant\": \"1ms\" }, \"error_rate\": 1.5",
    ));
    assert_says(&stderr, &["server.error_rate", "between 0 and 1", "1.5"]);
}

#[test]
fn max_attempts_zero_is_rejected() {
    let stderr = reject(&GOOD.replace("\"max_attempts\": 3", "\"max_attempts\": 0"));
    assert_says(
        &stderr,
        &["policy.retry.max_attempts", "at least 1", "got 0"],
    );
}

#[test]
fn negative_rate_is_rejected() {
    let stderr = reject(&GOOD.replace("\"rate_per_s\": 10", "\"rate_per_s\": -10"));
    assert_says(
        &stderr,
        &["clients.workload.open.rate_per_s", ">= 0", "-10"],
    );
}

#[test]
fn name_that_would_escape_the_output_folder_is_rejected() {
    let stderr = reject(&GOOD.replace("\"name\": \"bad\"", "\"name\": \"../../escaped\""));
    assert_says(&stderr, &["name:", "plain folder name", "../../escaped"]);
}

#[test]
fn every_problem_is_reported_at_once() {
    let text = GOOD
        .replace("\"max_attempts\": 3", "\"max_attempts\": 0")
        .replace("\"rate_per_s\": 10", "\"rate_per_s\": -10")
        .replace("\"duration\": \"1s\"", "\"duration\": \"1 fortnight\"");
    let stderr = reject(&text);
    assert_says(
        &stderr,
        &[
            "3 problems",
            "policy.retry.max_attempts",
            "rate_per_s",
            "unknown unit",
        ],
    );
}

#[test]
fn a_bad_variant_is_named_in_the_message() {
    let text = GOOD.replace(
        "\"policy\"",
        "\"variants\": [{\"name\": \"ok\"}, {\"name\": \"broken\", \"patch\": {\"server\": {\"error_rate\": 2}}}],\n  \"policy\"",
    );
    let stderr = reject(&text);
    assert_says(&stderr, &["server.error_rate", "variants[1] \"broken\""]);
}

#[test]
fn one_bad_file_stops_every_file_from_running() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("good.json"), GOOD).unwrap();
    std::fs::write(dir.path().join("bad.json"), GOOD.replace("\"1s\"", "\"1\"")).unwrap();
    let out = retrystorm(dir.path(), &["run", "good.json", "bad.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        !dir.path().join("output").exists(),
        "nothing is written when any file is bad"
    );
}

#[test]
fn missing_file_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = retrystorm(dir.path(), &["run", "nope.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nope.json"));
}

/// Regression: the operating system's reason why a file cannot be read printed twice, in the
/// message and again as its cause.
#[test]
fn why_a_file_cannot_be_read_is_said_once() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("folder.json")).unwrap();
    for file in ["nope.json", "folder.json"] {
        for command in ["check", "run"] {
            let out = retrystorm(dir.path(), &[command, file]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{stderr}");
            assert_says(&stderr, &[file, "cannot read the scenario: "]);
            // One line: the file, and the reason once, with no "caused by" repeating it.
            assert_eq!(stderr.lines().count(), 1, "{stderr}");
        }
    }
}

#[test]
fn queue_settings_on_an_occ_server_are_rejected() {
    let stderr = reject(&GOOD.replace(
        "\"server\": { \"service_time\": { \"constant\": \"1ms\" } }",
        "\"server\": { \"kind\": \"occ\", \"service_time\": { \"constant\": \"1ms\" } }",
    ));
    assert_says(&stderr, &["server.service_time", "queue server only"]);
}

#[test]
fn a_base_problem_is_reported_once_without_blaming_a_variant() {
    let text = GOOD
        .replace("\"max_attempts\": 3", "\"max_attempts\": 0")
        .replace(
            "\"policy\"",
            "\"variants\": [{\"name\": \"a\"}, {\"name\": \"b\"}],\n  \"policy\"",
        );
    let stderr = reject(&text);
    assert_says(
        &stderr,
        &["1 problem in the scenario", "policy.retry.max_attempts"],
    );
    assert!(
        !stderr.contains("variants[0]"),
        "blamed a variant:\n{stderr}"
    );
}

#[test]
fn the_same_mistake_in_two_variants_is_reported_for_each() {
    let text = GOOD.replace(
        "\"policy\"",
        "\"variants\": [{\"name\": \"a\", \"patch\": {\"server\": {\"concurrency\": 0}}}, {\"name\": \"b\"}, {\"name\": \"c\", \"patch\": {\"server\": {\"concurrency\": 0}}}],\n  \"policy\"",
    );
    let stderr = reject(&text);
    assert_says(
        &stderr,
        &["2 problems", "variants[0] \"a\"", "variants[2] \"c\""],
    );
}

#[test]
fn a_closed_workload_larger_than_the_in_flight_limit_is_rejected() {
    let text = GOOD.replace(
        "\"count\": 2, \"workload\": { \"open\": { \"rate_per_s\": 10 } }",
        "\"count\": 400000000, \"workload\": { \"closed\": {} }",
    );
    let stderr = reject(&text);
    assert_says(&stderr, &["clients.count", "limits.max_in_flight"]);
}

/// Each policy, throttling and fault rule, with the path and the value the message must name.
#[test]
fn budgets_breakers_throttling_and_faults_are_checked() {
    let cases: &[(&str, &str, &[&str])] = &[
        (
            r#""policy": { "retry": { "max_attempts": 3 }"#,
            r#""policy": { "retry": { "max_attempts": 3 }, "budget": { "token_bucket": { "max_tokens": 10, "token_ratio": 0.1 }, "retry_quota": {} }"#,
            &["policy.budget", "exactly one", "got 2"],
        ),
        (
            r#""policy": { "retry": { "max_attempts": 3 }"#,
            r#""policy": { "retry": { "max_attempts": 3 }, "budget": { "ratio": { "percent": 10 } }"#,
            &["policy.budget.ratio.percent", "got 10", "0.1"],
        ),
        (
            r#""policy": { "retry": { "max_attempts": 3 }"#,
            r#""policy": { "retry": { "max_attempts": 3 }, "budget": { "token_bucket": { "max_tokens": 0, "token_ratio": 0.1 } }"#,
            &["policy.budget.token_bucket.max_tokens", "> 0", "got 0"],
        ),
        (
            r#""policy": { "retry": { "max_attempts": 3 }"#,
            r#""policy": { "retry": { "max_attempts": 3 }, "breaker": { "failure_rate_threshold": 50 }"#,
            &["policy.breaker.failure_rate_threshold", "got 50", "0.5"],
        ),
        (
            r#""policy": { "retry": { "max_attempts": 3 }"#,
            r#""policy": { "retry": { "max_attempts": 3 }, "breaker": { "window": { "count": 10, "time": "1s" } }"#,
            &["policy.breaker.window", "exactly one"],
        ),
        (
            r#""service_time": { "constant": "1ms" }"#,
            r#""service_time": { "constant": "1ms" }, "faults": [ { "from": "2s", "to": "1s", "outage": "reject" } ]"#,
            &[
                "server.faults[0].to",
                "later than from",
                "got from 2s, to 1s",
            ],
        ),
        (
            r#""service_time": { "constant": "1ms" }"#,
            r#""service_time": { "constant": "1ms" }, "faults": [ { "from": "1s", "to": "2s", "outage": "drop", "error_rate": 0.5 } ]"#,
            &["server.faults[0]", "2 effects", "exactly one"],
        ),
        (
            r#""service_time": { "constant": "1ms" }"#,
            r#""service_time": { "constant": "1ms" }, "faults": [ { "from": "1s", "to": "2s" } ]"#,
            &["server.faults[0]", "needs one effect"],
        ),
        (
            r#""service_time": { "constant": "1ms" }"#,
            r#""service_time": { "constant": "1ms" }, "rate_limit": { "rate_per_s": 10, "burst": 0.5 }"#,
            &["server.rate_limit.burst", "at least 1", "got 0.5"],
        ),
        (
            r#""server": { "service_time": { "constant": "1ms" } }"#,
            r#""server": { "kind": "occ", "rate_limit": { "rate_per_s": 10, "burst": 5 } }"#,
            &["server.rate_limit", "queue server only"],
        ),
        (
            r#""service_time": { "constant": "1ms" }"#,
            r#""service_time": { "constant": "1ms" }, "faults": [ { "from": "0.5s", "to": "0.8s", "outage": "drop" } ]"#,
            &["server.faults[0].outage", "policy.timeout", "wait for ever"],
        ),
        (
            r#""service_time": { "constant": "1ms" }"#,
            r#""service_time": { "constant": "1ms" }, "faults": [ { "from": "0.1s", "to": "0.2s" }, { "from": "0.5s", "to": "0.8s", "outage": "drop" } ]"#,
            &[
                "server.faults[0]: needs one effect",
                "server.faults[1].outage",
                "wait for ever",
            ],
        ),
        (
            r#""service_time": { "constant": "1ms" }"#,
            r#""service_time": { "constant": "1ms" }, "faults": [ { "from": "5s", "to": "8s", "outage": "reject" } ]"#,
            &[
                "server.faults[0].from",
                "before duration",
                "got 5s, duration 1s",
            ],
        ),
    ];
    for (from, to, needles) in cases {
        assert!(GOOD.contains(from), "{from}");
        let stderr = reject(&GOOD.replacen(from, to, 1));
        assert_says(&stderr, needles);
    }
}

#[test]
fn a_breaker_over_serial_clients_that_never_wait_is_refused() {
    let text = GOOD
        .replace(r#"{ "open": { "rate_per_s": 10 } }"#, r#"{ "closed": {} }"#)
        .replace(
            r#""policy": { "retry": { "max_attempts": 3 }"#,
            r#""policy": { "retry": { "max_attempts": 3 }, "breaker": {}"#,
        );
    let stderr = reject(&text);
    assert_says(
        &stderr,
        &[
            "clients.workload.closed.think_time",
            "circuit breaker",
            "think time",
        ],
    );
}

/// Regression: a non-ASCII string of about 30 characters where an object belongs (a variant's
/// patch, or a value that a sweep path goes through) was cut inside a character for the
/// message, and retrystorm panicked (exit code 101).
#[test]
fn long_non_ascii_text_where_an_object_belongs_is_a_problem_not_a_panic() {
    let text = "é".repeat(31);
    let patch = GOOD.replace(
        "\"policy\"",
        &format!("\"variants\": [{{\"name\": \"x\", \"patch\": \"{text}\"}}],\n  \"policy\""),
    );
    let through = GOOD.replace(
        "\"policy\"",
        &format!(
            "\"description\": \"{text}\", \"sweep\": {{\"path\": \"description.x\", \"values\": [1]}},\n  \"policy\""
        ),
    );
    let cases = [
        (patch, ["variants[0].patch", "must be an object"]),
        (through, ["sweep.path", "neither an object nor a list"]),
    ];
    for (text, needles) in &cases {
        for command in ["check", "run"] {
            let stderr = reject_by(command, text);
            assert_says(&stderr, needles);
            assert_says(&stderr, &["éééé..."]);
        }
    }
}

/// Regression: a duration that cannot be read ("1e18ns") was taken as 0 by the rules that
/// compare it with other settings, which then reported a second, false problem (a fault
/// "after" a duration of 0s, a cap shorter than its base, a drop outage "without" the
/// timeout that was written). A value that failed is compared with nothing.
#[test]
fn a_duration_that_cannot_be_read_gives_one_problem_not_two() {
    let drop = r#", "faults": [ { "from": "0.5s", "to": "0.8s", "outage": "drop" } ]"#;
    let service = "\"service_time\": { \"constant\": \"1ms\" }";
    let with_drop = format!("{service}{drop}");
    let cases: &[(&[(&str, &str)], &str)] = &[
        (
            &[
                ("\"1s\"", "\"1e18ns\", \"max_time\": \"2s\""),
                (service, &with_drop),
                ("\"policy\": {", "\"policy\": { \"timeout\": \"1s\","),
            ],
            "duration",
        ),
        (
            &[(
                "\"max_attempts\": 3",
                r#""max_attempts": 3, "backoff": { "base": "1e18ns", "cap": "1s", "jitter": "decorrelated" }"#,
            )],
            "policy.retry.backoff.base",
        ),
        (
            &[(
                "\"max_attempts\": 3",
                r#""max_attempts": 3, "backoff": { "base": "1s", "cap": "1e18ns", "jitter": "full" }"#,
            )],
            "policy.retry.backoff.cap",
        ),
        (
            &[
                ("\"policy\": {", "\"policy\": { \"timeout\": \"1e18ns\","),
                (service, &with_drop),
            ],
            "policy.timeout",
        ),
        (
            &[(
                service,
                r#""service_time": { "uniform": { "min": "2ms", "max": "1e18ns" } }"#,
            )],
            "server.service_time.uniform.max",
        ),
        (
            &[(
                "\"rate_per_s\": 10 }",
                r#""rate_per_s": 10, "profile": [ { "at": "0.2s", "rate_per_s": 5 }, { "at": "1e18ns", "rate_per_s": 5 }, { "at": "0.1s", "rate_per_s": 5 } ] }"#,
            )],
            "clients.workload.open.profile[1].at",
        ),
    ];
    for (edits, path) in cases {
        let mut text = GOOD.to_string();
        for (from, to) in *edits {
            assert_eq!(text.matches(from).count(), 1, "{from}");
            text = text.replace(from, to);
        }
        let stderr = reject(&text);
        assert_says(
            &stderr,
            &[
                "1 problem in the scenario",
                &format!("{path}: "),
                "\"1e18ns\" has an exponent",
            ],
        );
    }
}

/// Regression: values whose arithmetic overflows were accepted and reached results. Backoffs
/// of 10^18 ns ran simulated time (a u64 of nanoseconds, about 584 years) out, so requests
/// ended `deadline_exceeded` with no deadline set; mixture weights of 1e308 summed to infinity
/// and only the last component was ever drawn. Each bound is named in its message.
#[test]
fn values_that_would_overflow_are_rejected_with_their_bound() {
    let retry = "\"max_attempts\": 3";
    let service = "\"service_time\": { \"constant\": \"1ms\" }";
    let rate = "\"rate_per_s\": 10 }";
    let cases: &[(&str, &str, &[&str])] = &[
        (
            retry,
            r#""max_attempts": 3, "backoff": { "base": "1000000000s", "cap": "1000000000s", "jitter": "none" }"#,
            &[
                "policy.retry.backoff.base: must be at most 1000000s",
                "policy.retry.backoff.cap: must be at most 1000000s",
                "got \"1000000000s\"",
            ],
        ),
        (
            "\"duration\": \"1s\"",
            "\"duration\": \"2000000s\"",
            &["duration: must be at most 1000000s, about 11.6 days"],
        ),
        (
            "\"policy\": {",
            "\"policy\": { \"timeout\": \"300h\", \"deadline\": \"16667m\",",
            &[
                "policy.timeout: must be at most 1000000s",
                "policy.deadline: must be at most 1000000s",
            ],
        ),
        (
            retry,
            "\"max_attempts\": 5000",
            &[
                "policy.retry.max_attempts: must be at most 1000 (got 5000)",
                "\"unlimited\"",
            ],
        ),
        (
            service,
            r#""service_time": { "mixture": [ { "weight": 1e308, "dist": { "constant": "1ms" } }, { "weight": 1e308, "dist": { "constant": "9ms" } } ] }"#,
            &["server.service_time.mixture: the weights must have a finite sum"],
        ),
        (
            service,
            r#""service_time": { "lognormal": { "median": "10ms", "sigma": 6 } }"#,
            &[
                "server.service_time.lognormal.sigma",
                "got 6",
                "at most 1e9s",
            ],
        ),
        (
            rate,
            "\"rate_per_s\": 1e10 }",
            &[
                "clients.workload.open.rate_per_s: must be a rate per second >= 0 and at most 1e9",
                "got 10000000000",
            ],
        ),
        (
            rate,
            r#""rate_per_s": 10, "profile": [ { "at": "0.5s", "rate_per_s": 1e300 } ] }"#,
            &[
                "clients.workload.open.profile[0].rate_per_s",
                "at most 1e9",
                "got 1e300",
            ],
        ),
        (
            service,
            r#""service_time": { "constant": "1ms" }, "rate_limit": { "rate_per_s": 1e12, "burst": 1e300 }"#,
            &[
                "server.rate_limit.rate_per_s",
                "server.rate_limit.burst: must be at least 1 and at most 1e9 (got 1e300)",
            ],
        ),
        (
            service,
            r#""service_time": { "constant": "1ms" }, "slowdown_per_inflight": "1m", "faults": [ { "from": "0s", "to": "0.5s", "service_time_factor": 1e300 } ]"#,
            &[
                "server.slowdown_per_inflight: must be at most 10s (got 1m)",
                "server.faults[0].service_time_factor: must be a number > 0 and at most 1000 (got 1e300)",
            ],
        ),
        (
            "\"policy\": {",
            r#""policy": { "budget": { "token_bucket": { "max_tokens": 1e300, "token_ratio": 1e20 } },"#,
            &[
                "policy.budget.token_bucket.max_tokens: must be a number > 0 and at most 1e9",
                "policy.budget.token_bucket.token_ratio: must be a number >= 0 and at most 1e9",
            ],
        ),
    ];
    for (from, to, needles) in cases {
        assert_eq!(GOOD.matches(from).count(), 1, "{from}");
        let stderr = reject(&GOOD.replace(from, to));
        assert_says(&stderr, needles);
    }
    // Counts stay as large as the type that holds them: 4,294,967,295 open-workload clients.
    let dir = tempfile::tempdir().unwrap();
    let many = GOOD.replace("\"count\": 2", "\"count\": 4294967295");
    std::fs::write(dir.path().join("s.json"), many).unwrap();
    let out = retrystorm(dir.path(), &["check", "s.json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Names are written into tables, figures, report.md and CSV files: a control character
/// (a newline, a tab) would break the line it is written on, so it is refused with the name
/// shown escaped. Characters such as `|`, `=` and `<` are fine in names.
#[test]
fn control_characters_in_names_and_labels_are_rejected() {
    let with_variants = |variants: &str| {
        GOOD.replace(
            "\"policy\"",
            &format!("\"variants\": {variants},\n  \"policy\""),
        )
    };
    let cases: &[(String, &[&str])] = &[
        (
            with_variants(r#"[{"name": "two\nlines"}, {"name": "tab\there"}, {"name": "bell\u0007"}]"#),
            &[
                "3 problems",
                r#"variants[0].name: must not contain control characters such as a newline or a tab (got "two\nlines")"#,
                r#"variants[1].name: must not contain control characters"#,
                r#"(got "tab\there")"#,
                r#"variants[2].name: must not contain control characters"#,
                r#"(got "bell\u{7}")"#,
            ],
        ),
        (
            GOOD.replace("\"name\": \"bad\"", "\"name\": \"bad\\r\\n\""),
            &["name: must be a plain folder name", r#"(got "bad\r\n")"#],
        ),
        (
            GOOD.replace(
                "\"policy\"",
                "\"sweep\": { \"path\": \"clients.count\", \"label\": \"clients\\nper server\", \"values\": [1, 2] },\n  \"policy\"",
            ),
            &["sweep.label: must not contain control characters"],
        ),
        (
            with_variants(r#"[{"name": "a"}, {"name": "b"}, {"name": "a"}]"#),
            &["1 problem", r#"variants[2].name: "a" is also the name of variants[0]; names must be unique"#],
        ),
    ];
    for (text, needles) in cases {
        let stderr = reject(text);
        assert_says(&stderr, needles);
        // Every problem stays on its own line.
        let listed = stderr.lines().filter(|l| l.starts_with("  - ")).count();
        assert_eq!(listed + 1, stderr.lines().count(), "{stderr}");
    }
    let dir = tempfile::tempdir().unwrap();
    let fine = with_variants(r#"[{"name": "a | b = c < d > e, \"f\""}, {"name": "é 🦀"}]"#);
    std::fs::write(dir.path().join("s.json"), fine).unwrap();
    let out = retrystorm(dir.path(), &["check", "s.json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Regression: `check` stopped at the first unknown key or wrong type (one of six here) and
/// worded it in Rust's terms ("invalid type: string \"two\", expected u64"). Every one is
/// listed in one pass, inside a variant's patch and a sweep value too, each with its path,
/// what belongs there in the format's words, and its line and column in the file.
#[test]
fn every_unknown_key_and_wrong_type_is_listed_in_one_pass() {
    let text = r#"{
  "name": "bad",
  "duration": "1s",
  "clients": { "count": "two", "workload": { "open": { "rate_per_sec": 10 } } },
  "server": { "service_time": { "constant": "1ms" }, "concurency": 2 },
  "policy": { "retry": { "max_attempts": 3, "backoff": { "base": "1ms", "cap": "1s", "jitter": "ful" } } },
  "variants": [
    { "name": "a" },
    { "name": "b", "patch": { "server": { "queue_limit": 2.5 } } }
  ],
  "sweep": { "path": "network.latency", "values": [ { "constant": "1ms" }, { "exponentail": { "mean": "1ms" } } ] }
}"#;
    let expected = [
        "error: scenario.json: 6 problems in the scenario:",
        "  - clients.count: must be a whole number (got \"two\") (line 4, column 25)",
        "  - clients.workload.open.rate_per_sec: unknown key; did you mean `rate_per_s`? (line 4, column 56)",
        "  - server.concurency: unknown key; did you mean `concurrency`? (line 5, column 54)",
        "  - policy.retry.backoff.jitter: must be one of: none, full, equal, decorrelated (got \"ful\"); did you mean \"full\"? (line 6, column 96)",
        "  - server.queue_limit: must be a whole number or \"unlimited\" (got 2.5) (in variants[1] \"b\") (line 9, column 58)",
        "  - network.latency.exponentail: unknown key; did you mean `exponential`? the one key here names the kind: constant, exponential, uniform, normal, lognormal, mixture (with network.latency = {\"exponentail\":{\"mean\":\"1ms\"}}) (line 11, column 76)",
    ];
    for command in ["check", "run"] {
        let stderr = reject_by(command, text);
        assert_eq!(stderr.lines().collect::<Vec<_>>(), expected, "{stderr}");
    }
}

/// What belongs where is said as the format says it, never in serde's internal words.
#[test]
fn wrong_types_are_described_in_the_formats_words() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "\"count\": 2",
            "\"count\": -2",
            "clients.count: must be a whole number (got -2)",
        ),
        (
            "\"count\": 2",
            "\"count\": 2.5",
            "clients.count: must be a whole number (got 2.5)",
        ),
        (
            "\"count\": 2",
            "\"count\": {}",
            "clients.count: must be a whole number (got {})",
        ),
        (
            "\"duration\": \"1s\"",
            "\"duration\": [1]",
            "duration: must be a duration such as \"10ms\" or \"1.5s\" (got [1])",
        ),
        (
            "\"workload\": { \"open\": { \"rate_per_s\": 10 } }",
            "\"workload\": \"open\"",
            "clients.workload: must be an object with one key, one of: open, closed (got \"open\")",
        ),
        (
            "\"max_attempts\": 3",
            "\"max_attempts\": true",
            "policy.retry.max_attempts: must be a whole number or \"unlimited\" (got true)",
        ),
        (
            "\"max_attempts\": 3",
            "\"max_attempts\": 3, \"backoff\": \"exponential\"",
            "policy.retry.backoff: must be \"none\" or {\"envoy\": {...}} or an object (got \"exponential\")",
        ),
        (
            "\"max_attempts\": 3",
            "\"max_attempts\": 3, \"retry_on\": \"timeout\"",
            "policy.retry.retry_on: must be a list (got \"timeout\")",
        ),
        (
            "\"max_attempts\": 3",
            "\"max_attempts\": 3, \"retry_on\": [\"timeouts\"]",
            "policy.retry.retry_on[0]: must be one of: success, error, rejected, throttled, timeout, conflict, permanent, bulkhead_full (got \"timeouts\"); did you mean \"timeout\"?",
        ),
        (
            "\"constant\": \"1ms\"",
            "\"constant\": \"1ms\", \"uniform\": {}",
            "server.service_time: has 2 keys (constant, uniform) but must have exactly one, the kind",
        ),
        (
            "\"name\": \"bad\",",
            "",
            "name: is required: a string (line 1, column 1)",
        ),
    ];
    for (from, to, needle) in cases {
        assert_eq!(GOOD.matches(from).count(), 1, "{from}");
        let stderr = reject(&GOOD.replace(from, to));
        assert_says(&stderr, &["1 problem in the scenario", needle]);
        for serde_words in [
            "invalid type",
            "expected",
            "u64",
            "struct",
            "map with",
            "variant `",
        ] {
            assert!(!stderr.contains(serde_words), "{serde_words}: {stderr}");
        }
    }
}

/// Regression: a sweep of 100,000 values with a bad one in every scenario printed 16 MB of
/// near-identical problems. The first five of each kind (the same rule at paths that differ
/// in list indices only) are listed, then how many more there are; a variant's own mistake is
/// one problem, not one per sweep value.
#[test]
fn many_problems_of_one_kind_are_summarised() {
    let values: Vec<String> = (2..1002).map(|v| v.to_string()).collect();
    let variants: Vec<String> = (0..50)
        .map(|i| format!(r#"{{"name": "v{i}", "patch": {{"server": {{"concurrency": 0}}}}}}"#))
        .collect();
    let text = GOOD.replace(
        "\"policy\"",
        &format!(
            "\"sweep\": {{ \"path\": \"server.error_rate\", \"values\": [{}] }},\n  \"variants\": [{}],\n  \"policy\"",
            values.join(", "),
            variants.join(", ")
        ),
    );
    let stderr = reject_by("check", &text);
    assert_says(
        &stderr,
        &[
            "1050 problems in the scenario",
            "  - server.error_rate: must be a probability between 0 and 1 (got 6); write 5 % as 0.05 (with server.error_rate = 6) (line 6, column 66)",
            "\n    and 995 more like this\n",
            "  - server.concurrency: must be at least 1 (got 0) (in variants[4] \"v4\")",
            "\n    and 45 more like this",
        ],
    );
    assert_eq!(stderr.lines().count(), 1 + 5 + 1 + 5 + 1, "{stderr}");
    assert!(!stderr.contains("(got 7)"), "{stderr}");
}

/// Loading takes bounded time and memory whatever the file: it may expand to at most 100,000
/// scenarios (sweep points times variants) and 100 MB of JSON in all, and a sweep path has at
/// most 32 keys. Each limit is named where it is passed.
#[test]
fn a_file_that_expands_too_far_is_refused_with_its_bound() {
    let many_values: Vec<String> = (1..=1001).map(|v| v.to_string()).collect();
    let many_variants: Vec<String> = (0..100).map(|i| format!(r#"{{"name": "v{i}"}}"#)).collect();
    let deep = vec!["a"; 40].join(".");
    let big = "x".repeat(20_000);
    let cases = [
        (
            format!(
                "\"sweep\": {{ \"path\": \"clients.count\", \"values\": [{}] }}, \"variants\": [{}],",
                many_values.join(", "),
                many_variants.join(", ")
            ),
            "sweep: the file expands to 100100 scenarios (1001 sweep points times 100 variants), more than the 100000 one file may run",
        ),
        (
            format!(
                "\"description\": \"{big}\", \"sweep\": {{ \"path\": \"clients.count\", \"values\": [{}] }},",
                (1..=6000)
                    .map(|v| v.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "bytes in all, more than the 100000000 one file may check",
        ),
        (
            format!("\"sweep\": {{ \"path\": \"{deep}\", \"values\": [1] }},"),
            "sweep.path: has 40 keys, more than the 32 a path may have",
        ),
    ];
    for (insert, needle) in &cases {
        let text = GOOD.replace("\"policy\"", &format!("{insert}\n  \"policy\""));
        assert_says(
            &reject_by("check", &text),
            &["1 problem in the scenario", needle],
        );
    }
}

/// A closed workload schedules every client's first request from the start: a count that no
/// machine holds is refused before anything runs, even with `limits.max_in_flight` raised.
#[test]
fn a_closed_workload_of_more_clients_than_memory_holds_is_refused() {
    let text = |count: u64| {
        format!(
            r#"{{"name": "crowd", "duration": "1s",
              "clients": {{"count": {count}, "workload": {{"closed": {{"requests_per_client": 1}}}}}},
              "network": {{"latency": {{"constant": "1ms"}}}},
              "server": {{"concurrency": 1, "service_time": {{"constant": "1ms"}}}},
              "limits": {{"max_in_flight": 100000000000}}}}"#
        )
    };
    let stderr = reject(&text(4_294_967_295));
    assert!(
        stderr.contains("clients.count") && stderr.contains("at most 10000000 clients"),
        "{stderr}"
    );
    let ok = retrystorm::scenario::load_str(
        &text(10_000_000),
        "test",
        &retrystorm::scenario::LoadOptions::default(),
    );
    assert!(ok.is_ok(), "the bound itself is allowed: {:?}", ok.err());
}

/// A valid call graph: the clients call `frontend`, which calls `backend` on half of its
/// attempts and `cache` on the other half. The cases below break one rule of call graphs each.
const GRAPH: &str = r#"{
  "name": "graph",
  "duration": "1s",
  "clients": { "count": 2, "workload": { "open": { "rate_per_s": 10 } }, "entry": "frontend" },
  "policy": { "timeout": "1s", "fallback": { "latency": { "constant": "1ms" } } },
  "services": {
    "frontend": { "service_time": { "constant": "1ms" }, "call_mode": "parallel",
      "calls": [
        { "to": "backend", "fraction": 0.5,
          "policy": { "timeout": "100ms", "retry": { "max_attempts": 2, "retry_on": ["timeout", "bulkhead_full"] },
                      "bulkhead": { "max_concurrent": 4, "max_wait": "5ms" },
                      "fallback": { "latency": { "constant": "1ms" } }, "propagate_deadline": true } },
        { "to": "cache", "fraction": 0.5, "policy": { "timeout": "10ms" } }
      ] },
    "backend": { "concurrency": 2, "service_time": { "constant": "2ms" } },
    "cache": { "service_time": { "constant": "100us" } }
  }
}"#;

#[test]
fn the_good_call_graph_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("g.json"), GRAPH).unwrap();
    let out = retrystorm(dir.path(), &["check", "g.json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every rule of call graphs, each broken alone in GRAPH: the message names the path, the
/// rule, the value and the fix, and nothing is written.
#[test]
fn every_rule_of_call_graphs_is_checked() {
    let backend = r#""backend": { "concurrency": 2, "service_time": { "constant": "2ms" } }"#;
    let call = r#"{ "to": "cache", "fraction": 0.5, "policy": { "timeout": "10ms" } }"#;
    let clients_policy = r#""policy": { "timeout": "1s","#;
    let bulkhead = r#""bulkhead": { "max_concurrent": 4, "max_wait": "5ms" }"#;
    // A chain backend -> s0 -> s1 -> ... -> s62, every service reached.
    let many_services: Vec<String> = (0..63)
        .map(|i| {
            let calls = if i < 62 {
                format!(r#", "calls": [{{ "to": "s{}" }}]"#, i + 1)
            } else {
                String::new()
            };
            format!(r#""s{i}": {{ "service_time": {{ "constant": "1ms" }}{calls} }}"#)
        })
        .collect();
    let many_calls: Vec<String> = (0..63)
        .map(|_| r#"{ "to": "cache", "policy": { "timeout": "10ms" } }"#.to_string())
        .collect();
    let long = "x".repeat(65);
    // (text replaced, its replacement, what the one problem says)
    let cases: Vec<(&str, String, &[&str])> = vec![
        (
            r#""services": {"#,
            r#""server": { "service_time": { "constant": "1ms" } }, "services": {"#.into(),
            &[
                "services: cannot be used together with \"server\"",
                "put the server's keys under a name in \"services\" and remove \"server\"",
            ],
        ),
        (
            r#""entry": "frontend" }"#,
            r#""entry": "frontnd" }"#.into(),
            &["clients.entry: names no service (got \"frontnd\"); did you mean \"frontend\"?"],
        ),
        (
            r#", "entry": "frontend" }"#,
            " }".into(),
            &[
                "clients.entry: is required with more than one service: it names the service the clients call, one of \"frontend\", \"backend\", \"cache\"",
            ],
        ),
        (
            backend,
            format!(
                r#""backend": {{ "service_time": {{ "constant": "2ms" }}, "calls": [{{ "to": "s0" }}] }}, {}"#,
                many_services.join(", ")
            ),
            &["services: has 66 services, more than the 64 a scenario may have"],
        ),
        (
            call,
            format!("{call}, {}", many_calls.join(", ")),
            &["services.frontend.calls: has 65 calls, more than the 64 a service may make"],
        ),
        (
            r#""cache": {"#,
            r#""": { "service_time": { "constant": "1ms" } }, "cache": { "calls": [{ "to": "" }],"#.into(),
            &["services: a service's name must not be empty (got \"\")"],
        ),
        (
            r#""cache": {"#,
            format!(
                r#""{long}": {{ "service_time": {{ "constant": "1ms" }} }}, "cache": {{ "calls": [{{ "to": "{long}" }}],"#
            ),
            &["has 65 characters, more than the 64 a name may have"],
        ),
        (
            r#""cache": {"#,
            r#""a\tb": { "service_time": { "constant": "1ms" } }, "cache": { "calls": [{ "to": "a\tb" }],"#.into(),
            &["services: the service name \"a\\tb\" must not contain control characters"],
        ),
        (
            r#""cache": {"#,
            r#""cache.v2": { "service_time": { "constant": "1ms" } }, "cache": { "calls": [{ "to": "cache.v2" }],"#.into(),
            &[
                "services: the service name \"cache.v2\" must not contain '.', '[' or ']'",
                "write \"-\" or \"_\" instead",
            ],
        ),
        (
            r#"{ "to": "cache","#,
            r#"{ "to": "cahce","#.into(),
            &["services.frontend.calls[1].to: names no service (got \"cahce\"); did you mean \"cache\"?"],
        ),
        (
            backend,
            r#""backend": { "service_time": { "constant": "2ms" }, "calls": [{ "to": "backend", "policy": { "timeout": "1s" } }] }"#.into(),
            &["services.backend.calls[0].to: closes the cycle backend -> backend (got \"backend\")"],
        ),
        (
            backend,
            r#""backend": { "service_time": { "constant": "2ms" }, "calls": [{ "to": "frontend", "policy": { "timeout": "1s" } }] }"#.into(),
            &[
                "services.backend.calls[0].to: closes the cycle frontend -> backend -> frontend (got \"frontend\")",
                "remove a call of the cycle",
            ],
        ),
        (
            backend,
            format!(r#"{backend}, "audit": {{ "service_time": {{ "constant": "1ms" }} }}"#),
            &[
                "services.audit: is never called: no chain of calls from the entry service \"frontend\" reaches it; call it from a service that is reached, or remove it",
            ],
        ),
        (
            r#""fraction": 0.5, "policy": { "timeout": "10ms" }"#,
            r#""fraction": 0, "policy": { "timeout": "10ms" }"#.into(),
            &["services.frontend.calls[1].fraction: must be above 0 and at most 1 (got 0)"],
        ),
        (
            r#""fraction": 0.5, "policy": { "timeout": "10ms" }"#,
            r#""fraction": 0.6, "policy": { "timeout": "10ms" }"#.into(),
            &[
                "services.frontend.calls: the calls with a fraction below 1 are exclusive routes, taking consecutive slices of [0, 1) in file order",
                "must add up to at most 1 (got 1.1 from calls[0] 0.5, calls[1] 0.6)",
            ],
        ),
        (
            backend,
            r#""backend": { "kind": "occ", "calls": [{ "to": "cache" }] }"#.into(),
            &["services.backend.calls: a service of kind \"occ\" cannot make calls"],
        ),
        (
            clients_policy,
            format!("{clients_policy} {bulkhead},"),
            &["policy.bulkhead: applies to calls between services;"],
        ),
        (
            clients_policy,
            format!(r#"{clients_policy} "propagate_deadline": true,"#),
            &["policy.propagate_deadline: applies to calls between services;"],
        ),
        (
            bulkhead,
            r#""bulkhead": { "max_concurrent": 0, "max_wait": "5ms" }"#.into(),
            &["services.frontend.calls[0].policy.bulkhead.max_concurrent: must be at least 1 (got 0)"],
        ),
        (
            bulkhead,
            r#""bulkhead": { "max_concurrent": 4294967296 }"#.into(),
            &["services.frontend.calls[0].policy.bulkhead.max_concurrent: must be at most 4294967295 (got 4294967296)"],
        ),
        (
            bulkhead,
            r#""bulkhead": { "max_concurrent": 4, "max_wait": "2000000s" }"#.into(),
            &["services.frontend.calls[0].policy.bulkhead.max_wait:", "2000000s"],
        ),
        (
            r#""policy": { "timeout": "10ms" }"#,
            r#""policy": { "timeout": "10ms", "budget": { "scope": "per_client", "ratio": { "percent": 0.1 } } }"#.into(),
            &[
                "services.frontend.calls[1].policy.budget.scope: \"per_client\" does not apply to a call between services",
                "one instance per call edge",
            ],
        ),
        (
            r#""policy": { "timeout": "10ms" }"#,
            r#""policy": { "timeout": "10ms", "breaker": { "scope": "per_client" } }"#.into(),
            &["services.frontend.calls[1].policy.breaker.scope: \"per_client\" does not apply to a call between services"],
        ),
        (
            r#""fallback": { "latency": { "constant": "1ms" } }, "propagate_deadline""#,
            r#""fallback": { "latency": { "constant": "1" } }, "propagate_deadline""#.into(),
            &["services.frontend.calls[0].policy.fallback.latency.constant: a duration needs a unit"],
        ),
        // The rules of a server and of a policy, at the service's or the call's path.
        (
            r#""concurrency": 2"#,
            r#""concurrency": 0"#.into(),
            &["services.backend.concurrency: must be at least 1 (got 0)"],
        ),
        (
            r#""max_attempts": 2"#,
            r#""max_attempts": 0"#.into(),
            &[
                "services.frontend.calls[0].policy.retry.max_attempts: must be at least 1 (got 0); it counts the first attempt, so 1 means no retries",
            ],
        ),
        (
            r#""retry_on": ["timeout", "bulkhead_full"]"#,
            r#""retry_on": ["timeout", "permanent"]"#.into(),
            &[
                "services.frontend.calls[0].policy.retry.retry_on[1]: permanent is never retried; list only timeout, error, rejected, throttled, conflict or bulkhead_full",
            ],
        ),
    ];
    for (from, to, needles) in &cases {
        assert_eq!(GRAPH.matches(from).count(), 1, "{from}");
        let stderr = reject(&GRAPH.replacen(from, to, 1));
        assert_says(&stderr, &["1 problem in the scenario"]);
        assert_says(&stderr, needles);
    }
}

/// A drop outage never answers, so whoever calls its service must give up on its own: every
/// call to a downstream service needs a timeout or a deadline, and the clients need one
/// towards the entry, as towards a single server.
#[test]
fn a_drop_outage_needs_every_caller_of_its_service_to_give_up() {
    let drop = r#"[{ "from": "0.1s", "to": "0.2s", "outage": "drop" }]"#;
    let cache_drops = (
        r#""service_time": { "constant": "100us" }"#,
        format!(r#""service_time": {{ "constant": "100us" }}, "faults": {drop}"#),
    );
    let call_waits = (
        r#"{ "to": "cache", "fraction": 0.5, "policy": { "timeout": "10ms" } }"#,
        r#"{ "to": "cache", "fraction": 0.5 }"#.to_string(),
    );
    let clients_wait = (
        r#""policy": { "timeout": "1s","#,
        r#""policy": {"#.to_string(),
    );
    // Each alone is fine: a drop behind a call with a timeout, a call without one to a
    // service that never drops, clients without one whose entry never drops.
    let dir = tempfile::tempdir().unwrap();
    for (from, to) in [&cache_drops, &call_waits, &clients_wait] {
        assert_eq!(GRAPH.matches(from).count(), 1, "{from}");
        std::fs::write(dir.path().join("g.json"), GRAPH.replacen(from, to, 1)).unwrap();
        let out = retrystorm(dir.path(), &["check", "g.json"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{to}: {stderr}");
    }
    let text =
        GRAPH
            .replacen(cache_drops.0, &cache_drops.1, 1)
            .replacen(call_waits.0, &call_waits.1, 1);
    assert_says(
        &reject(&text),
        &[
            "1 problem in the scenario",
            "services.cache.faults[0].outage: \"drop\" never answers, so every call to this service needs a timeout or a deadline in its policy, and services.frontend.calls[1] has neither: without one a caller would wait for ever; give that call a timeout or deadline, or use \"reject\" for an outage that answers",
        ],
    );
    let text = GRAPH.replacen(clients_wait.0, &clients_wait.1, 1).replacen(
        r#""call_mode": "parallel","#,
        &format!(r#""call_mode": "parallel", "faults": {drop},"#),
        1,
    );
    assert_says(
        &reject(&text),
        &[
            "1 problem in the scenario",
            "services.frontend.faults[0].outage: \"drop\" never answers, so it needs policy.timeout or policy.deadline: without one the clients would wait for ever",
        ],
    );
}

/// `clients.entry` names a service of `services`: with one server it is an error.
#[test]
fn an_entry_without_services_is_rejected() {
    let stderr = reject(&GOOD.replace(
        "\"rate_per_s\": 10 } }",
        "\"rate_per_s\": 10 } }, \"entry\": \"server\"",
    ));
    assert_says(
        &stderr,
        &[
            "1 problem in the scenario",
            "clients.entry: applies only to a file with \"services\" (got \"server\")",
            "remove clients.entry",
        ],
    );
    let stderr = reject(&GOOD.replace(
        "\"server\": { \"service_time\": { \"constant\": \"1ms\" } }",
        "\"services\": {}",
    ));
    assert_says(
        &stderr,
        &["services: must hold at least one service (got none)"],
    );
}

/// Misspelt keys inside a service, a call and a call's policy get their did-you-mean hints,
/// like any other key.
#[test]
fn unknown_keys_in_services_and_calls_name_the_nearest_key() {
    let text = GRAPH
        .replacen("\"concurrency\": 2", "\"concurency\": 2", 1)
        .replacen("\"call_mode\"", "\"callmode\"", 1)
        .replacen("\"bulkhead\"", "\"bulkhed\"", 1)
        .replacen(
            "\"fraction\": 0.5, \"policy\": { \"timeout\": \"10ms\" }",
            "\"fractoin\": 0.5, \"policy\": { \"timeout\": \"10ms\" }",
            1,
        );
    let stderr = reject(&text);
    assert_says(
        &stderr,
        &[
            "4 problems in the scenario",
            "services.frontend.callmode: unknown key; did you mean `call_mode`? (line 7, column",
            "services.frontend.calls[0].policy.bulkhed: unknown key; did you mean `bulkhead`?",
            "services.frontend.calls[1].fractoin: unknown key; did you mean `fraction`?",
            "services.backend.concurency: unknown key; did you mean `concurrency`?",
        ],
    );
}

/// Sweeps and variants reach into services with dotted paths; a path to a service the file
/// does not have is refused rather than adding a service of one setting, and a variant's
/// mistake inside a service names the variant.
#[test]
fn sweeps_and_variants_into_services_are_checked() {
    let with = |extra: &str| {
        GRAPH.replacen(
            "\"duration\": \"1s\",",
            &format!("\"duration\": \"1s\", {extra},"),
            1,
        )
    };
    let stderr = reject(&with(
        r#""sweep": { "path": "services.bakend.concurrency", "values": [1, 2] }"#,
    ));
    assert_says(
        &stderr,
        &[
            "1 problem in the scenario",
            "sweep.path: \"services.bakend.concurrency\" names no service of the file (got \"bakend\"); did you mean \"backend\"?",
        ],
    );
    let stderr = reject(&with(
        r#""sweep": { "path": "services.frontend.calls.0.policy.retry.max_attempts", "values": [1, 0] }"#,
    ));
    assert_says(
        &stderr,
        &[
            "1 problem in the scenario",
            "services.frontend.calls[0].policy.retry.max_attempts: must be at least 1 (got 0)",
            "(with services.frontend.calls.0.policy.retry.max_attempts = 0)",
        ],
    );
    let stderr = reject(&with(
        r#""variants": [{ "name": "tiny backend", "patch": { "services": { "backend": { "concurrency": 0 } } } }]"#,
    ));
    assert_says(
        &stderr,
        &[
            "1 problem in the scenario",
            "services.backend.concurrency: must be at least 1 (got 0) (in variants[0] \"tiny backend\")",
        ],
    );
}

#[test]
fn every_problem_of_a_call_graph_is_reported_at_once() {
    let text = GRAPH
        .replacen("\"concurrency\": 2", "\"concurrency\": 0", 1)
        .replacen("\"entry\": \"frontend\"", "\"entry\": \"front\"", 1)
        .replacen(
            "\"fraction\": 0.5, \"policy\": { \"timeout\": \"10ms\" }",
            "\"fraction\": 0.7, \"policy\": { \"timeout\": \"10ms\", \"budget\": { \"scope\": \"per_client\", \"ratio\": { \"percent\": 0.1 } } }",
            1,
        )
        .replacen(
            "\"policy\": { \"timeout\": \"1s\",",
            "\"policy\": { \"timeout\": \"1s\", \"propagate_deadline\": true,",
            1,
        );
    let stderr = reject(&text);
    assert_says(
        &stderr,
        &[
            "5 problems in the scenario",
            "clients.entry: names no service (got \"front\"); did you mean \"frontend\"?",
            "services.frontend.calls[1].policy.budget.scope",
            "services.frontend.calls: the calls with a fraction below 1",
            "services.backend.concurrency: must be at least 1 (got 0)",
            "policy.propagate_deadline: applies to calls between services",
        ],
    );
}

/// Every rule of `hedge`, `idempotent` and `idempotency_key`, each broken alone: in the
/// clients' policy of GOOD, or in a call's policy of GRAPH. The message names the path, the
/// rule, the value and the fix, and nothing is written.
#[test]
fn every_rule_of_hedges_and_idempotency_keys_is_checked() {
    let good = |policy: &str| {
        GOOD.replacen(
            r#""policy": { "retry": { "max_attempts": 3 } }"#,
            &format!(r#""policy": {{ "retry": {{ "max_attempts": 3 }}, {policy} }}"#),
            1,
        )
    };
    let call = |policy: &str| {
        GRAPH.replacen(
            r#""policy": { "timeout": "10ms" }"#,
            &format!(r#""policy": {{ "timeout": "10ms", {policy} }}"#),
            1,
        )
    };
    let p = "services.frontend.calls[1].policy";
    // (scenario, what the one problem says)
    let cases: Vec<(String, Vec<String>)> = vec![
        (
            good(r#""hedge": { "delay": "10ms", "max_hedge": 2 }"#),
            vec!["policy.hedge.max_hedge: unknown key; did you mean `max_hedges`?".into()],
        ),
        (
            good(r#""hedg": { "delay": "10ms" }"#),
            vec!["policy.hedg: unknown key; did you mean `hedge`?".into()],
        ),
        (
            good(r#""idempotency_key": { "tll": "1h" }"#),
            vec!["policy.idempotency_key.tll: unknown key; did you mean `ttl`?".into()],
        ),
        (
            good(r#""hedge": { "max_hedges": 2 }"#),
            vec!["policy.hedge.delay: is required".into()],
        ),
        (
            good(r#""hedge": { "delay": 10 }"#),
            vec!["policy.hedge.delay: must be a string (got 10)".into()],
        ),
        (
            good(r#""hedge": { "delay": "10" }"#),
            vec![
                "policy.hedge.delay: a duration needs a unit (got \"10\"); write \"10s\" or \"10ms\" (a hedge delay is a duration such as \"10ms\" or a percentile such as \"p95\")".into(),
            ],
        ),
        (
            good(r#""hedge": { "delay": "0ms" }"#),
            vec!["policy.hedge.delay: must be longer than zero (got \"0ms\")".into()],
        ),
        (
            good(r#""hedge": { "delay": "p100" }"#),
            vec!["policy.hedge.delay: must be a percentile above p0 and below p100 (got \"p100\")".into()],
        ),
        (
            good(r#""hedge": { "delay": "p9x" }"#),
            vec!["policy.hedge.delay: \"p9x\" is not a percentile: write \"p\" and a number above 0 and below 100, such as \"p95\" or \"p99.9\"".into()],
        ),
        (
            good(r#""hedge": { "delay": "10ms", "window": 100 }"#),
            vec![
                "policy.hedge.window: applies to a percentile delay such as \"p95\" only (got 100 with delay \"10ms\")".into(),
                "remove window, or make the delay a percentile".into(),
            ],
        ),
        (
            good(r#""hedge": { "delay": "p95", "window": 19 }"#),
            vec!["policy.hedge.window: must be at least 20 and at most 1000000 (got 19)".into()],
        ),
        (
            good(r#""hedge": { "delay": "p95", "window": 1000001 }"#),
            vec!["policy.hedge.window: must be at least 20 and at most 1000000 (got 1000001)".into()],
        ),
        (
            good(r#""hedge": { "delay": "p95", "max_hedges": 0 }"#),
            vec!["policy.hedge.max_hedges: must be at least 1 and at most 10 (got 0)".into()],
        ),
        (
            call(r#""hedge": { "delay": "1ms", "max_hedges": 11 }"#),
            vec![format!("{p}.hedge.max_hedges: must be at least 1 and at most 10 (got 11)")],
        ),
        (
            call(r#""hedge": { "delay": "1ms", "max_hedges": 1.5 }"#),
            vec![format!("{p}.hedge.max_hedges: must be a whole number (got 1.5)")],
        ),
        (
            call(r#""hedge": { "delay": "1ms", "budget": 0 }"#),
            vec![format!("{p}.hedge.budget: must be a share above 0 and at most 1 (got 0)")],
        ),
        (
            call(r#""hedge": { "delay": "1ms", "budget": 1.5 }"#),
            vec![format!("{p}.hedge.budget: must be a share above 0 and at most 1 (got 1.5)")],
        ),
        (
            call(r#""hedge": { "delay": "1ms", "cancel": "yes" }"#),
            vec![format!("{p}.hedge.cancel: must be true or false (got \"yes\")")],
        ),
        (
            call(r#""idempotent": "no""#),
            vec![format!("{p}.idempotent: must be true or false (got \"no\")")],
        ),
        (
            call(r#""idempotency_key": 3"#),
            vec![format!("{p}.idempotency_key: must be true or false or an object (got 3)")],
        ),
        (
            call(r#""idempotency_key": { "ttl": "0s" }"#),
            vec![format!("{p}.idempotency_key.ttl: must be longer than zero (got \"0s\")")],
        ),
        (
            call(r#""idempotency_key": { "cost": "-1ms" }"#),
            vec![format!("{p}.idempotency_key.cost: must not be negative (got \"-1ms\")")],
        ),
        (
            GRAPH.replacen(
                r#""cache": { "service_time": { "constant": "100us" } }"#,
                r#""cache": { "kind": "occ" }"#,
                1,
            )
            .replacen(
                r#""policy": { "timeout": "10ms" }"#,
                r#""policy": { "timeout": "10ms", "hedge": { "delay": "1ms" } }"#,
                1,
            ),
            vec![
                format!("{p}.hedge: is not supported on calls to \"cache\", of kind \"occ\": an occ attempt is a read and a conditional write"),
                "; remove hedge".into(),
            ],
        ),
        (
            GOOD.replacen(
                r#""server": { "service_time": { "constant": "1ms" } }"#,
                r#""server": { "kind": "occ" }"#,
                1,
            )
            .replacen(
                r#""policy": { "retry": { "max_attempts": 3 } }"#,
                r#""policy": { "idempotency_key": true }"#,
                1,
            ),
            vec![
                "policy.idempotency_key: is not supported on calls to the server, of kind \"occ\"".into(),
                "; remove idempotency_key".into(),
            ],
        ),
    ];
    for (text, needles) in &cases {
        let stderr = reject(text);
        assert_says(&stderr, &["1 problem in the scenario"]);
        let needles: Vec<&str> = needles.iter().map(String::as_str).collect();
        assert_says(&stderr, &needles);
    }
    // A sweep value and a variant's patch are checked like the file.
    let hedged = good(r#""hedge": { "delay": "10ms" }"#);
    let with = |extra: &str| {
        hedged.replacen(
            "\"duration\": \"1s\",",
            &format!("\"duration\": \"1s\", {extra},"),
            1,
        )
    };
    let stderr = reject(&with(
        r#""sweep": { "path": "policy.hedge.delay", "values": ["5ms", "5"] }"#,
    ));
    assert_says(
        &stderr,
        &[
            "1 problem in the scenario",
            "policy.hedge.delay: a duration needs a unit (got \"5\")",
            "(with policy.hedge.delay = \"5\")",
        ],
    );
    let stderr = reject(&with(
        r#""variants": [{ "name": "many", "patch": { "policy": { "hedge": { "max_hedges": 20 } } } }]"#,
    ));
    assert_says(
        &stderr,
        &[
            "1 problem in the scenario",
            "policy.hedge.max_hedges: must be at least 1 and at most 10 (got 20):",
            "remove hedge for none (in variants[0] \"many\")",
        ],
    );
}

/// Every form of the new settings is accepted, in the clients' policy and a call's.
#[test]
fn hedges_and_idempotency_keys_in_every_form_are_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let text = GRAPH
        .replacen(
            r#""policy": { "timeout": "1s","#,
            r#""policy": { "timeout": "1s", "hedge": { "delay": "p99.9", "window": 20, "max_hedges": 10, "cancel": true, "budget": 1 }, "idempotent": false, "idempotency_key": true,"#,
            1,
        )
        .replacen(
            r#""policy": { "timeout": "10ms" }"#,
            r#""policy": { "timeout": "10ms", "hedge": { "delay": "2ms" }, "idempotent": true, "idempotency_key": { "ttl": "1h", "cost": "1ms" } }"#,
            1,
        );
    std::fs::write(dir.path().join("g.json"), text).unwrap();
    let out = retrystorm(dir.path(), &["check", "g.json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every rule of `adaptive_throttle`, each broken alone: in the clients' policy of GOOD, or
/// in a call's policy of GRAPH. The message names the path, the rule, the value and the
/// fix, and nothing is written; every good form is accepted.
#[test]
fn every_rule_of_adaptive_throttling_is_checked() {
    let good = |policy: &str| {
        GOOD.replacen(
            r#""policy": { "retry": { "max_attempts": 3 } }"#,
            &format!(r#""policy": {{ "retry": {{ "max_attempts": 3 }}, {policy} }}"#),
            1,
        )
    };
    let call = |policy: &str| {
        GRAPH.replacen(
            r#""policy": { "timeout": "10ms" }"#,
            &format!(r#""policy": {{ "timeout": "10ms", {policy} }}"#),
            1,
        )
    };
    let p = "services.frontend.calls[1].policy";
    let cases: Vec<(String, Vec<String>)> = vec![
        (
            good(r#""adaptive_throttle": { "kk": 2 }"#),
            vec!["policy.adaptive_throttle.kk: unknown key; did you mean `k`?".into()],
        ),
        (
            good(r#""adaptive_throtle": true"#),
            vec!["policy.adaptive_throtle: unknown key; did you mean `adaptive_throttle`?".into()],
        ),
        (
            good(r#""adaptive_throttle": { "k": 0.5 }"#),
            vec![
                "policy.adaptive_throttle.k: must be at least 1 and at most 100 (got 0.5)".into(),
                "2 is the SRE book's choice".into(),
            ],
        ),
        (
            good(r#""adaptive_throttle": { "k": 101 }"#),
            vec!["policy.adaptive_throttle.k: must be at least 1 and at most 100 (got 101)".into()],
        ),
        (
            good(r#""adaptive_throttle": { "window": "500ms" }"#),
            vec![
                "policy.adaptive_throttle.window: must be at least 1s and at most 24h (got \"500ms\")".into(),
                "the SRE book uses \"2m\"".into(),
            ],
        ),
        (
            good(r#""adaptive_throttle": { "window": "2" }"#),
            vec!["policy.adaptive_throttle.window: a duration needs a unit (got \"2\")".into()],
        ),
        (
            call(r#""adaptive_throttle": { "window": "25h" }"#),
            vec![format!(
                "{p}.adaptive_throttle.window: must be at least 1s and at most 24h (got \"25h\")"
            )],
        ),
        (
            call(r#""adaptive_throttle": 2"#),
            vec![format!("{p}.adaptive_throttle: must be true or false or an object (got 2)")],
        ),
    ];
    for (text, needles) in &cases {
        let stderr = reject(text);
        assert_says(&stderr, &["1 problem in the scenario"]);
        let needles: Vec<&str> = needles.iter().map(String::as_str).collect();
        assert_says(&stderr, &needles);
    }
    let dir = tempfile::tempdir().unwrap();
    for (i, text) in [
        good(r#""adaptive_throttle": true"#),
        good(r#""adaptive_throttle": false"#),
        good(r#""adaptive_throttle": { "k": 1, "window": "1s" }"#),
        call(r#""adaptive_throttle": { "k": 100, "window": "24h" }"#),
    ]
    .iter()
    .enumerate()
    {
        let name = format!("s{i}.json");
        std::fs::write(dir.path().join(&name), text).unwrap();
        let out = retrystorm(dir.path(), &["check", &name]);
        assert!(
            out.status.success(),
            "{text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Every rule of the shedding disciplines, each broken alone: on the server of GOOD, or on a
/// service of GRAPH. The message names the path, the rule, the value and the fix, and
/// nothing is written.
#[test]
fn every_rule_of_the_shedding_disciplines_is_checked() {
    let good = |discipline: &str| {
        GOOD.replacen(
            r#""server": { "service_time": { "constant": "1ms" } }"#,
            &format!(
                r#""server": {{ "service_time": {{ "constant": "1ms" }}, "discipline": {discipline} }}"#
            ),
            1,
        )
    };
    let service = |discipline: &str| {
        GRAPH.replacen(
            r#""backend": { "concurrency": 2,"#,
            &format!(r#""backend": {{ "concurrency": 2, "discipline": {discipline},"#),
            1,
        )
    };
    let p = "services.backend.discipline";
    let cases: Vec<(String, Vec<String>)> = vec![
        (
            good(r#""codl""#),
            vec![
                "server.discipline: must be one of: fifo, lifo, codel, adaptive_lifo or an object with one key, one of: codel, adaptive_lifo (got \"codl\"); did you mean \"codel\"?".into(),
            ],
        ),
        (
            good(r#"{ "codle": {} }"#),
            vec!["server.discipline.codle: unknown key; did you mean `codel`?".into()],
        ),
        (
            good(r#"{ "codel": { "targt": "5ms" } }"#),
            vec!["server.discipline.codel.targt: unknown key; did you mean `target`?".into()],
        ),
        (
            good(r#"{ "adaptive_lifo": { "target": "5ms" } }"#),
            vec!["server.discipline.adaptive_lifo.target: unknown key; the keys here are interval".into()],
        ),
        (
            good(r#"{ "codel": {}, "adaptive_lifo": {} }"#),
            vec!["server.discipline: has 2 keys (codel, adaptive_lifo) but must have exactly one".into()],
        ),
        (
            good(r#"{ "codel": "5ms" }"#),
            vec!["server.discipline.codel: must be an object (got \"5ms\")".into()],
        ),
        (
            good(r#"{ "codel": { "target": "0ms" } }"#),
            vec!["server.discipline.codel.target: must be longer than zero (got \"0ms\")".into()],
        ),
        (
            good(r#"{ "codel": { "target": 5 } }"#),
            vec!["server.discipline.codel.target: a duration needs a unit (got the bare number 5); write \"5s\" or \"5ms\"".into()],
        ),
        (
            good(r#"{ "codel": { "interval": "0s" } }"#),
            vec!["server.discipline.codel.interval: must be longer than zero (got \"0s\")".into()],
        ),
        (
            good(r#"{ "codel": { "target": "200ms" } }"#),
            vec![
                "server.discipline.codel.target: must be shorter than the interval (got target 200ms, interval 100ms)".into(),
                "lower target or raise interval".into(),
            ],
        ),
        (
            service(r#"{ "codel": { "target": "10ms", "interval": "10ms" } }"#),
            vec![format!(
                "{p}.codel.target: must be shorter than the interval (got target 10ms, interval 10ms)"
            )],
        ),
        (
            service(r#"{ "adaptive_lifo": { "interval": "0s" } }"#),
            vec![format!("{p}.adaptive_lifo.interval: must be longer than zero (got \"0s\")")],
        ),
        (
            GOOD.replacen(
                r#""server": { "service_time": { "constant": "1ms" } }"#,
                r#""server": { "kind": "occ", "discipline": "codel" }"#,
                1,
            ),
            vec!["server.discipline: applies to a queue server only".into()],
        ),
    ];
    for (text, needles) in &cases {
        let stderr = reject(text);
        assert_says(&stderr, &["1 problem in the scenario"]);
        let needles: Vec<&str> = needles.iter().map(String::as_str).collect();
        assert_says(&stderr, &needles);
    }
    // A variant's patch is checked like the file, and names the variant.
    let stderr = reject(&GOOD.replacen(
        "\"duration\": \"1s\",",
        r#""duration": "1s", "variants": [{ "name": "shed", "patch": { "server": { "discipline": { "codel": { "interval": "1ms" } } } } }],"#,
        1,
    ));
    assert_says(
        &stderr,
        &[
            "1 problem in the scenario",
            "server.discipline.codel.target: must be shorter than the interval (got target 5ms, interval 1ms)",
            "(in variants[0] \"shed\")",
        ],
    );
}

/// Every form of a shedding discipline is accepted, on a server and on a service.
#[test]
fn shedding_disciplines_in_every_form_are_accepted() {
    let dir = tempfile::tempdir().unwrap();
    for (i, discipline) in [
        r#""codel""#,
        r#""adaptive_lifo""#,
        r#"{ "codel": {} }"#,
        r#"{ "codel": { "target": "1ms", "interval": "1s" } }"#,
        r#"{ "adaptive_lifo": { "interval": "50ms" } }"#,
    ]
    .into_iter()
    .enumerate()
    {
        let text = GRAPH.replacen(
            r#""backend": { "concurrency": 2,"#,
            &format!(r#""backend": {{ "concurrency": 2, "discipline": {discipline},"#),
            1,
        );
        std::fs::write(dir.path().join(format!("g{i}.json")), text).unwrap();
        let out = retrystorm(dir.path(), &["check", &format!("g{i}.json")]);
        assert!(
            out.status.success(),
            "{discipline}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// An endless or huge input (`/dev/zero`, a wrong file) is refused after 16 MiB, with exit 2,
/// rather than read until memory runs out; so is a file that is not UTF-8.
#[test]
fn an_endless_or_binary_input_is_refused_before_it_fills_memory() {
    let dir = tempfile::tempdir().unwrap();
    for args in [["check", "/dev/zero"], ["run", "/dev/zero"]] {
        let out = retrystorm(dir.path(), &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("larger than 16 MiB"), "{stderr}");
    }
    std::fs::write(dir.path().join("b.json"), b"{\"name\": \"\xff\"}").unwrap();
    let out = retrystorm(dir.path(), &["check", "b.json"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not UTF-8 text (byte 10"), "{stderr}");
    assert!(
        std::fs::read_dir(dir.path()).unwrap().count() == 1,
        "nothing written"
    );
}

/// Regression: while a file had a misspelt key or a value of the wrong type, its out-of-range
/// values went unreported, so fixing one list brought another. Both kinds come in one pass,
/// and a value taken out for its type causes no second problem.
#[test]
fn check_reports_range_errors_together_with_type_errors() {
    let text = r#"{
  "name": "bad", "duration": "1s",
  "clients": { "count": 2, "workload": { "open": { "rate_per_s": 10 } } },
  "server": { "concurency": 2, "queue_limit": 2.5, "error_rate": 1.5,
              "service_time": { "constant": "1ms" } },
  "policy": { "timout": "1s", "retry": { "max_attempts": 5000 } }
}"#;
    let stderr = reject_by("check", text);
    assert_says(
        &stderr,
        &[
            "5 problems",
            "server.concurency: unknown key",
            "policy.timout: unknown key",
            "server.queue_limit: must be a whole number",
            "server.error_rate:",
            "policy.retry.max_attempts:",
        ],
    );
}

#[test]
fn envoy_settings_name_their_path_rule_value_and_fix() {
    let with =
        |policy: &str| GOOD.replace(r#""policy": { "retry": { "max_attempts": 3 } }"#, policy);
    let stderr = reject(&with(
        r#""policy": { "retry": { "max_attempts": 3, "backoff": { "envoy": { "base_interval": "2500us", "max_interval": "1ms" } } },
                        "budget": { "retry_budget": { "budget_percent": 120 } } }"#,
    ));
    for needle in [
        "policy.retry.backoff.envoy.base_interval: must be a whole number of milliseconds, at least 1ms (got 2.5ms)",
        "policy.budget.retry_budget.budget_percent",
        "(got 120)",
        "write 20 % as 20",
    ] {
        assert!(stderr.contains(needle), "missing {needle:?} in:\n{stderr}");
    }
    let stderr = reject(&with(
        r#""policy": { "retry": { "max_attempts": 3, "backoff": { "envoy": { "base_interval": "50ms", "max_interval": "20ms" } } },
                        "budget": { "max_retries": 3, "ratio": { "percent": 0.1 } } }"#,
    ));
    for needle in [
        "policy.retry.backoff.envoy.max_interval: must not be shorter than base_interval (got max_interval 20ms, base_interval 50ms)",
        "policy.budget: needs exactly one of",
        "(got 2)",
    ] {
        assert!(stderr.contains(needle), "missing {needle:?} in:\n{stderr}");
    }
    let stderr = reject(&with(
        r#""policy": { "retry": { "max_attempts": 3, "backoff": { "base": "50ms", "cap": "1s", "jitter": "full", "throttling_base": "2s" } } }"#,
    ));
    assert!(
        stderr.contains("policy.retry.backoff.throttling_base: must not be longer than cap (got throttling_base 2s, cap 1s)"),
        "{stderr}"
    );
}
