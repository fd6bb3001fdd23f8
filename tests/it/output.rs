//! The output folder: written whole or not at all, replaced as a whole, never outside itself,
//! and read back by `report DIR` only after every check. Each case is named after what it
//! catches.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use retrystorm::output::publish::{self, Options};
use retrystorm::output::{RunFolder, reload_files};
use retrystorm::report::OutputFile;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::cli::retrystorm;

/// A scenario that runs in a fraction of a second, with two variants.
const FAST: &str = r#"{
  "name": "fast",
  "duration": "2s",
  "replications": 2,
  "clients": { "count": 2, "workload": { "open": { "rate_per_s": 50 } } },
  "server": { "service_time": { "constant": "1ms" } },
  "policy": { "retry": { "max_attempts": 3 } },
  "variants": [
    { "name": "three attempts", "patch": {} },
    { "name": "one attempt", "patch": { "policy": { "retry": { "max_attempts": 1 } } } }
  ]
}"#;

/// A case: what it is (or the file it names), what it does to a folder, what the message says.
type Case<'a> = (&'a str, &'a dyn Fn(&Path), &'a str);
/// The same, owning its change.
type BoxedCase = (&'static str, Box<dyn Fn(&Path)>, &'static str);

/// Writes `text` as `name` in `dir` and returns its path as a string.
fn scenario(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn run_ok(dir: &Path, args: &[&str]) -> Output {
    let out = retrystorm(dir, args);
    assert!(out.status.success(), "{:?}: {}", args, text(&out.stderr));
    out
}

/// Runs retrystorm, killing it if it has not ended within a minute (a hang is a bug here,
/// whatever the machine's speed; the caller's checks of the exit code then fail).
fn run_within_a_minute(dir: &Path, args: &[&str]) -> Output {
    use std::io::Read as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let drain = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// Every file in `dir`, by name.
fn names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect()
}

/// Every entry in `dir` with its bytes (links as their targets' paths, folders as a mark).
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for name in names(dir) {
        let path = dir.join(&name);
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let bytes = if meta.is_dir() {
            b"<a folder>".to_vec()
        } else if meta.file_type().is_symlink() {
            std::fs::read_link(&path)
                .unwrap()
                .to_string_lossy()
                .into_owned()
                .into_bytes()
        } else {
            std::fs::read(&path).unwrap()
        };
        out.push((name, bytes));
    }
    out
}

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Asserts that `dir` holds exactly one whole run: its manifest lists every other file, each
/// with its size and SHA-256, and its run id is the one of its two data files. Returns the
/// run id.
fn assert_whole_run(dir: &Path) -> String {
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    let mut listed = BTreeSet::new();
    let mut digest = std::collections::BTreeMap::new();
    for f in manifest["files"].as_array().unwrap() {
        let name = f["name"].as_str().unwrap().to_string();
        let bytes = std::fs::read(dir.join(&name))
            .unwrap_or_else(|e| panic!("{}: {name} is listed but: {e}", dir.display()));
        assert_eq!(f["bytes"].as_u64().unwrap(), bytes.len() as u64, "{name}");
        assert_eq!(f["sha256"].as_str().unwrap(), sha256(&bytes), "{name}");
        digest.insert(name.clone(), sha256(&bytes));
        listed.insert(name);
    }
    listed.insert("manifest.json".to_string());
    assert_eq!(
        names(dir),
        listed,
        "{}: files not in the manifest",
        dir.display()
    );
    let id = sha256(
        format!(
            "scenario.resolved.json {}\nsummary.json {}\n",
            digest["scenario.resolved.json"], digest["summary.json"]
        )
        .as_bytes(),
    );
    assert_eq!(manifest["run_id"].as_str().unwrap(), id);
    assert_eq!(manifest["retrystorm"], env!("CARGO_PKG_VERSION"));
    id
}

/// Asserts that no temporary folder of retrystorm's is left in `parent`.
fn assert_no_temporary_folder(parent: &Path) {
    let left: Vec<String> = names(parent)
        .into_iter()
        .filter(|n| n.contains(".retrystorm-"))
        .collect();
    assert!(
        left.is_empty(),
        "left behind in {}: {left:?}",
        parent.display()
    );
}

#[test]
fn a_rerun_replaces_the_folder_as_a_whole_and_stale_files_go() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), "fast.json", FAST);
    let out = dir.path().join("out");
    let args = |extra: &[&'static str]| {
        let mut a = vec!["run", file.as_str(), "--out", "out", "--quiet"];
        a.extend_from_slice(extra);
        a
    };
    run_ok(
        dir.path(),
        &args(&["--sweep", "clients.workload.open.rate_per_s=50,100"]),
    );
    assert_whole_run(&out);
    assert!(out.join("sweep.csv").exists());
    assert!(out.join("work.png").exists());
    run_ok(dir.path(), &args(&["--format", "svg"]));
    assert_whole_run(&out);
    for stale in ["sweep.csv", "work.png", "work.csv", "comparison.png"] {
        assert!(
            !out.join(stale).exists(),
            "{stale} of the earlier run is still there"
        );
    }
    assert!(out.join("comparison.svg").exists());
    assert_no_temporary_folder(dir.path());
}

#[test]
fn identical_runs_write_identical_folders() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), "fast.json", FAST);
    run_ok(dir.path(), &["run", &file, "--out", "a", "--quiet"]);
    run_ok(dir.path(), &["run", &file, "--out", "b", "--quiet"]);
    assert_eq!(
        snapshot(&dir.path().join("a")),
        snapshot(&dir.path().join("b")),
        "the manifest holds nothing of the moment or the place"
    );
    run_ok(
        dir.path(),
        &["run", &file, "--out", "c", "--quiet", "--seed", "7"],
    );
    assert_ne!(
        assert_whole_run(&dir.path().join("a")),
        assert_whole_run(&dir.path().join("c"))
    );
}

#[test]
fn a_folder_that_is_not_a_run_is_refused_and_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), "fast.json", FAST);
    let cases: [Case; 5] = [
        (
            "notes",
            &|d| std::fs::write(d.join("notes.txt"), "mine").unwrap(),
            "notes.txt",
        ),
        (
            "subfolder",
            &|d| std::fs::create_dir(d.join("data")).unwrap(),
            "data, a folder",
        ),
        (
            "bare report",
            &|d| std::fs::write(d.join("report.md"), "# mine").unwrap(),
            "not a retrystorm run",
        ),
        (
            "foreign manifest",
            &|d| std::fs::write(d.join("manifest.json"), "{\"name\": \"x\"}").unwrap(),
            "not a retrystorm manifest",
        ),
        (
            "data beside a run",
            &|d| {
                std::fs::write(d.join("summary.json"), "{}").unwrap();
                std::fs::write(d.join("scenario.resolved.json"), "{}").unwrap();
                std::fs::write(d.join("data.csv"), "a,b").unwrap();
            },
            "data.csv",
        ),
    ];
    for (what, make, says) in cases {
        let target = dir.path().join(what.replace(' ', "-"));
        std::fs::create_dir(&target).unwrap();
        make(&target);
        let before = snapshot(&target);
        let out = retrystorm(
            dir.path(),
            &["run", &file, "--out", target.to_str().unwrap(), "--quiet"],
        );
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {stderr}");
        assert!(
            stderr.contains("refusing to write into"),
            "{what}: {stderr}"
        );
        assert!(stderr.contains(says), "{what}: {stderr}");
        assert_eq!(snapshot(&target), before, "{what}: the folder was touched");
    }
    // A file where the folder would go.
    std::fs::write(dir.path().join("plain"), "mine").unwrap();
    let out = retrystorm(dir.path(), &["run", &file, "--out", "plain", "--quiet"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("a file, not a folder"));
    assert_eq!(std::fs::read(dir.path().join("plain")).unwrap(), b"mine");
    assert_no_temporary_folder(dir.path());
}

#[test]
fn a_folder_written_before_manifests_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), "fast.json", FAST);
    run_ok(dir.path(), &["run", &file, "--out", "old", "--quiet"]);
    let old = dir.path().join("old");
    std::fs::remove_file(old.join("manifest.json")).unwrap();
    run_ok(
        dir.path(),
        &["run", &file, "--out", "old", "--quiet", "--seed", "3"],
    );
    assert_whole_run(&old);
}

#[test]
fn a_symlink_in_the_output_folder_is_never_followed() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), "fast.json", FAST);
    let outside = dir.path().join("precious.txt");
    std::fs::write(&outside, "do not overwrite").unwrap();
    for planted in ["report.md", "summary.json", "comparison.png"] {
        let out = dir.path().join("out");
        let _ = std::fs::remove_dir_all(&out);
        run_ok(dir.path(), &["run", &file, "--out", "out", "--quiet"]);
        std::fs::remove_file(out.join(planted)).unwrap();
        std::os::unix::fs::symlink(&outside, out.join(planted)).unwrap();
        let before = snapshot(&out);

        let run = retrystorm(dir.path(), &["run", &file, "--out", "out", "--quiet"]);
        let stderr = text(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{planted}: {stderr}");
        assert!(stderr.contains("a symbolic link"), "{planted}: {stderr}");

        let report = run_within_a_minute(dir.path(), &["report", "out"]);
        let stderr = text(&report.stderr);
        assert_eq!(report.status.code(), Some(1), "{planted}: {stderr}");
        assert!(stderr.contains(planted), "{planted}: {stderr}");

        assert_eq!(std::fs::read(&outside).unwrap(), b"do not overwrite");
        assert_eq!(snapshot(&out), before, "{planted}: the folder was touched");
    }
    assert_no_temporary_folder(dir.path());
}

#[test]
fn an_output_folder_that_is_itself_a_link_is_written_where_it_points() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), "fast.json", FAST);
    std::fs::create_dir(dir.path().join("disk")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("disk/real"), dir.path().join("out")).unwrap();
    // A link to nothing is refused.
    let out = retrystorm(dir.path(), &["run", &file, "--out", "out", "--quiet"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    std::fs::create_dir(dir.path().join("disk/real")).unwrap();
    for _ in 0..2 {
        run_ok(dir.path(), &["run", &file, "--out", "out", "--quiet"]);
        assert!(
            std::fs::symlink_metadata(dir.path().join("out"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_whole_run(&dir.path().join("disk/real"));
    }
    run_ok(dir.path(), &["report", "out"]);
    assert_whole_run(&dir.path().join("disk/real"));
    assert_no_temporary_folder(dir.path());
    assert_no_temporary_folder(&dir.path().join("disk"));
}

#[test]
fn two_scenarios_bound_for_one_folder_are_refused_before_running() {
    let dir = tempfile::tempdir().unwrap();
    let a = scenario(dir.path(), "a.json", FAST);
    let b = scenario(dir.path(), "b.json", &FAST.replace("2s", "3s"));
    let cases: [&[&str]; 3] = [
        &["run", &a, &b, "--quiet"],
        &["run", &a, &a, "--quiet"],
        &["run", &a, &b, "--out", "both", "--quiet"],
    ];
    for args in cases {
        let out = retrystorm(dir.path(), args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("would both write to"), "{args:?}: {stderr}");
        assert!(!dir.path().join("output").exists(), "{args:?} wrote");
        assert!(!dir.path().join("both").exists(), "{args:?} wrote");
    }
}

#[test]
fn an_unwritable_destination_is_refused_before_simulating() {
    let dir = tempfile::tempdir().unwrap();
    // Far more than a minute of simulation: refused at once, or the watchdog fails the test.
    let long = FAST
        .replace("\"replications\": 2", "\"replications\": 100000")
        .replace("\"rate_per_s\": 50", "\"rate_per_s\": 100000");
    let file = scenario(dir.path(), "long.json", &long);
    std::fs::write(dir.path().join("a-file"), "mine").unwrap();
    let out = run_within_a_minute(
        dir.path(),
        &["run", &file, "--out", "a-file/inside", "--quiet"],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot create the folder"), "{stderr}");
    assert!(stderr.contains("a-file"), "{stderr}");
    assert_eq!(std::fs::read(dir.path().join("a-file")).unwrap(), b"mine");
}

// The publishing itself, as a library function.

/// The files of a small run, rendered.
fn rendered(seed: u64) -> Vec<OutputFile> {
    let experiment = retrystorm::scenario::load_str(
        FAST,
        "fast",
        &retrystorm::scenario::LoadOptions {
            seed: Some(seed),
            ..Default::default()
        },
    )
    .unwrap();
    let result = retrystorm::runner::run(&experiment, 1, &|| {});
    retrystorm::output::render(&experiment, &result, Default::default(), 0).unwrap()
}

#[test]
fn a_write_that_fails_midway_leaves_the_earlier_run_and_no_temporary_folder() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("run");
    let dest = publish::prepare(&target, publish::Kind::Run, &|| false).unwrap();
    publish::publish(&dest, &rendered(1), &Options::default()).unwrap();
    let before = snapshot(&target);
    let mut files = rendered(2);
    // A name longer than any file system takes: the write fails half-way through the files.
    let half = files.len() / 2;
    files.insert(
        half,
        OutputFile {
            name: "x".repeat(300),
            bytes: b"never".to_vec(),
        },
    );
    for exchange in [true, false] {
        let options = Options {
            exchange,
            ..Default::default()
        };
        let err = publish::publish(&dest, &files, &options).unwrap_err();
        assert!(format!("{err:#}").contains("cannot create"), "{err:#}");
        assert_eq!(snapshot(&target), before, "the earlier run changed");
        assert_no_temporary_folder(dir.path());
    }
    // Cancelled after a few files (a signal): the same.
    let asked = std::cell::Cell::new(0);
    let cancelled = || {
        asked.set(asked.get() + 1);
        asked.get() > 3
    };
    let options = Options {
        cancelled: &cancelled,
        ..Default::default()
    };
    let err = publish::publish(&dest, &rendered(2), &options).unwrap_err();
    assert!(err.is::<publish::Cancelled>(), "{err:#}");
    assert_eq!(snapshot(&target), before);
    assert_no_temporary_folder(dir.path());
}

#[test]
fn both_ways_of_replacing_leave_exactly_the_new_run() {
    let dir = tempfile::tempdir().unwrap();
    for exchange in [true, false] {
        let target = dir.path().join(format!("run-{exchange}"));
        let dest = publish::prepare(&target, publish::Kind::Run, &|| false).unwrap();
        let options = Options {
            exchange,
            ..Default::default()
        };
        let mut first = rendered(1);
        first.push(OutputFile {
            name: "sweep.csv".into(),
            bytes: b"stale".to_vec(),
        });
        publish::publish(&dest, &first, &options).unwrap();
        let second = rendered(2);
        publish::publish(&dest, &second, &options).unwrap();
        assert_whole_run(&target);
        let expected: BTreeSet<String> = second
            .iter()
            .map(|f| f.name.clone())
            .chain(["manifest.json".to_string()])
            .collect();
        assert_eq!(names(&target), expected);
        for f in &second {
            assert_eq!(
                std::fs::read(target.join(&f.name)).unwrap(),
                f.bytes,
                "{}",
                f.name
            );
        }
    }
    assert_no_temporary_folder(dir.path());
}

#[test]
fn what_a_killed_run_left_is_cleaned_up_or_put_back() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("run");
    let dest = publish::prepare(&target, publish::Kind::Run, &|| false).unwrap();
    publish::publish(&dest, &rendered(1), &Options::default()).unwrap();
    let earlier = snapshot(&target);
    // Killed while writing: an unlocked temporary folder.
    let tmp = dir.path().join(".run.retrystorm-tmp-AbCdEfGh");
    std::fs::create_dir(&tmp).unwrap();
    std::fs::write(tmp.join("summary.json"), "half").unwrap();
    // Another run still writing: its temporary folder is locked.
    let busy = dir.path().join(".run.retrystorm-tmp-BuSyBuSy");
    std::fs::create_dir(&busy).unwrap();
    let lock = std::fs::File::open(&busy).unwrap();
    lock.lock().unwrap();
    // Another folder's leftovers are not this folder's business.
    let other = dir.path().join(".other.retrystorm-tmp-12345678");
    std::fs::create_dir(&other).unwrap();
    publish::prepare(&target, publish::Kind::Run, &|| false).unwrap();
    assert!(!tmp.exists(), "a dead run's temporary folder stays");
    assert!(busy.exists(), "a live run's temporary folder was removed");
    assert!(other.exists());
    drop(lock);
    publish::prepare(&target, publish::Kind::Run, &|| false).unwrap();
    assert!(!busy.exists());
    std::fs::remove_dir(&other).unwrap();

    // Killed between the two renames: the earlier run is aside and the folder missing.
    let aside = dir.path().join(".run.retrystorm-old-AbCdEfGh");
    std::fs::rename(&target, &aside).unwrap();
    publish::prepare(&target, publish::Kind::Run, &|| false).unwrap();
    assert_eq!(snapshot(&target), earlier, "the earlier run is not back");
    assert_no_temporary_folder(dir.path());
    // ... and once the new one was in: the earlier is removed.
    std::fs::create_dir(&aside).unwrap();
    std::fs::write(aside.join("summary.json"), "old").unwrap();
    publish::prepare(&target, publish::Kind::Run, &|| false).unwrap();
    assert_eq!(snapshot(&target), earlier);
    assert_no_temporary_folder(dir.path());
}

#[test]
fn two_runs_into_one_folder_at_once_leave_one_whole_run() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), "fast.json", FAST);
    let spawn = |seed: &str| {
        Command::new(env!("CARGO_BIN_EXE_retrystorm"))
            .args(["run", &file, "--out", "out", "--quiet", "--seed", seed])
            .current_dir(dir.path())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    for _ in 0..3 {
        let (a, b) = (spawn("1"), spawn("2"));
        for child in [a, b] {
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "{}", text(&out.stderr));
        }
        assert_whole_run(&dir.path().join("out"));
        assert_no_temporary_folder(dir.path());
    }
}

/// How a run ended after SIGTERM: finished first, stopped by us (143), or killed before the
/// handler was installed.
fn ended_acceptably(status: ExitStatus) -> bool {
    use std::os::unix::process::ExitStatusExt;
    status.success() || status.code() == Some(143) || status.signal() == Some(15)
}

/// The files in the temporary folder of a run into `dir/out`, if one is there.
fn staged_files(dir: &Path) -> usize {
    names(dir)
        .iter()
        .filter(|n| n.starts_with(".out.retrystorm-tmp-"))
        .map(|n| std::fs::read_dir(dir.join(n)).map_or(0, |d| d.count()))
        .max()
        .unwrap_or(0)
}

#[test]
fn sigterm_leaves_the_earlier_run_or_the_whole_new_one() {
    let dir = tempfile::tempdir().unwrap();
    // About a second of simulation on one thread, and a timeseries.csv of some MB.
    let slow = FAST
        .replace("\"duration\": \"2s\"", "\"duration\": \"30s\"")
        .replace("\"rate_per_s\": 50", "\"rate_per_s\": 20000")
        .replace(
            "\"replications\": 2",
            "\"replications\": 2, \"metrics\": { \"bucket\": \"1ms\" }",
        );
    let file = scenario(dir.path(), "slow.json", &slow);
    let run_args = |out: &'static str, seed: &'static str| {
        vec![
            "run",
            file.as_str(),
            "--out",
            out,
            "--quiet",
            "--jobs",
            "1",
            "--seed",
            seed,
        ]
    };
    // The two runs the folder may hold.
    let started = Instant::now();
    run_ok(dir.path(), &run_args("new", "2"));
    let whole = started.elapsed();
    let new_id = assert_whole_run(&dir.path().join("new"));
    run_ok(dir.path(), &run_args("old", "1"));
    let old_id = assert_whole_run(&dir.path().join("old"));

    // A signal at evenly spaced moments from the start to past the end, and then at moments
    // chosen inside the write: once the temporary folder holds 1, 8 or 20 files.
    let moments: Vec<(Option<Duration>, usize)> = [0.0, 0.4, 0.8, 1.5]
        .map(|k| (Some(whole.mul_f64(k)), 0))
        .into_iter()
        .chain([1, 8, 20].map(|n| (None, n)))
        .collect();
    let mut kept = 0;
    for (after, staged) in moments {
        // The earlier run in place.
        let out = dir.path().join("out");
        let _ = std::fs::remove_dir_all(&out);
        std::fs::create_dir(&out).unwrap();
        for (name, bytes) in snapshot(&dir.path().join("old")) {
            std::fs::write(out.join(name), bytes).unwrap();
        }
        let mut child = Command::new(env!("CARGO_BIN_EXE_retrystorm"))
            .args(run_args("out", "2"))
            .current_dir(dir.path())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        match after {
            Some(after) => std::thread::sleep(after),
            None => {
                while staged_files(dir.path()) < staged && child.try_wait().unwrap().is_none() {
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
        }
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let status = child.wait().unwrap();
        let when = format!("{after:?}, {staged} files staged");
        assert!(ended_acceptably(status), "{when}: {status:?}");
        let id = assert_whole_run(&dir.path().join("out"));
        assert!(id == old_id || id == new_id, "{when}: a third run?");
        if staged > 0 && id == old_id {
            assert_eq!(
                status.code(),
                Some(143),
                "{when}: abandoned the write but said {status:?}"
            );
            kept += 1;
        }
        assert_no_temporary_folder(dir.path());
    }
    assert!(kept > 0, "no signal came while the files were written");
}

// `report DIR` on folders that are not what a run wrote.

/// A run folder of FAST in `dir/name`, and its path.
fn run_folder(dir: &Path, name: &str) -> PathBuf {
    let file = scenario(dir, "fast.json", FAST);
    run_ok(dir, &["run", &file, "--out", name, "--quiet"]);
    dir.join(name)
}

/// Runs `report` on `folder` after `tamper`; asserts exit code 1 within a minute and that
/// stderr names `file`, and that the folder is as tampered.
fn assert_report_refuses(folder: &Path, tamper: impl Fn(&Path), file: &str, says: &str) {
    tamper(folder);
    let before = snapshot(folder);
    let out = run_within_a_minute(
        folder.parent().unwrap(),
        &["report", folder.to_str().unwrap()],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{file}: {stderr}");
    assert!(stderr.contains(file), "expected {file:?} in: {stderr}");
    assert!(stderr.contains(says), "expected {says:?} in: {stderr}");
    assert_eq!(
        snapshot(folder),
        before,
        "report changed a folder it refused"
    );
}

fn edit(folder: &Path, name: &str, f: impl Fn(String) -> String) {
    let path = folder.join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    let changed = f(text.clone());
    assert_ne!(changed, text, "the edit of {name} changed nothing");
    std::fs::write(path, changed).unwrap();
}

/// Replaces the first number after `key` in a JSON text.
fn set_first(text: String, key: &str, value: &str) -> String {
    let at = text.find(&format!("\"{key}\": ")).unwrap() + key.len() + 4;
    let end = at + text[at..].find([',', '\n', '}']).unwrap();
    format!("{}{value}{}", &text[..at], &text[end..])
}

/// Replaces the cell in column `col` of the first data row of a CSV text.
fn set_cell(text: String, col: usize, value: &str) -> String {
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let mut cells: Vec<&str> = lines[1].split(',').collect();
    cells[col] = value;
    lines[1] = cells.join(",");
    lines.join("\n") + "\n"
}

#[test]
fn report_refuses_a_tampered_folder_with_a_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [Case; 4] = [
        (
            "summary.json",
            &|f| edit(f, "summary.json", |t| set_first(t, "success_rate", "0.5")),
            "is not the file manifest.json lists",
        ),
        (
            "timeseries.csv",
            &|f| std::fs::remove_file(f.join("timeseries.csv")).unwrap(),
            "listed in manifest.json but missing",
        ),
        (
            "sweep.csv",
            &|f| std::fs::write(f.join("sweep.csv"), "stale").unwrap(),
            "not listed in manifest.json",
        ),
        (
            "manifest.json",
            &|f| std::fs::write(f.join("manifest.json"), [0xff, 0x00, 0x13]).unwrap(),
            "manifest.json",
        ),
    ];
    for (i, (file, tamper, says)) in cases.into_iter().enumerate() {
        let folder = run_folder(dir.path(), &format!("run{i}"));
        assert_report_refuses(&folder, tamper, file, says);
    }
}

#[test]
fn report_refuses_a_summary_from_another_run() {
    let dir = tempfile::tempdir().unwrap();
    let folder = run_folder(dir.path(), "run");
    let file = scenario(dir.path(), "fast.json", FAST);
    run_ok(
        dir.path(),
        &["run", &file, "--out", "other", "--quiet", "--seed", "5"],
    );
    let other = std::fs::read(dir.path().join("other/summary.json")).unwrap();
    // With the manifest: the digest; without: the seeds disagree.
    let copy = |f: &Path| std::fs::write(f.join("summary.json"), &other).unwrap();
    assert_report_refuses(&folder, copy, "summary.json", "manifest.json");
    std::fs::remove_file(folder.join("manifest.json")).unwrap();
    assert_report_refuses(&folder, |_| {}, "summary.json", "`seed`");
}

#[test]
fn report_checks_every_file_of_a_folder_without_a_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let two_columns = |t: String| {
        t.lines()
            .map(|l| l.split(',').take(2).collect::<Vec<_>>().join(","))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let extra_variant = |t: String| {
        let mut doc: Value = serde_json::from_str(&t).unwrap();
        let mut third = doc["variants"][0].clone();
        third["name"] = "third".into();
        doc["variants"].as_array_mut().unwrap().push(third);
        serde_json::to_string_pretty(&doc).unwrap()
    };
    let cases: Vec<BoxedCase> = vec![
        (
            "latency.csv",
            Box::new(move |f| edit(f, "latency.csv", two_columns)),
            "header",
        ),
        (
            "summary.json",
            Box::new(move |f| edit(f, "summary.json", extra_variant)),
            "\"third\"",
        ),
        (
            "summary.json",
            Box::new(|f| edit(f, "summary.json", |t| set_first(t, "success_rate", "1e308"))),
            "success_rate",
        ),
        (
            "summary.json",
            Box::new(|f| edit(f, "summary.json", |t| set_first(t, "attempts", "-1"))),
            "attempts",
        ),
        (
            "timeseries.csv",
            Box::new(|f| edit(f, "timeseries.csv", |t| set_cell(t, 5, "inf"))),
            "inf",
        ),
        (
            "timeseries.csv",
            Box::new(|f| edit(f, "timeseries.csv", |t| set_cell(t, 7, "NaN"))),
            "NaN",
        ),
        (
            "timeseries.csv",
            Box::new(|f| edit(f, "timeseries.csv", |t| set_cell(t, 3, "0"))),
            "bucket_s",
        ),
        (
            "timeseries.csv",
            Box::new(|f| edit(f, "timeseries.csv", |t| set_cell(t, 1, "nobody"))),
            "\"nobody\"",
        ),
        (
            "latency.csv",
            Box::new(|f| edit(f, "latency.csv", |t| set_cell(t, 2, "1e400"))),
            "requests",
        ),
        (
            "latency.csv",
            Box::new(|f| edit(f, "latency.csv", |t| set_cell(t, 1, "3.3"))),
            "edge of a latency bin",
        ),
        (
            "latency.csv",
            Box::new(|f| std::fs::remove_file(f.join("latency.csv")).unwrap()),
            "missing",
        ),
        (
            "scenario.resolved.json",
            Box::new(|f| {
                std::fs::write(f.join("scenario.resolved.json"), [0xde, 0xad, 0xbe, 0xef]).unwrap()
            }),
            "not valid JSON",
        ),
        (
            "summary.json",
            Box::new(|f| std::fs::write(f.join("summary.json"), "[1, 2, 3]").unwrap()),
            "not a JSON object",
        ),
        (
            "sweep.csv",
            Box::new(|f| std::fs::write(f.join("sweep.csv"), "clients.count,variant\n").unwrap()),
            "no sweep",
        ),
        (
            "notes.txt",
            Box::new(|f| std::fs::write(f.join("notes.txt"), "mine").unwrap()),
            "not a file retrystorm writes",
        ),
    ];
    for (i, (file, tamper, says)) in cases.into_iter().enumerate() {
        let folder = run_folder(dir.path(), &format!("run{i}"));
        std::fs::remove_file(folder.join("manifest.json")).unwrap();
        assert_report_refuses(&folder, tamper, file, says);
    }
}

#[test]
fn report_replaces_the_folder_and_keeps_the_run_id() {
    let dir = tempfile::tempdir().unwrap();
    let folder = run_folder(dir.path(), "run");
    let id = assert_whole_run(&folder);
    let data = std::fs::read(folder.join("timeseries.csv")).unwrap();
    run_ok(dir.path(), &["report", "run", "--format", "svg"]);
    assert_eq!(assert_whole_run(&folder), id);
    assert!(folder.join("comparison.svg").exists());
    assert!(
        !folder.join("comparison.png").exists(),
        "figures of another format stay"
    );
    assert_eq!(std::fs::read(folder.join("timeseries.csv")).unwrap(), data);
    // A folder written before manifests gets one.
    std::fs::remove_file(folder.join("manifest.json")).unwrap();
    run_ok(dir.path(), &["report", "run"]);
    assert_eq!(assert_whole_run(&folder), id);
    assert_no_temporary_folder(dir.path());
}

/// The reader is a pure function of the files' bytes: whatever they are, it answers (an
/// error or a run that renders) and never panics.
#[test]
fn the_reader_survives_any_damage_to_any_file() {
    use proptest::prelude::*;
    let dir = tempfile::tempdir().unwrap();
    let folder = run_folder(dir.path(), "run");
    let good = RunFolder::read(&folder).unwrap();
    reload_files(&good).unwrap();
    let files: Vec<(String, Vec<u8>)> = good
        .names()
        .map(|n| (n.to_string(), good.get(n).unwrap().to_vec()))
        .collect();
    let data = [
        "summary.json",
        "scenario.resolved.json",
        "timeseries.csv",
        "latency.csv",
    ];
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 120,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let damage = (
        0..data.len(),
        0usize..5,
        any::<prop::sample::Index>(),
        any::<u8>(),
        any::<bool>(),
    );
    runner
        .run(&damage, |(which, how, at, byte, manifest)| {
            let name = data[which];
            let mut folder: Vec<(String, Vec<u8>)> = files
                .iter()
                .filter(|(n, _)| manifest || n != "manifest.json")
                .cloned()
                .collect();
            let (_, bytes) = folder.iter_mut().find(|(n, _)| n == name).unwrap();
            let i = at
                .index(bytes.len().max(1))
                .min(bytes.len().saturating_sub(1));
            match how {
                0 => bytes.truncate(i),
                1 if !bytes.is_empty() => bytes[i] = byte,
                1 => {}
                2 => {
                    // A digit becomes another number, sign or exponent.
                    let with =
                        [b"9e9".as_slice(), b"-", b"e308", b"inf", b"NaN"][usize::from(byte) % 5];
                    bytes.splice(i..i, with.iter().copied());
                }
                3 => bytes.retain(|b| *b != b','),
                _ => folder.retain(|(n, _)| n != name),
            }
            let folder = RunFolder::from_files(folder);
            if let Ok((experiment, result)) = reload_files(&folder) {
                retrystorm::report::render_report(&experiment, &result, Default::default(), 0)
                    .map_err(|e| TestCaseError::fail(format!("{e:#}")))?;
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn names_that_look_like_markup_or_formulas_are_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let text = FAST
        .replace("\"three attempts\"", "\"=cmd|' /C calc'!A0\"")
        .replace("\"one attempt\"", "\"<b>bold</b> | *x*\"");
    let file = scenario(dir.path(), "names.json", &text);
    run_ok(dir.path(), &["run", &file, "--out", "run", "--quiet"]);
    let folder = dir.path().join("run");
    let report = std::fs::read_to_string(folder.join("report.md")).unwrap();
    assert!(!report.contains("<b>"), "raw HTML in report.md");
    assert!(
        report.contains("\\<b\\>bold\\</b\\> \\| \\*x\\*"),
        "{report}"
    );
    assert!(
        report.contains("\\=cmd") || report.contains("=cmd\\|"),
        "{report}"
    );
    let table: Vec<&str> = report
        .lines()
        .skip_while(|l| !l.starts_with("| variant"))
        .take_while(|l| l.starts_with('|'))
        .collect();
    assert_eq!(
        table.len(),
        4,
        "header, rule and a row per variant: {table:?}"
    );
    for line in &table[2..] {
        let cells = line.matches(" |").count();
        assert_eq!(
            cells,
            table[0].matches(" |").count(),
            "a name broke the table: {line}"
        );
    }
    for csv in [
        "timeseries.csv",
        "comparison.csv",
        "latency.csv",
        "load-over-time.csv",
    ] {
        let body = std::fs::read_to_string(folder.join(csv)).unwrap();
        assert!(body.contains("'=cmd|"), "{csv} does not defuse the formula");
        for row in csv::ReaderBuilder::new()
            .has_headers(false)
            .from_reader(body.as_bytes())
            .records()
        {
            for cell in row.unwrap().iter() {
                let risky = cell.starts_with(['=', '+', '@', '\t', '\r'])
                    || (cell.starts_with('-') && cell.parse::<f64>().is_err());
                assert!(!risky, "{csv}: cell {cell:?}");
            }
        }
    }
    // Read back, the names are the names again: report DIR gives the same files.
    let before = snapshot(&folder);
    run_ok(dir.path(), &["report", "run"]);
    assert_eq!(snapshot(&folder), before);
}

/// A run waiting for another run's lock on the parent folder (which may take a minute) stops
/// at SIGINT with 130 and writes nothing, rather than waiting the minute out.
#[test]
fn sigint_stops_a_run_waiting_for_another_runs_lock() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), "fast.json", FAST);
    // Another run holds the lock on the folder the output goes into.
    let parent = std::fs::File::open(dir.path()).unwrap();
    parent.lock().unwrap();
    let started = Instant::now();
    let child = Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .args(["run", file.as_str(), "--out", "out", "--quiet"])
        .current_dir(dir.path())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Give it time to install its handlers and reach the lock.
    std::thread::sleep(Duration::from_millis(500));
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "it waited out the lock's patience"
    );
    assert!(!dir.path().join("out").exists());
    drop(parent);
}

/// Replacing a folder keeps its mode, setgid bit and group, and the new files take its group,
/// as files written into it would have: a folder a team shares stays shared.
#[test]
fn a_replaced_folder_keeps_its_mode_and_group() {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), "fast.json", FAST);
    let out = dir.path().join("out");
    for earlier_run in [false, true] {
        if !earlier_run {
            std::fs::create_dir(&out).unwrap();
        }
        // Another group where we may give one (as root); else our own.
        let _ = std::os::unix::fs::chown(&out, None, Some(4242));
        std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o2750)).unwrap();
        let before = std::fs::metadata(&out).unwrap();
        run_ok(dir.path(), &["run", &file, "--out", "out", "--quiet"]);
        let after = std::fs::metadata(&out).unwrap();
        assert_eq!(after.mode() & 0o7777, 0o2750, "earlier run: {earlier_run}");
        assert_eq!(after.gid(), before.gid(), "earlier run: {earlier_run}");
        let summary = std::fs::metadata(out.join("summary.json")).unwrap();
        assert_eq!(
            summary.gid(),
            before.gid(),
            "the files take the folder's group"
        );
    }
}
