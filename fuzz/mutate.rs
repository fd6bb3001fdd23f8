//! Structured mutations for fuzzing retrystorm's readers, driven by a stream of bytes.
//!
//! Random bytes are almost never JSON, so a byte-level fuzzer spends its time on syntax
//! errors. These mutations start from a real document (a bundled scenario, a file of a real
//! run folder) and change it the way a careless edit or a hostile file would: a value
//! replaced by an extreme one, a key misspelt or added, a value of the wrong type, a string
//! that is not ASCII, an array grown, a CSV cell or column changed, the bytes cut short.
//!
//! The same byte stream always gives the same mutation, so a crash found by the coverage-guided
//! targets (`cargo +nightly fuzz run ...`) replays in the stable test slice, and the other
//! way round. Shared by the fuzz targets and the test suite through `#[path]`.

#![allow(dead_code)]

use serde_json::{Map, Value, json};

/// Reads the driving bytes; past the end it reads zeros, so every input is a valid script.
pub struct Source<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Source<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Source { bytes, at: 0 }
    }

    pub fn byte(&mut self) -> u8 {
        let b = self.bytes.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        b
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        let v = u32::from_le_bytes([self.byte(), self.byte(), self.byte(), self.byte()]);
        v as usize % n
    }

    pub fn pick<'t, T>(&mut self, items: &'t [T]) -> &'t T {
        &items[self.below(items.len())]
    }

    pub fn exhausted(&self) -> bool {
        self.at >= self.bytes.len()
    }
}

/// Values that have broken, or could break, a reader: extremes, wrong types, odd strings.
pub fn interesting(src: &mut Source) -> Value {
    let long_unicode = "ünïcödé→ünïcödé→ünïcödé→ünïcödé→ünïcödé";
    let choices: Vec<Value> = vec![
        json!(0),
        json!(-1),
        json!(1),
        json!(2),
        json!(4294967295u64),
        json!(4294967296u64),
        json!(u64::MAX),
        json!(i64::MIN),
        json!(9007199254740993u64),
        json!(1e308),
        json!(-1e308),
        json!(1e-308),
        json!(0.5),
        json!(1.5),
        json!(0.1),
        json!(""),
        json!(" "),
        json!("0s"),
        json!("1ns"),
        json!("1e18ns"),
        json!("18446744073709551615ns"),
        json!("18446744073709551616ns"),
        json!("-1ms"),
        json!("1000000000h"),
        json!("250ms"),
        json!("1.5s"),
        json!("NaN"),
        json!("inf"),
        json!("unlimited"),
        json!("none"),
        json!("full"),
        json!("p99"),
        json!(long_unicode),
        json!("a\nb|c<b>=d"),
        json!("=HYPERLINK(\"x\")"),
        json!("server.concurrency"),
        json!("server.service_time.constant"),
        json!("clients.count"),
        json!(null),
        json!(true),
        json!([]),
        json!({}),
        json!([1, 2, 3]),
        json!({ "constant": "1ms" }),
        json!({ "exponential": { "mean": "1e18ns" } }),
        json!({ "mixture": [ { "weight": 1e308, "dist": { "constant": "1ms" } }, { "weight": 1e308, "dist": { "constant": "2ms" } } ] }),
        json!({ "base": "1e18ns", "cap": "1e18ns", "jitter": "full" }),
        json!({ "from": "0s", "to": "1s", "concurrency": 0 }),
        json!({ "path": long_unicode, "values": [1, 2] }),
        json!({ "name": long_unicode, "patch": long_unicode }),
        json!({ "name": "x", "patch": { "server": long_unicode } }),
    ];
    let mut v = src.pick(&choices).clone();
    // Now and then nest it, to reach readers of deep documents.
    if src.byte().is_multiple_of(16) {
        for _ in 0..src.below(200) {
            v = json!([v]);
        }
    }
    v
}

/// Every path in `doc`: a list of object keys and array indices.
fn paths(doc: &Value) -> Vec<Vec<Step>> {
    fn walk(v: &Value, here: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
        out.push(here.clone());
        match v {
            Value::Object(m) => {
                for (k, child) in m {
                    here.push(Step::Key(k.clone()));
                    walk(child, here, out);
                    here.pop();
                }
            }
            Value::Array(a) => {
                for (i, child) in a.iter().enumerate() {
                    here.push(Step::Index(i));
                    walk(child, here, out);
                    here.pop();
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(doc, &mut Vec::new(), &mut out);
    out
}

#[derive(Clone, Debug)]
enum Step {
    Key(String),
    Index(usize),
}

fn at<'v>(doc: &'v mut Value, path: &[Step]) -> Option<&'v mut Value> {
    path.iter().try_fold(doc, |v, step| match step {
        Step::Key(k) => v.get_mut(k.as_str()),
        Step::Index(i) => v.get_mut(*i),
    })
}

/// Keys retrystorm's formats use, for misspellings and insertions in the right places.
const KEYS: &[&str] = &[
    "name",
    "description",
    "seed",
    "replications",
    "duration",
    "clients",
    "count",
    "workload",
    "open",
    "closed",
    "rate_per_s",
    "profile",
    "at",
    "ramp",
    "think_time",
    "start",
    "requests_per_client",
    "network",
    "latency",
    "server",
    "kind",
    "concurrency",
    "queue_limit",
    "discipline",
    "service_time",
    "error_rate",
    "permanent_rate",
    "drop_expired",
    "rate_limit",
    "burst",
    "retry_after",
    "faults",
    "from",
    "to",
    "outage",
    "policy",
    "timeout",
    "deadline",
    "retry",
    "max_attempts",
    "retry_on",
    "backoff",
    "base",
    "multiplier",
    "cap",
    "jitter",
    "budget",
    "scope",
    "token_bucket",
    "max_tokens",
    "token_ratio",
    "grpc_service_config",
    "file",
    "service",
    "method",
    "read_as",
    "breaker",
    "variants",
    "patch",
    "sweep",
    "path",
    "values",
    "second",
    "label",
    "metrics",
    "bucket",
    "limits",
    "max_events",
    "max_time",
    "max_in_flight",
    "mixture",
    "weight",
    "dist",
    "constant",
    "exponential",
    "mean",
    "uniform",
    "min",
    "max",
    "$schema",
    "version",
    "run",
    "files",
    "metrics",
    "ci95",
    "success_rate",
    "points",
    "value",
    "variants",
    "truncated",
];

/// Applies one to eight structured mutations to `doc`.
pub fn mutate_json(doc: &mut Value, src: &mut Source) {
    let rounds = 1 + src.below(8);
    for _ in 0..rounds {
        let all = paths(doc);
        let path = src.pick(&all).clone();
        match src.below(9) {
            // Replace a value by an interesting one.
            0..=2 => {
                let new = interesting(src);
                if let Some(v) = at(doc, &path) {
                    *v = new;
                }
            }
            // Put another part of the document where this one was (type confusion).
            3 => {
                let other = src.pick(&all).clone();
                let copy = at(doc, &other).map(|v| v.clone());
                if let (Some(copy), Some(v)) = (copy, at(doc, &path)) {
                    *v = copy;
                }
            }
            // Add a key, known or misspelt, to an object.
            4 => {
                let key = src.pick(KEYS).to_string();
                let key = match src.below(4) {
                    0 => format!("{key}s"),
                    1 => key.chars().rev().collect(),
                    2 => key.to_uppercase(),
                    _ => key,
                };
                let value = interesting(src);
                if let Some(Value::Object(m)) = at(doc, &path) {
                    m.insert(key, value);
                }
            }
            // Remove a key or an element.
            5 => {
                if let Some((last, parent)) = path.split_last() {
                    match (at(doc, parent), last) {
                        (Some(Value::Object(m)), Step::Key(k)) => {
                            m.remove(k.as_str());
                        }
                        (Some(Value::Array(a)), Step::Index(i)) if *i < a.len() => {
                            a.remove(*i);
                        }
                        _ => {}
                    }
                }
            }
            // Grow an array, a little or a lot.
            6 => {
                let times = if src.byte().is_multiple_of(8) {
                    500
                } else {
                    1 + src.below(8)
                };
                if let Some(Value::Array(a)) = at(doc, &path)
                    && let Some(first) = a.first().cloned()
                {
                    a.extend(std::iter::repeat_n(first, times));
                }
            }
            // Wrap a value in an object or an array.
            7 => {
                if let Some(v) = at(doc, &path) {
                    let inner = v.take();
                    *v = if src.byte().is_multiple_of(2) {
                        json!([inner])
                    } else {
                        let mut m = Map::new();
                        m.insert(src.pick(KEYS).to_string(), inner);
                        Value::Object(m)
                    };
                }
            }
            // Nudge a number: off by one, negated, scaled to the extremes.
            _ => {
                if let Some(v) = at(doc, &path)
                    && let Some(x) = v.as_f64()
                {
                    let y = match src.below(5) {
                        0 => x + 1.0,
                        1 => x - 1.0,
                        2 => -x,
                        3 => x * 1e12,
                        _ => x / 1e12,
                    };
                    if let Some(n) = serde_json::Number::from_f64(y) {
                        *v = Value::Number(n);
                    }
                }
            }
        }
    }
}

/// Mutates text at the byte level: cut short, a byte changed, a run repeated or removed,
/// a byte-order mark in front. Kept rarer than structured mutations by the callers.
pub fn mutate_bytes(bytes: &mut Vec<u8>, src: &mut Source) {
    if bytes.is_empty() {
        bytes.extend_from_slice(b"{}");
    }
    match src.below(6) {
        0 => bytes.truncate(src.below(bytes.len())),
        1 => {
            let i = src.below(bytes.len());
            bytes[i] = src.byte();
        }
        2 => {
            let i = src.below(bytes.len());
            let n = src.below(64).min(bytes.len() - i);
            let run = bytes[i..i + n].to_vec();
            bytes.splice(i..i, run);
        }
        3 => {
            let i = src.below(bytes.len());
            let n = src.below(64).min(bytes.len() - i);
            bytes.drain(i..i + n);
        }
        4 => {
            bytes.splice(0..0, [0xEF, 0xBB, 0xBF]);
        }
        _ => {
            let i = src.below(bytes.len());
            let token = src.pick(&["\"", "{", "}", "[", "]", ",", ":", "1e999", "\u{0}", "ü"]);
            bytes.splice(i..i, token.bytes());
        }
    }
}

/// Mutates a CSV file: a cell replaced (by an extreme number, `inf`, text), a column dropped,
/// a row repeated or cut, the header changed.
pub fn mutate_csv(bytes: &mut Vec<u8>, src: &mut Source) {
    let text = String::from_utf8_lossy(bytes).into_owned();
    let mut rows: Vec<Vec<String>> = text
        .lines()
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect();
    if rows.is_empty() {
        rows.push(vec![String::new()]);
    }
    let r = src.below(rows.len());
    match src.below(5) {
        0 | 1 => {
            let c = src.below(rows[r].len());
            let cell = src.pick(&[
                "inf",
                "-inf",
                "NaN",
                "1e308",
                "-1",
                "",
                "x",
                "18446744073709551616",
                "0.5e",
                "=1+1",
            ]);
            rows[r][c] = cell.to_string();
        }
        2 => {
            let c = src.below(rows[r].len());
            rows[r].remove(c);
        }
        3 => {
            let row = rows[r].clone();
            rows.insert(r, row);
        }
        _ => rows.truncate(r),
    }
    *bytes = rows
        .iter()
        .map(|row| row.join(","))
        .collect::<Vec<_>>()
        .join("\n")
        .into_bytes();
    bytes.push(b'\n');
}

/// A mutated scenario text from one of `seeds`, as the fuzz targets and the test slice
/// build it: mostly structured mutations, sometimes bytes as well.
pub fn scenario_input(seeds: &[Value], src: &mut Source) -> Vec<u8> {
    let mut doc = src.pick(seeds).clone();
    mutate_json(&mut doc, src);
    let mut bytes = serde_json::to_vec_pretty(&doc).unwrap_or_default();
    if src.byte().is_multiple_of(4) {
        mutate_bytes(&mut bytes, src);
    }
    bytes
}

/// A damaged copy of a run folder's files: one to three files mutated by their kind (JSON,
/// CSV, bytes), sometimes a file removed, or one file's bytes put under another's name.
pub fn run_folder_input(files: &[(String, Vec<u8>)], src: &mut Source) -> Vec<(String, Vec<u8>)> {
    let mut files = files.to_vec();
    for _ in 0..1 + src.below(3) {
        if files.is_empty() {
            break;
        }
        let i = src.below(files.len());
        match src.below(8) {
            0 => {
                files.remove(i);
            }
            1 => {
                let j = src.below(files.len());
                files[i].1 = files[j].1.clone();
            }
            2 => mutate_bytes(&mut files[i].1, src),
            _ if files[i].0.ends_with(".json") => {
                if let Ok(mut doc) = serde_json::from_slice::<Value>(&files[i].1) {
                    mutate_json(&mut doc, src);
                    files[i].1 = serde_json::to_vec_pretty(&doc).unwrap_or_default();
                }
            }
            _ => mutate_csv(&mut files[i].1, src),
        }
    }
    files
}

/// Damaged copies of a run's shard folders, as `merge` reads them: one folder's files damaged
/// as [`run_folder_input`] damages a run folder's, sometimes a folder left out or given twice.
pub fn shard_folders_input(
    folders: &[Vec<(String, Vec<u8>)>],
    src: &mut Source,
) -> Vec<Vec<(String, Vec<u8>)>> {
    let mut folders = folders.to_vec();
    if folders.is_empty() {
        return folders;
    }
    let i = src.below(folders.len());
    match src.below(8) {
        0 => {
            folders.remove(i);
        }
        1 => {
            let copy = folders[i].clone();
            folders.push(copy);
        }
        _ => folders[i] = run_folder_input(&folders[i], src),
    }
    folders
}
