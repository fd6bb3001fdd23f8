//! Sharded runs through the binary: every `run --shard I/K` then `merge` gives the folder a
//! single `run` writes, byte for byte; a merge refuses missing, duplicate, foreign, damaged or
//! mismatched shards and writes nothing; `--shard auto` reads Slurm's and Kubernetes' indices.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use crate::scenario_path;

/// The job-array variables a test's environment might already hold.
const ARRAY_VARS: [&str; 4] = [
    "SLURM_ARRAY_TASK_ID",
    "SLURM_ARRAY_TASK_COUNT",
    "SLURM_ARRAY_TASK_MIN",
    "JOB_COMPLETION_INDEX",
];

fn retrystorm(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_retrystorm"));
    cmd.args(args).current_dir(dir);
    for var in ARRAY_VARS {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("the binary runs")
}

fn ok(dir: &Path, args: &[&str]) -> Output {
    let out = retrystorm(dir, args, &[]);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Every file of a folder, by name.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

/// Runs every shard of `k`, in reverse order, and returns their folders.
fn shards(dir: &Path, file: &str, extra: &[&str], k: u64, tag: &str) -> Vec<String> {
    (0..k)
        .rev()
        .map(|i| {
            let out = format!("{tag}-{i}-of-{k}");
            let spec = format!("{i}/{k}");
            let mut args = vec!["run", file, "--shard", &spec, "--out", &out, "-q"];
            args.extend(extra);
            ok(dir, &args);
            out
        })
        .collect()
}

fn merge(dir: &Path, shards: &[String], out: &str) -> Output {
    let mut args = vec!["merge"];
    args.extend(shards.iter().map(String::as_str));
    args.extend(["--out", out]);
    retrystorm(dir, &args, &[])
}

/// The sweeps, with and without: the single run and every sharding agree on every file.
#[test]
fn merged_shards_are_the_single_run_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let herd = scenario_path("thundering-herd");
    let spike = scenario_path("collapse-after-spike");
    let cases: [(&str, &Path, Vec<&str>); 3] = [
        (
            "one-axis",
            &herd,
            vec![
                "--replications",
                "2",
                "--sweep",
                "clients.count=200,500",
                "--set",
                "metrics.bucket=250ms",
            ],
        ),
        (
            "two-axis",
            &herd,
            vec![
                "--replications",
                "2",
                "--sweep",
                "clients.count=200,500",
                "--sweep",
                "clients.workload.closed.requests_per_client=1,2",
            ],
        ),
        // 4 units, so 7 shards split replications; its variants' runs split between
        // recovering and collapsing, so the merge simulates their typical runs again.
        ("no-sweep", &spike, vec!["--replications", "4"]),
    ];
    for (name, file, extra) in &cases {
        let file = file.to_str().unwrap();
        let single = format!("{name}-single");
        let mut args = vec!["run", file, "--out", &single, "-q"];
        args.extend(extra.iter().copied());
        ok(dir.path(), &args);
        let expected = files(&dir.path().join(&single));
        assert!(expected.contains_key("summary.json"));
        if *name == "no-sweep" {
            assert!(
                expected.contains_key("example-runs.csv"),
                "the case has typical runs to simulate again"
            );
        } else {
            assert!(expected.contains_key("sweep.csv"));
        }
        for k in [1, 2, 3, 7] {
            let folders = shards(dir.path(), file, extra, k, name);
            let merged = format!("{name}-merged-{k}");
            let out = merge(dir.path(), &folders, &merged);
            assert!(
                out.status.success(),
                "{name} K={k}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let got = files(&dir.path().join(&merged));
            assert_eq!(
                got.keys().collect::<Vec<_>>(),
                expected.keys().collect::<Vec<_>>(),
                "{name} K={k}: the same files"
            );
            for (file, bytes) in &expected {
                assert!(got[file] == *bytes, "{name} K={k}: {file} differs");
            }
        }
    }
}

#[test]
fn a_shard_with_nothing_to_do_is_a_valid_empty_shard() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario_path("collapse-after-spike");
    let file = file.to_str().unwrap();
    // 4 units of 1 replication over 6 shards: two shards hold nothing.
    let extra = ["--replications", "1"];
    let folders = shards(dir.path(), file, &extra, 6, "s");
    let info = |f: &str| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(dir.path().join(f).join("shard.json")).unwrap())
            .unwrap()
    };
    let empty = folders
        .iter()
        .filter(|f| info(f)["holds"].as_array().unwrap().is_empty())
        .count();
    assert_eq!(empty, 2);
    assert!(merge(dir.path(), &folders, "merged").status.success());
    ok(
        dir.path(),
        &["run", file, "--out", "single", "-q", "--replications", "1"],
    );
    assert!(files(&dir.path().join("single")) == files(&dir.path().join("merged")));
}

/// A refused merge: exit 2, the message names `needles`, and nothing is written.
fn refused(dir: &Path, shards: &[String], needles: &[&str]) {
    let out = merge(dir, shards, "refused-out");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    for n in needles {
        assert!(stderr.contains(n), "{n:?} not in: {stderr}");
    }
    assert!(!dir.join("refused-out").exists(), "nothing is written");
}

#[test]
fn merge_refuses_missing_duplicate_foreign_damaged_and_mismatched_shards() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let herd = scenario_path("thundering-herd");
    let herd = herd.to_str().unwrap();
    let extra = ["--replications", "2"];
    let mut three = shards(d, herd, &extra, 3, "a");
    three.reverse();
    // Missing: shard 1 of 3 holds units 1 to 3 of 5 (whole units, as 5 >= 3).
    refused(
        d,
        &[three[0].clone(), three[2].clone()],
        &["shard 1/3 is missing", "unit 1 (", "unit 2 ("],
    );
    // Duplicate.
    let mut twice = three.clone();
    twice.push(format!("./{}", three[1]));
    refused(d, &twice, &["shard 1/3 is given 2 times", "a-1-of-3"]);
    // Foreign: shard 2 of another scenario.
    let spike = scenario_path("collapse-after-spike");
    let other = shards(d, spike.to_str().unwrap(), &extra, 3, "b");
    refused(
        d,
        &[three[0].clone(), three[1].clone(), other[0].clone()],
        &["b-2-of-3", "from another scenario"],
    );
    // Mismatched --seed: the seed is an override that changes results.
    let seeded: Vec<String> = shards(d, herd, &["--replications", "2", "--seed", "9"], 3, "c");
    refused(
        d,
        &[three[0].clone(), three[1].clone(), seeded[0].clone()],
        &["c-2-of-3", "--seed 9"],
    );
    // Truncated: the units file of shard 1 cut short.
    let units = d.join(&three[1]).join("units.jsonl");
    let bytes = std::fs::read(&units).unwrap();
    std::fs::write(&units, &bytes[..bytes.len() / 2]).unwrap();
    refused(
        d,
        &three,
        &["a-1-of-3", "units.jsonl", "truncated or edited"],
    );
    std::fs::write(&units, &bytes).unwrap();
    // Restored, the same shards merge.
    assert!(merge(d, &three, "fine").status.success());
}

fn shard_of(dir: &Path, spec: &str, env: &[(&str, &str)], out: &str) -> Result<(u64, u64), String> {
    let file = scenario_path("thundering-herd");
    let o = retrystorm(
        dir,
        &[
            "run",
            file.to_str().unwrap(),
            "--replications",
            "1",
            "--shard",
            spec,
            "--out",
            out,
            "-q",
        ],
        env,
    );
    if !o.status.success() {
        assert_eq!(o.status.code(), Some(2));
        assert!(!dir.join(out).exists(), "nothing is written");
        return Err(String::from_utf8_lossy(&o.stderr).into_owned());
    }
    let info: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join(out).join("shard.json")).unwrap()).unwrap();
    Ok((
        info["index"].as_u64().unwrap(),
        info["count"].as_u64().unwrap(),
    ))
}

#[test]
fn shard_auto_reads_slurm_and_kubernetes_indices() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Slurm, an array 1-3: the task with ID 2 is the second of three.
    let slurm1 = [
        ("SLURM_ARRAY_TASK_ID", "2"),
        ("SLURM_ARRAY_TASK_COUNT", "3"),
        ("SLURM_ARRAY_TASK_MIN", "1"),
    ];
    assert_eq!(shard_of(d, "auto", &slurm1, "s1"), Ok((1, 3)));
    // Slurm, an array 0-1.
    let slurm0 = [
        ("SLURM_ARRAY_TASK_ID", "1"),
        ("SLURM_ARRAY_TASK_COUNT", "2"),
        ("SLURM_ARRAY_TASK_MIN", "0"),
    ];
    assert_eq!(shard_of(d, "auto", &slurm0, "s0"), Ok((1, 2)));
    assert_eq!(shard_of(d, "auto/2", &slurm0, "s0k"), Ok((1, 2)));
    // A Kubernetes Indexed Job.
    let k8s = [("JOB_COMPLETION_INDEX", "3")];
    assert_eq!(shard_of(d, "auto/4", &k8s, "k"), Ok((3, 4)));
    // Unset, out of range, inconsistent.
    let e = shard_of(d, "auto", &[], "u").unwrap_err();
    assert!(
        e.contains("SLURM_ARRAY_TASK_ID") && e.contains("--shard I/K"),
        "{e}"
    );
    let e = shard_of(d, "auto/4", &[], "u").unwrap_err();
    assert!(e.contains("JOB_COMPLETION_INDEX"), "{e}");
    let e = shard_of(d, "auto/3", &k8s, "u").unwrap_err();
    assert!(e.contains("index 3") && e.contains("3 shards"), "{e}");
    let e = shard_of(
        d,
        "auto",
        &[
            ("SLURM_ARRAY_TASK_ID", "4"),
            ("SLURM_ARRAY_TASK_COUNT", "3"),
        ],
        "u",
    )
    .unwrap_err();
    assert!(e.contains("SLURM_ARRAY_TASK_ID gives shard index 4"), "{e}");
    let e = shard_of(d, "auto/2", &slurm1, "u").unwrap_err();
    assert!(e.contains("SLURM_ARRAY_TASK_COUNT=3"), "{e}");
}

#[test]
fn bad_shard_text_is_refused_with_the_rule_and_an_example() {
    let dir = tempfile::tempdir().unwrap();
    for bad in ["3/3", "x", "1/0", "a/2", "auto/0", "2"] {
        let e = shard_of(dir.path(), bad, &[], "u").unwrap_err();
        assert!(
            e.contains("--shard takes I/K") && e.contains("--shard 0/4"),
            "{bad}: {e}"
        );
    }
}

/// A command replaces only a folder of its own kind: a merge never replaces one of its own
/// input shards, a shard never a finished run, a run never a shard. Each is refused with exit
/// 2 before anything runs, and the folder is as it was.
#[test]
fn no_command_replaces_a_folder_of_another_kind() {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario_path("first-storm");
    let file = path.to_str().unwrap();
    let parts = shards(dir.path(), file, &["--replications", "2"], 2, "s");
    let before = files(&dir.path().join(&parts[0]));
    let refused = |args: &[&str], needle: &str| {
        let out = retrystorm(dir.path(), args, &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    };
    // merge --out naming one of its own inputs.
    let mut args = vec!["merge", parts[0].as_str(), parts[1].as_str(), "--out"];
    args.push(parts[0].as_str());
    refused(&args, "never replaces a shard");
    // A plain run into a shard folder.
    refused(
        &["run", file, "--replications", "2", "--out", &parts[0], "-q"],
        "never replaces a shard",
    );
    assert_eq!(
        files(&dir.path().join(&parts[0])),
        before,
        "the shard is as it was"
    );
    // A shard into a finished run.
    ok(
        dir.path(),
        &["run", file, "--replications", "2", "--out", "run", "-q"],
    );
    let run = files(&dir.path().join("run"));
    refused(
        &[
            "run",
            file,
            "--replications",
            "2",
            "--shard",
            "0/2",
            "--out",
            "run",
            "-q",
        ],
        "a shard never replaces a run",
    );
    assert_eq!(files(&dir.path().join("run")), run, "the run is as it was");
    // Each kind still replaces its own: a shard run again, a run run again.
    ok(
        dir.path(),
        &[
            "run",
            file,
            "--replications",
            "2",
            "--shard",
            "0/2",
            "--out",
            &parts[0],
            "-q",
        ],
    );
    ok(
        dir.path(),
        &["run", file, "--replications", "2", "--out", "run", "-q"],
    );
}

/// Rewrites `dir/shard.json` through `edit` and recomputes the manifest, as someone who
/// edits a shard and covers their tracks would.
fn edit_shard(dir: &Path, edit: impl Fn(&mut serde_json::Value)) {
    let mut info: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("shard.json")).unwrap()).unwrap();
    edit(&mut info);
    std::fs::write(dir.join("shard.json"), serde_json::to_vec(&info).unwrap()).unwrap();
    let files: Vec<retrystorm::report::OutputFile> = files(dir)
        .into_iter()
        .filter(|(name, _)| name != "manifest.json")
        .map(|(name, bytes)| retrystorm::report::OutputFile::new(name, bytes))
        .collect();
    let manifest = retrystorm::output::publish::Manifest::of(&files).unwrap();
    std::fs::write(dir.join("manifest.json"), manifest.to_bytes()).unwrap();
}

/// A shard.json edited with its manifest recomputed is input like any other: a count of 0 or
/// 10^12, an index past the count or replications that end before they start are refused
/// with exit 2 and the field, never a panic, a division by zero or an endless loop.
#[test]
fn merge_refuses_edited_shard_fields_without_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario_path("first-storm");
    let file = path.to_str().unwrap();
    type Edit = fn(&mut serde_json::Value);
    let cases: [(&str, Edit); 5] = [
        ("count 0", |i| i["count"] = 0.into()),
        ("count 10^12", |i| i["count"] = 1_000_000_000_000u64.into()),
        ("index past count", |i| i["index"] = 7.into()),
        ("jobs reversed", |i| i["jobs"] = serde_json::json!([5, 1])),
        ("replications reversed", |i| {
            i["holds"][0]["replications"] = serde_json::json!([2, 0])
        }),
    ];
    for (what, edit) in cases {
        let tag = what.replace(' ', "_").replace('^', "");
        let parts = shards(dir.path(), file, &["--replications", "2"], 2, &tag);
        edit_shard(&dir.path().join(&parts[0]), edit);
        let out = merge(dir.path(), &parts, &format!("merged-{tag}"));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {stderr}");
        assert!(
            stderr.contains("its shard.json has") || stderr.contains("its shard.json holds"),
            "{what}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{what}: {stderr}");
    }
}

/// examples/slurm/submit.sh refuses a scenario or output name that a command would take for
/// an option (`-x.json`, `--help`, `-`) or an empty one, before it makes any folder or submits.
#[test]
fn the_slurm_submit_script_refuses_names_taken_for_options() {
    let dir = tempfile::tempdir().unwrap();
    let script = format!("{}/examples/slurm/submit.sh", env!("CARGO_MANIFEST_DIR"));
    std::fs::write(dir.path().join("-x.json"), "{}").unwrap();
    for (scenario, out, needle) in [
        ("-x.json", "out", "write it as ./-x.json"),
        ("s.json", "--help", "write it as ./--help"),
        ("s.json", "-", "write it as ./-"),
        ("", "out", "must not be empty"),
    ] {
        let run = Command::new("bash")
            .args([script.as_str(), scenario, out])
            .current_dir(dir.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{scenario} {out}: {stderr}");
        assert!(stderr.contains(needle), "{scenario} {out}: {stderr}");
    }
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(names.len(), 1, "no folder was made");
}

/// A shard whose numbers were edited out of range (a success share of 7, manifest recomputed)
/// is refused by the merge with exit 2, rather than merged into a folder that `report DIR`
/// then refuses.
#[test]
fn merge_writes_nothing_that_report_would_refuse() {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario_path("first-storm");
    let parts = shards(
        dir.path(),
        path.to_str().unwrap(),
        &["--replications", "2"],
        2,
        "s",
    );
    let shard = dir.path().join(&parts[0]);
    let units = String::from_utf8(std::fs::read(shard.join("units.jsonl")).unwrap()).unwrap();
    let edited = units.replacen("\"success_rate\":0.", "\"success_rate\":7.", 1);
    assert_ne!(units, edited, "the edit took");
    std::fs::write(shard.join("units.jsonl"), edited).unwrap();
    edit_shard(&shard, |_| {});
    let out = merge(dir.path(), &parts, "merged");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("would not read back"), "{stderr}");
    assert!(!dir.path().join("merged").exists());
}
