//! Rules of the scenario file that reach past one setting: a sweep and the variants' patches
//! must not set the same thing, and a finished run must re-render from what it wrote.

use crate::cli::retrystorm;
use crate::scenario_path;

#[test]
fn sweeping_a_path_that_a_variant_patch_sets_is_an_error_that_writes_nothing() {
    // thundering-herd's variants set policy.retry.backoff.jitter: sweeping it would run full
    // jitter under the name "no jitter" and do nothing for the other three variants.
    let dir = tempfile::tempdir().unwrap();
    let file = scenario_path("thundering-herd");
    let out = dir.path().join("out");
    for sweep in [
        "policy.retry.backoff.jitter=\"full\",\"none\"",
        "policy.retry={\"max_attempts\":2}",
    ] {
        let run = retrystorm(
            dir.path(),
            &[
                "run",
                file.to_str().unwrap(),
                "--sweep",
                sweep,
                "--out",
                out.to_str().unwrap(),
            ],
        );
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{sweep}: {stderr}");
        assert!(!out.exists(), "{sweep}: nothing is written");
        for variant in ["full jitter", "equal jitter", "decorrelated jitter"] {
            let needle = format!("variant \"{variant}\" sets \"policy.retry.backoff.jitter\"");
            assert_eq!(stderr.matches(&needle).count(), 1, "{sweep}: {stderr}");
        }
        assert!(stderr.contains("remove \"policy.retry.backoff.jitter\" from the variant's patch"));
        assert!(!stderr.contains("\"no jitter\""), "{stderr}");
    }
    // A sibling of what the patches set sweeps fine.
    let run = retrystorm(
        dir.path(),
        &[
            "run",
            file.to_str().unwrap(),
            "--sweep",
            "policy.retry.backoff.base=\"50ms\",\"100ms\"",
            "--replications",
            "1",
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
}
