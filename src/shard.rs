//! Sharded runs: a share of an experiment's work run on its own (one task of a cluster job
//! array), written as a shard folder, and the merge of every shard into the folder a single
//! `run` would have written, byte for byte.
//!
//! The unit of work is a (sweep point, variant) with all its replications, numbered in job
//! order (point by point, then variant by variant; [`runner::groups`]). With `U` units and `K`
//! shards, shard `I` holds units `floor(I*U/K)` to `floor((I+1)*U/K)` (excluded): contiguous
//! ranges in file order. With fewer units than shards the replications are dealt instead: the
//! `U*R` jobs (replication `r` of unit `u` is job `u*R + r`) split the same way, so a unit's
//! replications may spread over neighbouring shards, and a shard may hold nothing.
//!
//! A shard folder holds `shard.json` ([`ShardInfo`]), `scenario.resolved.json`,
//! `scenario.source.json` (the scenario file's text, which the merge loads again with the
//! recorded overrides: the same [`Experiment`] a single run loads) and `units.jsonl`: per
//! unit part held, one line with the part's latencies merged ([`LatencyParts`]), then one
//! line per replication with its [`Digest`] (metrics, counts, series). The merge checks every
//! shard against its manifest and the others, then streams the parts in job order into
//! [`runner::refold`], which folds them exactly as a run folds its own replications.

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader, Read as _};
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::engine::SimDuration;
use crate::metrics::ExperimentResult;
use crate::metrics::{Counters, Digest, LatencyHistogram, LatencyParts, LatencyPool, Metrics};
use crate::metrics::{LatencyBins, MAX_ROWS, Row, TimeSeries, Truncation};
use crate::output::publish::{MANIFEST, Manifest, is_plain_name};
use crate::report::{ImageFormat, OutputFile};
use crate::runner::{self, RangeResult, Refed};
use crate::scenario::{Axis, Experiment, LoadOptions, Sweep, load_str};

/// The version of the shard folder's format (2: each series has its buckets' latency bins).
pub const FORMAT: u32 = 2;
/// The shard folder's description.
pub const INFO: &str = crate::output::publish::SHARD_INFO;
/// The scenario file's text, as the shard loaded it.
pub const SOURCE: &str = "scenario.source.json";
/// The resolved scenario, as a run writes it.
pub const RESOLVED: &str = "scenario.resolved.json";
/// The raw results: one line per unit part, then one per replication.
pub const UNITS: &str = "units.jsonl";

/// A shard or the merge was refused: bad `--shard` text or environment, or shards that do not
/// make one whole run. Nothing was written.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ShardRefused(pub String);

fn refuse(text: impl Into<String>) -> anyhow::Error {
    ShardRefused(text.into()).into()
}

/// What `--shard` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardSpec {
    /// `I/K`.
    Fixed {
        /// 0-based index.
        index: u64,
        /// Number of shards.
        count: u64,
    },
    /// `auto` (index and count from Slurm) or `auto/K` (index from Slurm or Kubernetes).
    Auto {
        /// The count, when given.
        count: Option<u64>,
    },
}

/// The most shards a run may be split into.
pub const MAX_SHARDS: u64 = 1_000_000;

/// Reads `--shard` text: `I/K`, `auto` or `auto/K`.
pub fn parse_spec(text: &str) -> Result<ShardSpec, String> {
    let rule = "--shard takes I/K (0 <= I < K, K >= 1; e.g. --shard 0/4 for the first of four shards), auto (index and count from SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT) or auto/K (index from SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX, e.g. --shard auto/4)";
    let count = |k: &str| -> Result<u64, String> {
        match k.trim().parse::<u64>() {
            Ok(k) if (1..=MAX_SHARDS).contains(&k) => Ok(k),
            _ => Err(format!(
                "{rule}; K must be a whole number from 1 to {MAX_SHARDS} (got {text:?})"
            )),
        }
    };
    let text_t = text.trim();
    if text_t == "auto" {
        return Ok(ShardSpec::Auto { count: None });
    }
    let Some((i, k)) = text_t.split_once('/') else {
        return Err(format!("{rule} (got {text:?})"));
    };
    if i.trim() == "auto" {
        return Ok(ShardSpec::Auto {
            count: Some(count(k)?),
        });
    }
    let count = count(k)?;
    match i.trim().parse::<u64>() {
        Ok(index) if index < count => Ok(ShardSpec::Fixed { index, count }),
        Ok(index) => Err(format!(
            "{rule}; the index is 0-based, so it must be below K = {count} (got {index}; the last shard is {}/{count})",
            count - 1
        )),
        Err(_) => Err(format!("{rule} (got {text:?})")),
    }
}

/// The (index, count) a spec means, reading the job array's environment through `env` for
/// `auto`. The errors say which variable is missing or out of range and how to fix it.
pub fn resolve(
    spec: ShardSpec,
    env: &dyn Fn(&str) -> Option<String>,
) -> anyhow::Result<(u64, u64)> {
    let var = |name: &str| -> anyhow::Result<Option<u64>> {
        match env(name) {
            None => Ok(None),
            Some(v) if v.trim().is_empty() => Ok(None),
            Some(v) => v.trim().parse::<u64>().map(Some).map_err(|_| {
                refuse(format!(
                    "--shard auto: {name}={v:?} is not a whole number; it is set by the job array (unset it, or give --shard I/K)"
                ))
            }),
        }
    };
    let (index, count, from) = match spec {
        ShardSpec::Fixed { index, count } => return Ok((index, count)),
        ShardSpec::Auto { count: None } => {
            let (Some(id), Some(count)) =
                (var("SLURM_ARRAY_TASK_ID")?, var("SLURM_ARRAY_TASK_COUNT")?)
            else {
                return Err(refuse(
                    "--shard auto: SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT are not both set, so the shard's index and count are unknown; run inside a Slurm job array (sbatch --array=0-3), give the count with --shard auto/K (the index then comes from SLURM_ARRAY_TASK_ID or a Kubernetes Indexed Job's JOB_COMPLETION_INDEX), or give both with --shard I/K",
                ));
            };
            if count == 0 || count > MAX_SHARDS {
                return Err(refuse(format!(
                    "--shard auto: SLURM_ARRAY_TASK_COUNT={count} is not a number of shards (1 to {MAX_SHARDS}); give --shard I/K"
                )));
            }
            let min = var("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
            (relative(id, min)?, count, "SLURM_ARRAY_TASK_ID")
        }
        ShardSpec::Auto { count: Some(count) } => {
            if let Some(id) = var("SLURM_ARRAY_TASK_ID")? {
                if let Some(n) = var("SLURM_ARRAY_TASK_COUNT")?
                    && n != count
                {
                    return Err(refuse(format!(
                        "--shard auto/{count}: the Slurm job array has SLURM_ARRAY_TASK_COUNT={n} tasks, not {count}; give --shard auto/{n} or plain --shard auto"
                    )));
                }
                let min = var("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
                (relative(id, min)?, count, "SLURM_ARRAY_TASK_ID")
            } else if let Some(index) = var("JOB_COMPLETION_INDEX")? {
                (index, count, "JOB_COMPLETION_INDEX")
            } else {
                return Err(refuse(format!(
                    "--shard auto/{count}: neither SLURM_ARRAY_TASK_ID (a Slurm job array) nor JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) is set, so the shard's index is unknown; run inside a job array or give --shard I/{count}"
                )));
            }
        }
    };
    if index >= count {
        return Err(refuse(format!(
            "--shard auto: {from} gives shard index {index}, but there are {count} shards (0 to {}); make the array's indices 0..{} or 1..{count}, or give --shard I/K",
            count - 1,
            count - 1
        )));
    }
    Ok((index, count))
}

fn relative(id: u64, min: u64) -> anyhow::Result<u64> {
    id.checked_sub(min).ok_or_else(|| {
        refuse(format!(
            "--shard auto: SLURM_ARRAY_TASK_ID={id} is below SLURM_ARRAY_TASK_MIN={min}; give --shard I/K"
        ))
    })
}

/// The jobs shard `index` of `count` holds, of `units` units of `reps` replications each
/// (see the module's documentation for the rule).
pub fn jobs(units: u64, reps: u64, index: u64, count: u64) -> Range<u64> {
    let cut = |n: u64, i: u64| (u128::from(n) * u128::from(i) / u128::from(count)) as u64;
    if units >= count {
        cut(units, index) * reps..cut(units, index + 1) * reps
    } else {
        let total = units * reps;
        cut(total, index)..cut(total, index + 1)
    }
}

/// The unit parts a range of jobs covers: (unit, first replication, end replication).
pub fn parts(range: &Range<u64>, reps: u64) -> Vec<(u64, u32, u32)> {
    if range.is_empty() {
        return Vec::new();
    }
    (range.start / reps..=(range.end - 1) / reps)
        .map(|u| {
            let from = range.start.max(u * reps) - u * reps;
            let to = range.end.min((u + 1) * reps) - u * reps;
            (u, from as u32, to as u32)
        })
        .collect()
}

/// The command-line settings that change results, as a shard records them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Overrides {
    /// `--seed`.
    pub seed: Option<u64>,
    /// `--replications`.
    pub replications: Option<u64>,
    /// `--sweep`, each axis as given.
    pub sweep: Vec<SweepOverride>,
    /// `--set`, each as given (left out of the file when there is none, as before `--set`
    /// existed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set: Vec<SetOverride>,
}

/// One `--set PATH=VALUE`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetOverride {
    /// The dotted path.
    pub path: String,
    /// The value.
    pub value: Value,
}

/// One `--sweep PATH=V1,V2,...`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepOverride {
    /// The dotted path.
    pub path: String,
    /// The values.
    pub values: Vec<Value>,
}

impl Overrides {
    /// The load options these overrides mean, as `run` builds them from its flags.
    pub fn load_options(&self) -> anyhow::Result<LoadOptions> {
        let sweep = match self.sweep.as_slice() {
            [] => None,
            [one] => Some(Sweep::new(one.path.clone(), one.values.clone())),
            [first, second] => Some(
                Sweep::new(first.path.clone(), first.values.clone())
                    .with_second(Axis::new(second.path.clone(), second.values.clone())),
            ),
            _ => anyhow::bail!("a sweep has at most two axes"),
        };
        Ok(LoadOptions {
            seed: self.seed,
            replications: self.replications,
            sweep,
            set: self
                .set
                .iter()
                .map(|s| (s.path.clone(), s.value.clone()))
                .collect(),
        })
    }
}

/// One unit part a shard holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Held {
    /// The unit's number in job order.
    pub unit: u64,
    /// Its sweep point (0 without a sweep).
    pub point: u64,
    /// Its variant's name.
    pub variant: String,
    /// The replications held: from the first, up to the second excluded.
    pub replications: [u32; 2],
}

/// `shard.json`: what a shard folder holds and what it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardInfo {
    /// The shard folder's format version ([`FORMAT`]).
    pub format: u32,
    /// The retrystorm version that ran the shard.
    pub retrystorm: String,
    /// The scenario's name.
    pub scenario: String,
    /// The scenario file as it was named on the command line.
    pub file: String,
    /// SHA-256 of `scenario.resolved.json`.
    pub resolved_sha256: String,
    /// The overrides of seed, replications and sweep.
    pub overrides: Overrides,
    /// Image format of the figures the merge draws (`png` or `svg`).
    pub figures: String,
    /// This shard's index (0-based).
    pub index: u64,
    /// The number of shards.
    pub count: u64,
    /// Units (sweep point, variant) in the experiment.
    pub units: u64,
    /// Replications per unit.
    pub replications: u64,
    /// The jobs held, first and end (excluded); unit `u`'s replication `r` is job `u*R + r`.
    pub jobs: [u64; 2],
    /// The unit parts held, in job order.
    pub holds: Vec<Held>,
}

/// One line of `units.jsonl`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum Line {
    /// A unit part starts: its latencies, merged over the part's replications.
    Part {
        unit: u64,
        replications: [u32; 2],
        success: LatencyParts,
        failure: LatencyParts,
        /// Per group of clients, where there are several.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        groups: Vec<LatencyParts>,
    },
    /// One replication of the part.
    Replication(Box<RawReplication>),
}

/// A [`Digest`] as plain data.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReplication {
    unit: u64,
    replication: u32,
    events: u64,
    requests: u64,
    latency_counts: [u64; 3],
    truncated: Option<Truncation>,
    metrics: Metrics,
    bucket_ns: SimDuration,
    series: Vec<Row>,
    /// The buckets with answers and their latency bins ([`TimeSeries::latency`]).
    latency: Vec<(usize, LatencyBins)>,
    services: Vec<RawSeries>,
    /// Each replica's series ([`Digest::replica_series`]); left out without replicas.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    replicas: Vec<RawSeries>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSeries {
    bucket_ns: SimDuration,
    rows: Vec<Row>,
    latency: Vec<(usize, LatencyBins)>,
}

impl RawSeries {
    fn of(s: &TimeSeries) -> Self {
        RawSeries {
            bucket_ns: s.bucket(),
            rows: s.rows().to_vec(),
            latency: s.latency(),
        }
    }
}

impl RawReplication {
    fn of(unit: u64, replication: u32, d: &Digest) -> Self {
        RawReplication {
            unit,
            replication,
            events: d.counters.events,
            requests: d.counters.requests,
            latency_counts: d.latency_counts,
            truncated: d.truncated.clone(),
            metrics: d.metrics.clone(),
            bucket_ns: d.series.bucket(),
            series: d.series.rows().to_vec(),
            latency: d.series.latency(),
            services: d.service_series.iter().map(RawSeries::of).collect(),
            replicas: d.replica_series.iter().map(RawSeries::of).collect(),
        }
    }

    /// The digest back; only what folding reads of the counts is kept (events, requests).
    fn digest(self) -> anyhow::Result<Digest> {
        let series = |bucket: SimDuration, rows: Vec<Row>, latency: Vec<(usize, LatencyBins)>| {
            anyhow::ensure!(
                bucket.as_nanos() > 0 && !rows.is_empty(),
                "a time series without buckets"
            );
            anyhow::ensure!(
                rows.len() <= MAX_ROWS,
                "a time series of {} buckets, more than a run keeps ({MAX_ROWS})",
                rows.len()
            );
            TimeSeries::from_rows(bucket, rows)
                .with_latency(latency)
                .ok_or_else(|| anyhow::anyhow!("a time series' latencies do not fit its buckets"))
        };
        Ok(Digest {
            counters: Counters {
                events: self.events,
                requests: self.requests,
                ..Counters::default()
            },
            latency_counts: self.latency_counts,
            truncated: self.truncated,
            metrics: self.metrics,
            series: series(self.bucket_ns, self.series, self.latency)?,
            service_series: self
                .services
                .into_iter()
                .map(|s| series(s.bucket_ns, s.rows, s.latency))
                .collect::<anyhow::Result<_>>()?,
            replica_series: self
                .replicas
                .into_iter()
                .map(|s| series(s.bucket_ns, s.rows, s.latency))
                .collect::<anyhow::Result<_>>()?,
        })
    }
}

/// The bytes of `scenario.resolved.json` for `experiment`, as a run writes them.
pub fn resolved_bytes(experiment: &Experiment) -> anyhow::Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(&crate::scenario::resolved_json(experiment))?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// Where shard `index` of `count` of `experiment` is: its jobs and the unit parts they cover.
pub fn plan(experiment: &Experiment, index: u64, count: u64) -> (Range<u64>, Vec<Held>) {
    let groups = runner::groups(experiment);
    let reps = u64::from(experiment.replications);
    let range = jobs(groups.len() as u64, reps, index, count);
    let held = parts(&range, reps)
        .into_iter()
        .map(|(unit, from, to)| {
            let (p, v) = groups[unit as usize];
            Held {
                unit,
                point: p as u64,
                variant: experiment.points[p].variants[v].name.clone(),
                replications: [from, to],
            }
        })
        .collect();
    (range, held)
}

/// What a shard is, besides its results.
pub struct ShardRun<'a> {
    /// The experiment, loaded from `source` with `overrides`.
    pub experiment: &'a Experiment,
    /// The scenario file's text.
    pub source: &'a str,
    /// The scenario file as named on the command line.
    pub file: &'a str,
    /// The overrides it was loaded with.
    pub overrides: &'a Overrides,
    /// The figures' format for the merge.
    pub format: ImageFormat,
    /// Index and count.
    pub index: u64,
    /// Number of shards.
    pub count: u64,
}

/// The files of a shard folder holding `result` (the jobs of [`plan`]).
pub fn shard_files(shard: &ShardRun, result: &RangeResult) -> anyhow::Result<Vec<OutputFile>> {
    let e = shard.experiment;
    let reps = u64::from(e.replications);
    let (range, holds) = plan(e, shard.index, shard.count);
    anyhow::ensure!(
        range.start == result.start && range.end - range.start == result.digests.len() as u64,
        "the shard ran other jobs than its plan"
    );
    let resolved = resolved_bytes(e)?;
    let info = ShardInfo {
        format: FORMAT,
        retrystorm: env!("CARGO_PKG_VERSION").to_string(),
        scenario: e.name.clone(),
        file: shard.file.to_string(),
        resolved_sha256: crate::output::publish::sha256_hex(&resolved),
        overrides: shard.overrides.clone(),
        figures: shard.format.extension().to_string(),
        index: shard.index,
        count: shard.count,
        units: runner::groups(e).len() as u64,
        replications: reps,
        jobs: [range.start, range.end],
        holds: holds.clone(),
    };
    let mut units = Vec::new();
    let line = |units: &mut Vec<u8>, line: &Line| -> anyhow::Result<()> {
        serde_json::to_writer(&mut *units, line)?;
        units.push(b'\n');
        Ok(())
    };
    for held in &holds {
        let pool = result
            .pools
            .get(&(held.unit as usize))
            .cloned()
            .unwrap_or_default();
        line(
            &mut units,
            &Line::Part {
                unit: held.unit,
                replications: held.replications,
                success: pool.success.to_parts(),
                failure: pool.failure.to_parts(),
                groups: pool.groups.iter().map(|g| g.to_parts()).collect(),
            },
        )?;
        for r in held.replications[0]..held.replications[1] {
            let job = held.unit * reps + u64::from(r);
            let digest = &result.digests[(job - range.start) as usize];
            line(
                &mut units,
                &Line::Replication(Box::new(RawReplication::of(held.unit, r, digest))),
            )?;
        }
    }
    let mut info_bytes = serde_json::to_vec_pretty(&info)?;
    info_bytes.push(b'\n');
    Ok(vec![
        OutputFile {
            name: INFO.into(),
            bytes: info_bytes,
        },
        OutputFile {
            name: RESOLVED.into(),
            bytes: resolved,
        },
        OutputFile {
            name: SOURCE.into(),
            bytes: shard.source.as_bytes().to_vec(),
        },
        OutputFile {
            name: UNITS.into(),
            bytes: units,
        },
    ])
}

/// A shard folder checked against its manifest.
pub struct ShardFolder {
    /// The folder as named.
    pub dir: PathBuf,
    /// Its `shard.json`.
    pub info: ShardInfo,
}

/// A streaming SHA-256 and size of a regular file, never following a link.
fn hash_file(path: &Path) -> std::io::Result<(u64, String)> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits() as i32)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut size = 0u64;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        size += n as u64;
        hasher.update(&buf[..n]);
    }
    let digest = hasher.finalize();
    Ok((
        size,
        digest
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>(),
    ))
}

/// Reads shard folder `dir`: its manifest, every file it lists checked by size and SHA-256
/// (nothing else in the folder), and its `shard.json`. The error says what is wrong.
pub fn read_folder(dir: &Path) -> Result<ShardFolder, String> {
    let manifest_bytes = crate::output::publish::read_regular_file(&dir.join(MANIFEST))
        .map_err(|e| format!("it has no readable {MANIFEST} ({e}), so it is not a finished shard folder (a shard still running, or killed, has none)"))?;
    let manifest = Manifest::parse(&manifest_bytes)
        .map_err(|e| format!("its {MANIFEST} is not a retrystorm manifest ({e})"))?;
    for name in [INFO, RESOLVED, SOURCE, UNITS] {
        if manifest.entry(name).is_none() {
            return Err(format!(
                "its manifest does not list {name}, so it is not a shard folder (a run folder? give the folders `run --shard` wrote)"
            ));
        }
    }
    let entries = std::fs::read_dir(dir).map_err(|e| format!("cannot list it ({e})"))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot list it ({e})"))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name != MANIFEST && manifest.entry(&name).is_none() {
            return Err(format!(
                "it holds {name}, which its manifest does not list: the folder was changed after the shard wrote it; run the shard again"
            ));
        }
    }
    for entry in &manifest.files {
        if !is_plain_name(&entry.name) {
            return Err(format!("its manifest lists {:?}", entry.name));
        }
        let (size, sha) = hash_file(&dir.join(&entry.name)).map_err(|e| {
            format!(
                "cannot read {} ({e}); the shard folder is incomplete: run the shard again",
                entry.name
            )
        })?;
        if size != entry.bytes || sha != entry.sha256 {
            return Err(format!(
                "{} is not what its manifest says ({size} bytes, {} listed; SHA-256 {}): the file was truncated or edited after the shard wrote it; run the shard again",
                entry.name,
                entry.bytes,
                if sha == entry.sha256 {
                    "matches"
                } else {
                    "differs"
                }
            ));
        }
    }
    let bytes = crate::output::publish::read_regular_file(&dir.join(INFO))
        .map_err(|e| format!("cannot read {INFO} ({e})"))?;
    let info: ShardInfo = serde_json::from_slice(&bytes)
        .map_err(|e| format!("its {INFO} is not a shard description ({e})"))?;
    check_info(&info).map_err(|e| format!("its {INFO} {e}; run the shard again"))?;
    Ok(ShardFolder {
        dir: dir.to_path_buf(),
        info,
    })
}

/// The fields of a `shard.json` that are used before they are compared with the plan are in
/// their ranges: a shard is input like any other, and an edited one (its manifest recomputed)
/// must be refused, never divide by zero, index out of bounds or allocate without bound.
fn check_info(info: &ShardInfo) -> Result<(), String> {
    if !(1..=MAX_SHARDS).contains(&info.count) {
        return Err(format!(
            "has count {}, not a number of shards (1 to {MAX_SHARDS})",
            info.count
        ));
    }
    if info.index >= info.count {
        return Err(format!(
            "has index {}, not below its count {}",
            info.index, info.count
        ));
    }
    if info.jobs[0] > info.jobs[1] {
        return Err(format!(
            "has jobs {:?}, which end before they start",
            info.jobs
        ));
    }
    if let Some(h) = info
        .holds
        .iter()
        .find(|h| h.replications[0] > h.replications[1])
    {
        return Err(format!(
            "holds unit {} with replications {:?}, which end before they start",
            h.unit, h.replications
        ));
    }
    Ok(())
}

/// The file name `text` as a POSIX shell reads it back as one word naming that file: as it
/// is when it holds only characters no shell treats specially, else in single quotes; a name
/// that starts with `-` gets `./` so that no command takes it for an option. For the commands
/// a message suggests running, so that a pasted command never runs what a file name holds.
pub fn shell_word(text: &str) -> String {
    let text = match text.starts_with('-') {
        true => format!("./{text}"),
        false => text.to_string(),
    };
    let plain = |c: char| c.is_ascii_alphanumeric() || "_./-=:,+@%".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        text
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

fn units_text(holds: &[Held], reps: u64) -> String {
    let shown: Vec<String> = holds
        .iter()
        .take(6)
        .map(|h| {
            let whole = u64::from(h.replications[1] - h.replications[0]) == reps;
            if whole {
                format!("unit {} ({}, point {})", h.unit, h.variant, h.point)
            } else {
                format!(
                    "unit {} ({}, point {}) replications {}..{}",
                    h.unit, h.variant, h.point, h.replications[0], h.replications[1]
                )
            }
        })
        .collect();
    match holds.len() {
        0 => "no units".into(),
        n if n > shown.len() => format!("{} and {} more", shown.join(", "), n - shown.len()),
        _ => shown.join(", "),
    }
}

/// Shards that make one whole run, checked, in index order, with the experiment they came
/// from.
pub struct Checked {
    /// The experiment, loaded as every shard loaded it.
    pub experiment: Experiment,
    /// The shards, by index.
    pub shards: Vec<ShardFolder>,
    /// The figures' format.
    pub format: ImageFormat,
}

/// Reads and checks shard folders: each complete (its manifest's digests), all from the same
/// scenario, overrides, retrystorm version and shard count, every index present exactly once
/// and holding what its index should. Every problem found is listed in the error, naming the
/// folder and the units concerned.
pub fn check(dirs: &[PathBuf]) -> anyhow::Result<Checked> {
    let shards = check_readable(dirs)?;
    let Some(first) = shards.first() else {
        return Err(refuse("merge: no shard folders given"));
    };
    check_alike(&shards, first)?;
    let experiment = check_resolves_same(first)?;
    let reference = first.info.clone();
    let shards = check_indices(&experiment, shards, reference.count, &reference.file)?;
    let format = match reference.figures.as_str() {
        "svg" => ImageFormat::Svg,
        _ => ImageFormat::Png,
    };
    Ok(Checked {
        experiment,
        shards,
        format,
    })
}

/// Refuses the merge if any problem was found, listing them all.
fn refuse_any(problems: &[String]) -> anyhow::Result<()> {
    if problems.is_empty() {
        Ok(())
    } else {
        Err(refuse(merge_refused(problems)))
    }
}

/// Every folder given is a finished shard folder: read, with each problem named by folder.
fn check_readable(dirs: &[PathBuf]) -> anyhow::Result<Vec<ShardFolder>> {
    let mut problems = Vec::new();
    let mut shards = Vec::new();
    for dir in dirs {
        match read_folder(dir) {
            Ok(s) => shards.push(s),
            Err(e) => problems.push(format!("{}: {e}", dir.display())),
        }
    }
    refuse_any(&problems)?;
    Ok(shards)
}

/// Every shard was run as `first` was: the same shard format, retrystorm version, flags,
/// scenario, shard count and figure format. Each shard that differs is named once, with the
/// first difference found.
fn check_alike(shards: &[ShardFolder], first: &ShardFolder) -> anyhow::Result<()> {
    let version = env!("CARGO_PKG_VERSION");
    let reference = &first.info;
    let mut problems = Vec::new();
    for s in shards {
        let i = &s.info;
        let d = s.dir.display();
        if i.format != FORMAT {
            problems.push(format!(
                "{d}: its shard format is {}, this retrystorm reads {FORMAT}; run it again with this retrystorm",
                i.format
            ));
        } else if i.retrystorm != version {
            problems.push(format!(
                "{d}: written by retrystorm {}, this is {version}; shards are merged by the version that ran them (their typical runs are simulated again): run every shard with one version",
                i.retrystorm
            ));
        } else if i.overrides != reference.overrides {
            problems.push(format!(
                "{d}: run with other --seed, --replications or --sweep ({}) than {} ({}); run every shard with the same flags",
                overrides_text(&i.overrides),
                first.dir.display(),
                overrides_text(&reference.overrides)
            ));
        } else if i.resolved_sha256 != reference.resolved_sha256 || i.scenario != reference.scenario
        {
            problems.push(format!(
                "{d}: from another scenario ({} with resolved SHA-256 {}) than {} ({} with {}); merge only the shards of one run",
                i.scenario,
                short(&i.resolved_sha256),
                first.dir.display(),
                reference.scenario,
                short(&reference.resolved_sha256)
            ));
        } else if i.count != reference.count {
            problems.push(format!(
                "{d}: shard {} of {}, but {} is of {}; every shard of a run has the same K",
                i.index,
                i.count,
                first.dir.display(),
                reference.count
            ));
        } else if i.figures != reference.figures {
            problems.push(format!(
                "{d}: --format {} where {} has {}; run every shard with the same --format",
                i.figures,
                first.dir.display(),
                reference.figures
            ));
        }
    }
    refuse_any(&problems)
}

/// The scenario `first` carries loads with its recorded flags and resolves, with this
/// retrystorm, to the SHA-256 it recorded. Returns the experiment it loads to.
fn check_resolves_same(first: &ShardFolder) -> anyhow::Result<Experiment> {
    let reference = &first.info;
    let options = reference
        .overrides
        .load_options()
        .map_err(|e| refuse(format!("{}: {INFO}: {e}", first.dir.display())))?;
    let source = crate::scenario::read_text(&first.dir.join(SOURCE)).map_err(|e| {
        refuse(format!(
            "{}: cannot read {SOURCE} ({e})",
            first.dir.display()
        ))
    })?;
    let experiment = load_str(&source, &reference.file, &options).map_err(|e| {
        refuse(format!(
            "{}: its scenario does not load: {e}",
            first.dir.display()
        ))
    })?;
    let resolved = crate::output::publish::sha256_hex(&resolved_bytes(&experiment)?);
    if resolved != reference.resolved_sha256 {
        return Err(refuse(format!(
            "{}: its scenario resolves to SHA-256 {} with this retrystorm, not the {} recorded; it was edited or written by another version",
            first.dir.display(),
            short(&resolved),
            short(&reference.resolved_sha256)
        )));
    }
    Ok(experiment)
}

/// Every index below `count` is given exactly once and holds what the plan gives it. Returns
/// the shards in index order; `file` names the scenario in the advice for a missing shard.
fn check_indices(
    experiment: &Experiment,
    shards: Vec<ShardFolder>,
    count: u64,
    file: &str,
) -> anyhow::Result<Vec<ShardFolder>> {
    let reps = u64::from(experiment.replications);
    let mut problems = Vec::new();
    let mut by_index: BTreeMap<u64, Vec<ShardFolder>> = BTreeMap::new();
    for s in shards {
        by_index.entry(s.info.index).or_default().push(s);
    }
    for (index, list) in &by_index {
        if *index >= count {
            problems.push(format!(
                "{}: its index {index} is not below its count {count}",
                list[0].dir.display()
            ));
            continue;
        }
        let (_, held) = plan(experiment, *index, count);
        if list.len() > 1 {
            let names: Vec<String> = list.iter().map(|s| s.dir.display().to_string()).collect();
            problems.push(format!(
                "shard {index}/{count} is given {} times ({}): it holds {}; give each shard once",
                list.len(),
                names.join(", "),
                units_text(&held, reps)
            ));
        } else if list[0].info.holds != held
            || list[0].info.units != runner::groups(experiment).len() as u64
            || list[0].info.replications != reps
        {
            problems.push(format!(
                "{}: holds {}, but shard {index}/{count} should hold {}; it was edited or written by another version",
                list[0].dir.display(),
                units_text(&list[0].info.holds, reps),
                units_text(&held, reps)
            ));
        }
    }
    let missing: Vec<u64> = (0..count).filter(|i| !by_index.contains_key(i)).collect();
    for index in missing.iter().take(10) {
        let (_, held) = plan(experiment, *index, count);
        problems.push(format!(
            "shard {index}/{count} is missing: it holds {}; run it (retrystorm run {} --shard {index}/{count} ...) and give its folder",
            units_text(&held, reps),
            shell_word(file),
        ));
    }
    if missing.len() > 10 {
        problems.push(format!(
            "and {} more shards are missing",
            missing.len() - 10
        ));
    }
    refuse_any(&problems)?;
    Ok(by_index.into_values().flatten().collect())
}

fn merge_refused(problems: &[String]) -> String {
    format!(
        "merge refused, nothing was written:\n  {}",
        problems.join("\n  ")
    )
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

fn overrides_text(o: &Overrides) -> String {
    let mut parts = Vec::new();
    if let Some(s) = o.seed {
        parts.push(format!("--seed {s}"));
    }
    if let Some(r) = o.replications {
        parts.push(format!("--replications {r}"));
    }
    for s in &o.sweep {
        let values: Vec<String> = s.values.iter().map(Value::to_string).collect();
        parts.push(format!("--sweep {}={}", s.path, values.join(",")));
    }
    for s in &o.set {
        parts.push(format!("--set {}={}", s.path, s.value));
    }
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(" ")
    }
}

/// The merged folder's `files` read back as `retrystorm report DIR` reads a run, so that a
/// merge never writes what `report` then refuses: shards' numbers are input, and one edited
/// out of range (a share above 1, a negative count) is refused here, naming the problem.
pub fn check_reads_back(files: &[OutputFile]) -> anyhow::Result<()> {
    let folder = crate::output::RunFolder::from_files(
        files.iter().map(|f| (f.name.clone(), f.bytes.clone())),
    );
    crate::output::reload_files(&folder).map(drop).map_err(|e| {
        refuse(format!(
            "merge refused, nothing was written: the merged run would not read back ({e:#}); a shard's units.jsonl holds numbers no run makes: run that shard again"
        ))
    })
}

/// Folds checked shards, streaming each one's `units.jsonl` in index order (job order), into
/// the result a single run has.
pub fn merge(checked: &Checked) -> anyhow::Result<ExperimentResult> {
    let reps = u64::from(checked.experiment.replications);
    let mut items: Vec<Box<dyn Iterator<Item = anyhow::Result<Refed>> + '_>> = Vec::new();
    for shard in &checked.shards {
        items.push(Box::new(stream(shard, reps)?));
    }
    runner::refold(&checked.experiment, items.into_iter().flatten())
        .map_err(|e| refuse(format!("merge refused, nothing was written: {e:#}")))
}

/// The items of one shard's `units.jsonl`, checked against its `shard.json` as they come.
fn stream(
    shard: &ShardFolder,
    reps: u64,
) -> anyhow::Result<impl Iterator<Item = anyhow::Result<Refed>>> {
    let path = shard.dir.join(UNITS);
    let file = std::fs::File::open(&path).map_err(|e| {
        refuse(format!(
            "{}: cannot read {UNITS} ({e})",
            shard.dir.display()
        ))
    })?;
    let mut lines = BufReader::new(file).lines();
    // What comes next: each part's header, then its replications, in order.
    let mut expected = shard.info.holds.iter().flat_map(|h| {
        std::iter::once((h.unit, None, h.replications))
            .chain((h.replications[0]..h.replications[1]).map(move |r| (h.unit, Some(r), [0, 0])))
    });
    let dir = shard.dir.clone();
    let mut done = false;
    Ok(std::iter::from_fn(move || {
        if done {
            return None;
        }
        let fail = |what: String| -> Option<anyhow::Result<Refed>> {
            Some(Err(anyhow::anyhow!("{}: {UNITS}: {what}", dir.display())))
        };
        let next = expected.next();
        let line = match lines.next() {
            None if next.is_none() => {
                done = true;
                return None;
            }
            None => {
                done = true;
                return fail("it ends before every unit it holds".into());
            }
            Some(Err(e)) => {
                done = true;
                return fail(format!("cannot read it ({e})"));
            }
            Some(Ok(line)) => line,
        };
        let Some((unit, replication, range)) = next else {
            done = true;
            return fail("it holds more than its shard.json lists".into());
        };
        let parsed: Line = match serde_json::from_str(&line) {
            Ok(l) => l,
            Err(e) => {
                done = true;
                return fail(format!("a line is not a shard record ({e})"));
            }
        };
        match record(parsed, unit, replication, range, reps) {
            Ok(item) => Some(Ok(item)),
            Err(what) => {
                done = true;
                fail(what)
            }
        }
    }))
}

/// One parsed line of a shard's `units.jsonl`, when it is the one expected next: unit
/// `unit`'s header (`replication` none, holding `range`) or its replication `replication`.
fn record(
    parsed: Line,
    unit: u64,
    replication: Option<u32>,
    range: [u32; 2],
    reps: u64,
) -> Result<Refed, String> {
    match (parsed, replication) {
        (
            Line::Part {
                unit: u,
                replications,
                success,
                failure,
                groups,
            },
            None,
        ) if u == unit && replications == range => {
            let groups: Option<Vec<_>> = groups.iter().map(LatencyHistogram::from_parts).collect();
            let (Some(success), Some(failure), Some(groups)) = (
                LatencyHistogram::from_parts(&success),
                LatencyHistogram::from_parts(&failure),
                groups,
            ) else {
                return Err(format!("unit {unit}'s latencies do not read back"));
            };
            Ok(Refed::Pool(
                unit as usize,
                Box::new(LatencyPool {
                    success,
                    failure,
                    groups,
                }),
            ))
        }
        (Line::Replication(raw), Some(r)) if raw.unit == unit && raw.replication == r => raw
            .digest()
            .map(|d| Refed::Replication(unit * reps + u64::from(r), Box::new(d)))
            .map_err(|e| format!("unit {unit} replication {r}: {e}")),
        _ => Err(format!(
            "expected {} of unit {unit}, found something else",
            match replication {
                Some(r) => format!("replication {r}"),
                None => "the header".into(),
            }
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_suggested_file_name_is_one_shell_word() {
        assert_eq!(shell_word("scenarios/a-b_1.json"), "scenarios/a-b_1.json");
        assert_eq!(shell_word("a b.json"), "'a b.json'");
        assert_eq!(shell_word("x;rm -rf ~.json"), "'x;rm -rf ~.json'");
        assert_eq!(shell_word("$(touch p).json"), "'$(touch p).json'");
        assert_eq!(shell_word("it's.json"), r"'it'\''s.json'");
        assert_eq!(shell_word("-x.json"), "./-x.json");
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn a_replication_with_more_buckets_than_a_run_keeps_is_refused() {
        let experiment = load_str(
            include_str!("../scenarios/first-storm.json"),
            "first-storm.json",
            &LoadOptions::default(),
        )
        .expect("a bundled scenario");
        let scenario = &experiment.points[0].variants[0].scenario;
        let digest = crate::sim::run(scenario, 1, 0).digest();
        let mut raw = RawReplication::of(0, 0, &digest);
        assert!(
            raw.clone().digest().is_ok(),
            "the run's own series reads back"
        );
        raw.series = vec![[0; crate::metrics::series::COLUMNS]; MAX_ROWS + 1];
        let error = raw.digest().expect_err("too many buckets").to_string();
        assert!(error.contains("more than a run keeps"), "{error}");
    }

    #[test]
    fn shards_tile_the_jobs_in_order_and_deal_whole_units_when_they_can() {
        for units in 1..12u64 {
            for reps in 1..6u64 {
                for count in 1..15u64 {
                    let ranges: Vec<Range<u64>> =
                        (0..count).map(|i| jobs(units, reps, i, count)).collect();
                    assert_eq!(ranges[0].start, 0);
                    assert_eq!(ranges[count as usize - 1].end, units * reps);
                    for pair in ranges.windows(2) {
                        assert_eq!(pair[0].end, pair[1].start, "contiguous, in order");
                    }
                    for r in &ranges {
                        if units >= count {
                            assert!(!r.is_empty(), "every shard gets a unit");
                            assert_eq!(r.start % reps, 0, "whole units");
                            assert_eq!(r.end % reps, 0, "whole units");
                        } else if units * reps >= count {
                            assert!(!r.is_empty(), "every shard gets replications");
                        }
                        let covered: u64 = parts(r, reps)
                            .iter()
                            .map(|&(_, a, b)| u64::from(b - a))
                            .sum();
                        assert_eq!(covered, r.end - r.start);
                    }
                }
            }
        }
    }

    #[test]
    fn shard_text_is_read_or_refused_with_the_rule() {
        assert_eq!(
            parse_spec("2/5"),
            Ok(ShardSpec::Fixed { index: 2, count: 5 })
        );
        assert_eq!(parse_spec("auto"), Ok(ShardSpec::Auto { count: None }));
        assert_eq!(parse_spec("auto/8"), Ok(ShardSpec::Auto { count: Some(8) }));
        for bad in ["5/5", "1/0", "", "auto/", "x/3", "3", "1/2/3", "auto/-1"] {
            let e = parse_spec(bad).unwrap_err();
            assert!(e.contains("--shard takes I/K"), "{bad}: {e}");
        }
    }

    #[test]
    fn auto_takes_the_index_relative_to_the_array_minimum() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        let auto = ShardSpec::Auto { count: None };
        let one_based = env(&[
            ("SLURM_ARRAY_TASK_ID", "3"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
            ("SLURM_ARRAY_TASK_COUNT", "3"),
        ]);
        assert_eq!(resolve(auto, &one_based).unwrap(), (2, 3));
        let zero_based = env(&[
            ("SLURM_ARRAY_TASK_ID", "0"),
            ("SLURM_ARRAY_TASK_COUNT", "3"),
        ]);
        assert_eq!(resolve(auto, &zero_based).unwrap(), (0, 3));
        let k8s = env(&[("JOB_COMPLETION_INDEX", "0")]);
        assert_eq!(
            resolve(ShardSpec::Auto { count: Some(2) }, &k8s).unwrap(),
            (0, 2)
        );
        assert!(resolve(auto, &k8s).is_err(), "auto needs the count");
        let below = env(&[
            ("SLURM_ARRAY_TASK_ID", "0"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
            ("SLURM_ARRAY_TASK_COUNT", "3"),
        ]);
        assert!(resolve(auto, &below).is_err());
        let junk = env(&[
            ("SLURM_ARRAY_TASK_ID", "x"),
            ("SLURM_ARRAY_TASK_COUNT", "3"),
        ]);
        assert!(resolve(auto, &junk).is_err());
    }
}
