//! Tune files: the raw JSON mirror and its rules.
//!
//! A tune file names a scenario file whose variants are the suite of faults, the settings to
//! search with their values, the objectives and the constraints. Reading it loads the
//! scenario once per candidate (every combination of the searched values), through the
//! scenario loader with the candidate's values put in place as `--set` puts them, so each
//! candidate is checked by every rule a scenario has, and nothing downstream checks again.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::measure::{Bound, Constraint, Measure, Objective};
use crate::scenario::{
    Experiment, LoadOptions, ScenarioError, label_from_path, load_str, parse_duration, read_text,
};

/// The most candidates one tune file may expand to.
pub const MAX_CANDIDATES: usize = 10_000;
/// The most settings one tune file may search.
pub const MAX_SETTINGS: usize = 8;
/// The most replications a candidate may get at one fault.
pub const MAX_REPLICATIONS: u32 = 10_000;

/// The tune file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTune {
    /// Names the tune and its output folder.
    pub name: String,
    /// What is tuned and why.
    #[serde(default)]
    pub description: Option<String>,
    /// The scenario file, relative to the tune file's folder. Its variants are the faults.
    pub scenario: String,
    /// Which of the scenario's variants form the suite (default: all, in file order).
    #[serde(default)]
    pub faults: Option<Vec<String>>,
    /// Master seed (default: the scenario's).
    #[serde(default)]
    pub seed: Option<u64>,
    /// The most replications a candidate gets at each fault.
    pub replications: u32,
    /// Replications every candidate gets before the first comparison (racing only).
    #[serde(default)]
    pub first_round: Option<u32>,
    /// `race` (default) or `grid`.
    #[serde(default)]
    pub method: Method,
    /// The settings searched.
    pub search: Vec<RawSetting>,
    /// What is better, most important first.
    pub objectives: Vec<RawObjective>,
    /// Bounds a candidate must keep.
    #[serde(default)]
    pub constraints: Vec<RawConstraint>,
}

/// How candidates are given replications.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Rounds of replications; a candidate worse with confidence is dropped after a round.
    #[default]
    Race,
    /// Every candidate gets every replication.
    Grid,
}

/// One searched setting as written: a list of values, or a range.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSetting {
    /// Dotted path into the scenario, as `--set` takes it.
    pub path: String,
    /// Its name in tables and figures (default: made from the path).
    #[serde(default)]
    pub label: Option<String>,
    /// The values, in order of preference: among candidates that tie, the earlier wins.
    #[serde(default)]
    pub values: Option<Vec<Value>>,
    /// First value of a range (a number, or a duration such as "250ms").
    #[serde(default)]
    pub from: Option<Value>,
    /// Last value of a range (included when the steps land on it).
    #[serde(default)]
    pub to: Option<Value>,
    /// Step of a range.
    #[serde(default)]
    pub step: Option<Value>,
}

/// An objective as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawObjective {
    /// A metric of summary.json, by its key (`success_rate`, `latency_ms.p99`, ...).
    pub metric: String,
    /// A service's metric rather than the clients' (`amplification` at `db`).
    #[serde(default)]
    pub service: Option<String>,
    /// Differences up to this (summary.json's unit) do not matter: candidates this close on
    /// the objective are tied, and the next objective decides (default: 1 % of the best).
    #[serde(default)]
    pub tolerance: Option<f64>,
}

/// A constraint as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConstraint {
    /// As an objective's.
    pub metric: String,
    /// As an objective's.
    #[serde(default)]
    pub service: Option<String>,
    /// The fault it holds at (default: every fault).
    #[serde(default)]
    pub fault: Option<String>,
    /// Upper bound, in summary.json's unit.
    #[serde(default)]
    pub at_most: Option<f64>,
    /// Lower bound, in summary.json's unit.
    #[serde(default)]
    pub at_least: Option<f64>,
}

/// A searched setting, checked.
#[derive(Debug, Clone)]
pub struct Setting {
    /// Dotted path into the scenario.
    pub path: String,
    /// Its name for people.
    pub label: String,
    /// Its values, in order of preference.
    pub values: Vec<Value>,
}

/// One combination of the searched values, loaded.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Index of each setting's value.
    pub choice: Vec<usize>,
    /// The scenario with these values: one point, one variant per fault.
    pub experiment: Experiment,
}

/// A checked tune file: everything a search needs.
#[derive(Debug, Clone)]
pub struct Tune {
    /// Names the tune and its output folder.
    pub name: String,
    /// What is tuned.
    pub description: Option<String>,
    /// The scenario file as the tune file names it.
    pub scenario: String,
    /// Master seed.
    pub seed: u64,
    /// The most replications a candidate gets at each fault.
    pub replications: u32,
    /// Replications of the first round.
    pub first_round: u32,
    /// Race or grid.
    pub method: Method,
    /// The scenario file's document as written.
    pub base: Value,
    /// SHA-256 of the tune file, the scenario file and retrystorm's version: which tune a
    /// state folder belongs to.
    pub identity: String,
    /// The faults, in suite order (the variant names).
    pub faults: Vec<String>,
    /// The searched settings.
    pub settings: Vec<Setting>,
    /// The objectives, most important first.
    pub objectives: Vec<Objective>,
    /// The constraints.
    pub constraints: Vec<Constraint>,
    /// Every candidate, the first setting's values outermost.
    pub candidates: Vec<Candidate>,
}

impl Tune {
    /// The settings of candidate `c` in words: `ratio = 0.1, attempts = 3`.
    pub fn label(&self, c: usize) -> String {
        self.settings
            .iter()
            .zip(&self.candidates[c].choice)
            .map(|(s, &i)| format!("{} = {}", s.label, value_text(&s.values[i])))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The scenario file's document with candidate `c`'s values in place: a scenario that
    /// `retrystorm run` runs as the tune ran that candidate (its variants the faults).
    pub fn scenario_of(&self, c: usize) -> Value {
        let mut doc = self.base.clone();
        doc["seed"] = self.seed.into();
        doc["replications"] = self.replications.into();
        for (s, &i) in self.settings.iter().zip(&self.candidates[c].choice) {
            // Every candidate loaded with this value at this path, so it can be put there.
            let _ = crate::scenario::set_path(&mut doc, &s.path, s.values[i].clone());
        }
        doc
    }

    /// Every measure the search takes: the objectives', then the constraints' not already
    /// among them.
    pub fn measures(&self) -> Vec<Measure> {
        let mut out: Vec<Measure> = Vec::new();
        let all = self.objectives.iter().map(|o| &o.measure);
        for m in all.chain(self.constraints.iter().map(|c| &c.measure)) {
            if !out.contains(m) {
                out.push(m.clone());
            }
        }
        out
    }
}

/// A setting's value as tables print it: strings without quotes.
pub fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Why a tune file cannot be used: every problem, each with where and what to do.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {}", problems.join(&format!("\n{file}: ")))]
pub struct TuneError {
    /// The tune file.
    pub file: String,
    /// Each problem: path, what is wrong, the fix.
    pub problems: Vec<String>,
}

/// Reads and checks the tune file at `path`, loading its scenario once per candidate.
pub fn load(path: &Path) -> Result<Tune, TuneError> {
    let file = path.display().to_string();
    let fail = |problems: Vec<String>| TuneError {
        file: file.clone(),
        problems,
    };
    let text = read_text(path).map_err(|e| fail(vec![format!("cannot read it: {e}")]))?;
    let raw: RawTune = {
        let mut de = serde_json::Deserializer::from_str(&text);
        serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let at = e.path().to_string();
            let at = if at == "." {
                String::new()
            } else {
                format!("{at}: ")
            };
            fail(vec![format!("{at}{}", e.inner())])
        })?
    };
    let dir = path.parent().unwrap_or(Path::new(""));
    let mut tune = check(raw, dir).map_err(fail)?;
    tune.identity = identity(&[&text, &tune.identity]);
    Ok(tune)
}

/// The SHA-256 of `parts` and retrystorm's version, each with its length.
fn identity(parts: &[&str]) -> String {
    let mut all = format!("retrystorm {}\n", env!("CARGO_PKG_VERSION"));
    for p in parts {
        all.push_str(&format!("{}\n{p}\n", p.len()));
    }
    crate::output::publish::sha256_hex(all.as_bytes())
}

/// The rules of a tune file read into `raw`, whose scenario path is relative to `dir`.
pub fn check(raw: RawTune, dir: &Path) -> Result<Tune, Vec<String>> {
    // What the tune asks for, as read: with the scenario's text, which tune a state is of.
    let asked = format!("{raw:?}");
    let mut problems = Vec::new();
    check_head(&raw, &mut problems);
    let settings = check_settings(&raw.search, &mut problems);
    let scenario_path: PathBuf = dir.join(&raw.scenario);
    let base = match read_text(&scenario_path) {
        Ok(text) => Some(text),
        Err(e) => {
            problems.push(format!(
                "scenario: cannot read {} ({e}); give the scenario file's path relative to the tune file",
                scenario_path.display()
            ));
            None
        }
    };
    if !problems.is_empty() {
        return Err(problems);
    }
    let text = base.unwrap_or_default();
    let shown = scenario_path.display().to_string();
    // The scenario as written first: its own problems are the scenario's, not a candidate's.
    let first = load_candidate(&text, &shown, &raw, &[], &[])
        .map_err(|e| vec![format!("scenario: {e}")])?;
    let faults = check_faults(&raw, &first, &mut problems);
    let services: Vec<String> = first.points[0].variants[0]
        .scenario
        .services
        .iter()
        .map(|s| s.name.clone())
        .collect();
    let objectives = check_objectives(&raw.objectives, &services, &mut problems);
    let constraints = check_constraints(&raw.constraints, &services, &faults, &mut problems);
    if !problems.is_empty() {
        return Err(problems);
    }
    let candidates = load_candidates(&text, &shown, &raw, &settings, &faults)?;
    let measures = objectives.len() + constraints.len();
    let pooled = objectives
        .iter()
        .map(|o| &o.measure)
        .chain(constraints.iter().map(|c| &c.measure))
        .any(Measure::pooled);
    if let Some(p) = memory_problem(
        &candidates,
        faults.len(),
        measures,
        raw.replications,
        pooled,
    ) {
        return Err(vec![p]);
    }
    let seed = raw.seed.unwrap_or(first.seed);
    let base = serde_json::from_str(&text).map_err(|e| vec![format!("scenario: {e}")])?;
    let first_round = raw.first_round.unwrap_or(raw.replications.min(4));
    Ok(Tune {
        name: raw.name,
        description: raw.description,
        scenario: raw.scenario,
        seed,
        replications: raw.replications,
        first_round: if raw.method == Method::Grid {
            raw.replications
        } else {
            first_round
        },
        method: raw.method,
        base,
        identity: identity(&[&asked, &text]),
        faults,
        settings,
        objectives,
        constraints,
        candidates,
    })
}

/// Bytes a tune keeps for each candidate at each fault whose latencies it pools: two latency
/// histograms (successes and failures), measured at about 108 KiB each once a replication's
/// latencies outgrow their short list.
const POOLED_CELL_BYTES: u64 = 224 * 1024;
/// Bytes a tune keeps for each candidate at each fault besides: its scenario and its cell.
const CELL_BYTES: u64 = 16 * 1024;

/// The problem with a search that would keep more than the scenario's memory budget
/// (`limits.max_memory_mb`), with what it would take and the fix; what one replication
/// takes is the scenario's own estimate, on every core.
fn memory_problem(
    candidates: &[Candidate],
    faults: usize,
    measures: usize,
    replications: u32,
    pooled: bool,
) -> Option<String> {
    let first = &candidates.first()?.experiment;
    let limit_mb = first.scenarios().map(|sc| sc.limits.max_memory_mb).max()?;
    let cell = CELL_BYTES
        + if pooled { POOLED_CELL_BYTES } else { 0 }
        + 16 * measures as u64 * u64::from(replications);
    let held = cell.saturating_mul((candidates.len() * faults) as u64);
    let threads = crate::runner::thread_count(0);
    let running = crate::memory::estimate(first, threads)
        .per_thread()
        .saturating_mul(threads as u64);
    let total = held.saturating_add(running);
    let mb = |b: u64| b.div_ceil(1 << 20);
    (total > limit_mb.saturating_mul(1 << 20)).then(|| {
        format!(
            "search: the tune would take about {} MB, more than the scenario's limits.max_memory_mb = {limit_mb} ({} candidates at {faults} faults keep {} MB{}; the replications running on {threads} threads {} MB); search fewer values, or {}raise limits.max_memory_mb in the scenario if the machine has the memory",
            mb(total),
            candidates.len(),
            mb(held),
            if pooled { ", most of it the latency histograms a percentile is pooled from" } else { "" },
            mb(running),
            if pooled { "compare a metric that is not a latency percentile, or " } else { "" },
        )
    })
}

/// The rules of the file-level settings.
fn check_head(raw: &RawTune, problems: &mut Vec<String>) {
    let name_ok = !raw.name.trim().is_empty()
        && crate::output::publish::is_plain_name(&raw.name)
        && !raw.name.starts_with('.');
    if !name_ok {
        problems.push(format!(
            "name: {:?} cannot name an output folder; give a plain name such as \"budget-for-outages\"",
            raw.name
        ));
    }
    if !(1..=MAX_REPLICATIONS).contains(&raw.replications) {
        problems.push(format!(
            "replications: must be from 1 to {MAX_REPLICATIONS} (got {}): the most replications a candidate gets at each fault",
            raw.replications
        ));
    }
    if let Some(first) = raw.first_round {
        if raw.method == Method::Grid {
            problems.push(
                "first_round: a grid gives every candidate every replication at once; leave first_round out, or use \"method\": \"race\"".into(),
            );
        } else if first < 2 || first > raw.replications {
            problems.push(format!(
                "first_round: must be from 2 to replications ({}) (got {first}): a candidate is compared only once it has two replications",
                raw.replications
            ));
        }
    }
    if raw.search.is_empty() || raw.search.len() > MAX_SETTINGS {
        problems.push(format!(
            "search: must list from 1 to {MAX_SETTINGS} settings (got {}), each {{\"path\": ..., \"values\": [...]}}",
            raw.search.len()
        ));
    }
    if raw.objectives.is_empty() {
        problems.push(
            "objectives: must list at least one, e.g. [{\"metric\": \"success_rate\"}, {\"metric\": \"amplification\"}]".into(),
        );
    }
}

/// The searched settings, each with its values; problems listed.
fn check_settings(raw: &[RawSetting], problems: &mut Vec<String>) -> Vec<Setting> {
    let mut out = Vec::new();
    for (i, s) in raw.iter().enumerate() {
        let at = format!("search[{i}]");
        if raw[..i].iter().any(|t| overlaps(&t.path, &s.path)) {
            problems.push(format!(
                "{at}.path: {:?} is searched twice, or inside another searched setting; search each setting once",
                s.path
            ));
            continue;
        }
        let values = match (&s.values, &s.from, &s.to, &s.step) {
            (Some(v), None, None, None) => Ok(v.clone()),
            (None, Some(from), Some(to), Some(step)) => range(from, to, step),
            _ => {
                Err("give either \"values\": [...] or all of \"from\", \"to\" and \"step\"".into())
            }
        };
        match values {
            Ok(v) if v.is_empty() || v.len() > 1000 => problems.push(format!(
                "{at}.values: must hold from 1 to 1000 values (got {})",
                v.len()
            )),
            Ok(v) if has_repeats(&v) => {
                problems.push(format!("{at}.values: lists a value twice; list each once"))
            }
            Ok(values) => out.push(Setting {
                path: s.path.trim().to_string(),
                label: s
                    .label
                    .clone()
                    .filter(|l| !l.trim().is_empty())
                    .unwrap_or_else(|| label_from_path(&s.path)),
                values,
            }),
            Err(e) => problems.push(format!("{at}: {e}")),
        }
    }
    let count = out
        .iter()
        .map(|s| s.values.len())
        .try_fold(1usize, usize::checked_mul);
    if count.is_none_or(|n| n > MAX_CANDIDATES) {
        problems.push(format!(
            "search: its values combine into more than {MAX_CANDIDATES} candidates; search fewer values, or tune in stages"
        ));
    }
    out
}

/// Whether two dotted paths name the same setting or one lies inside the other.
pub fn overlaps(a: &str, b: &str) -> bool {
    let inside = |x: &str, y: &str| y.strip_prefix(x).is_some_and(|r| r.starts_with('.'));
    a == b || inside(a, b) || inside(b, a)
}

fn has_repeats(values: &[Value]) -> bool {
    values
        .iter()
        .enumerate()
        .any(|(i, v)| values[..i].contains(v))
}

/// The values of a range: numbers, or durations written with a unit.
fn range(from: &Value, to: &Value, step: &Value) -> Result<Vec<Value>, String> {
    if from.is_string() || to.is_string() || step.is_string() {
        let d = |v: &Value, what: &str| {
            parse_duration(v)
                .map(|d| d.as_nanos())
                .map_err(|e| format!("{what}: {e}"))
        };
        let (a, b, s) = (d(from, "from")?, d(to, "to")?, d(step, "step")?);
        if s == 0 || b < a || (b - a) / s >= 1000 {
            return Err(
                "a range needs from <= to and a step > 0 giving at most 1000 values".into(),
            );
        }
        return Ok((0..=(b - a) / s)
            .map(|k| duration_value(a + k * s))
            .collect());
    }
    let n = |v: &Value, what: &str| {
        v.as_f64()
            .ok_or_else(|| format!("{what}: must be a number or a duration (got {v})"))
    };
    let (a, b, s) = (n(from, "from")?, n(to, "to")?, n(step, "step")?);
    if s.is_nan() || s <= 0.0 || b < a || (b - a) / s >= 1000.0 {
        return Err("a range needs from <= to and a step > 0 giving at most 1000 values".into());
    }
    let integers = [from, to, step].iter().all(|v| v.is_i64() || v.is_u64());
    // Decimals of the step, so that 0.1 + 2 * 0.1 is written 0.3.
    let decimals = step.to_string().split_once('.').map_or(0, |(_, d)| d.len()) as i32;
    let scale = 10f64.powi(decimals);
    let count = ((b - a) / s + 1e-9).floor() as u64;
    Ok((0..=count)
        .map(|k| {
            let x = a + k as f64 * s;
            if integers {
                Value::from(x.round() as i64)
            } else {
                Value::from((x * scale).round() / scale)
            }
        })
        .collect())
}

/// A duration in nanoseconds written as a scenario would: the largest unit that keeps it whole.
fn duration_value(nanos: u64) -> Value {
    let text = [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")]
        .iter()
        .find(|(unit, _)| nanos.is_multiple_of(*unit) && nanos > 0)
        .map_or(format!("{nanos}ns"), |(unit, name)| {
            format!("{}{name}", nanos / unit)
        });
    Value::String(text)
}

/// The faults of the suite: the scenario's variants, all or those `faults` names.
fn check_faults(raw: &RawTune, first: &Experiment, problems: &mut Vec<String>) -> Vec<String> {
    if first.sweep.is_some() {
        problems.push(
            "scenario: has a sweep; tune searches settings itself, so give it a scenario without \"sweep\" (its variants are the faults)".into(),
        );
    }
    let names: Vec<String> = first.points[0]
        .variants
        .iter()
        .map(|v| v.name.clone())
        .collect();
    let Some(wanted) = &raw.faults else {
        return names;
    };
    for (i, w) in wanted.iter().enumerate() {
        if !names.contains(w) {
            problems.push(format!(
                "faults[{i}]: the scenario has no variant {w:?}; its variants are {}",
                names
                    .iter()
                    .map(|n| format!("{n:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        } else if wanted[..i].contains(w) {
            problems.push(format!(
                "faults[{i}]: {w:?} is listed twice; list each fault once"
            ));
        }
    }
    if wanted.is_empty() {
        problems.push("faults: lists no fault; leave it out to use every variant".into());
    }
    wanted.clone()
}

fn check_objectives(
    raw: &[RawObjective],
    services: &[String],
    problems: &mut Vec<String>,
) -> Vec<Objective> {
    let mut out = Vec::new();
    for (i, o) in raw.iter().enumerate() {
        match Measure::find(&o.metric, o.service.as_deref(), services) {
            Ok(m) if out.iter().any(|x: &Objective| x.measure == m) => {
                problems.push(format!("objectives[{i}]: {} is listed twice", o.metric));
            }
            Ok(_) if o.tolerance.is_some_and(|t| !(t.is_finite() && t >= 0.0)) => {
                problems.push(format!(
                    "objectives[{i}].tolerance: must be a number of at least 0 in summary.json's unit (got {:?})",
                    o.tolerance.unwrap_or_default()
                ));
            }
            Ok(measure) => out.push(Objective {
                measure,
                tolerance: o.tolerance,
            }),
            Err(e) => problems.push(format!("objectives[{i}]: {e}")),
        }
    }
    out
}

fn check_constraints(
    raw: &[RawConstraint],
    services: &[String],
    faults: &[String],
    problems: &mut Vec<String>,
) -> Vec<Constraint> {
    let mut out = Vec::new();
    for (i, c) in raw.iter().enumerate() {
        let at = format!("constraints[{i}]");
        let measure = match Measure::find(&c.metric, c.service.as_deref(), services) {
            Ok(m) => m,
            Err(e) => {
                problems.push(format!("{at}: {e}"));
                continue;
            }
        };
        let bound = match (c.at_most, c.at_least) {
            (Some(x), None) if x.is_finite() => Bound::AtMost(x),
            (None, Some(x)) if x.is_finite() => Bound::AtLeast(x),
            _ => {
                problems.push(format!(
                    "{at}: give one finite bound, \"at_most\" or \"at_least\", in summary.json's unit (ms for latencies, a fraction for rates)"
                ));
                continue;
            }
        };
        let fault = match &c.fault {
            Some(f) => match faults.iter().position(|x| x == f) {
                Some(k) => Some(k),
                None => {
                    problems.push(format!(
                        "{at}.fault: {f:?} is not a fault of the suite ({})",
                        faults.join(", ")
                    ));
                    continue;
                }
            },
            None => None,
        };
        out.push(Constraint {
            measure,
            bound,
            fault,
        });
    }
    out
}

/// Loads the scenario with candidate `choice`'s values in place, keeping the suite's faults.
fn load_candidate(
    text: &str,
    file: &str,
    raw: &RawTune,
    settings: &[Setting],
    choice: &[usize],
) -> Result<Experiment, ScenarioError> {
    let options = LoadOptions {
        seed: raw.seed,
        replications: Some(u64::from(raw.replications)),
        sweep: None,
        set: settings
            .iter()
            .zip(choice)
            .map(|(s, &i)| (s.path.clone(), s.values[i].clone()))
            .collect(),
    };
    load_str(text, file, &options)
}

/// Every candidate, loaded: the first setting's values outermost.
fn load_candidates(
    text: &str,
    file: &str,
    raw: &RawTune,
    settings: &[Setting],
    faults: &[String],
) -> Result<Vec<Candidate>, Vec<String>> {
    let sizes: Vec<usize> = settings.iter().map(|s| s.values.len()).collect();
    let total: usize = sizes.iter().product();
    let mut out = Vec::with_capacity(total);
    let mut problems = Vec::new();
    for k in 0..total {
        let mut choice = vec![0; sizes.len()];
        let mut rest = k;
        for (slot, size) in choice.iter_mut().zip(&sizes).rev() {
            *slot = rest % size;
            rest /= size;
        }
        match load_candidate(text, file, raw, settings, &choice) {
            Ok(mut experiment) => {
                let variants = &mut experiment.points[0].variants;
                variants.retain(|v| faults.contains(&v.name));
                variants.sort_by_key(|v| faults.iter().position(|f| *f == v.name));
                out.push(Candidate { choice, experiment });
            }
            Err(e) if problems.len() < 5 => {
                let words: Vec<String> = settings
                    .iter()
                    .zip(&choice)
                    .map(|(s, &i)| format!("{} = {}", s.path, s.values[i]))
                    .collect();
                problems.push(format!(
                    "search: the candidate {} is refused by the scenario's rules:\n{e}",
                    words.join(", ")
                ));
            }
            Err(_) => {}
        }
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_range_of_numbers_keeps_the_steps_decimals_and_ends_where_the_steps_land() {
        let v = range(&json!(0.1), &json!(0.5), &json!(0.1)).unwrap();
        assert_eq!(
            v,
            [json!(0.1), json!(0.2), json!(0.3), json!(0.4), json!(0.5)]
        );
        let v = range(&json!(1), &json!(6), &json!(2)).unwrap();
        assert_eq!(v, [json!(1), json!(3), json!(5)]);
        assert!(range(&json!(5), &json!(1), &json!(1)).is_err());
        assert!(range(&json!(0), &json!(1), &json!(0)).is_err());
        assert!(
            range(&json!(0), &json!(1e9), &json!(1)).is_err(),
            "more than 1000 values"
        );
    }

    #[test]
    fn a_range_of_durations_is_written_in_the_largest_whole_unit() {
        let v = range(&json!("250ms"), &json!("1.25s"), &json!("250ms")).unwrap();
        assert_eq!(
            v,
            [
                json!("250ms"),
                json!("500ms"),
                json!("750ms"),
                json!("1s"),
                json!("1250ms")
            ]
        );
        assert_eq!(duration_value(1500), json!("1500ns"));
        assert_eq!(duration_value(2_000), json!("2us"));
        assert!(range(&json!("1ms"), &json!(3), &json!("1ms")).is_err());
    }

    #[test]
    fn paths_overlap_when_equal_or_nested_only() {
        assert!(overlaps("policy.retry", "policy.retry.max_attempts"));
        assert!(overlaps("policy.timeout", "policy.timeout"));
        assert!(!overlaps("policy.retry", "policy.retry_on"));
    }
}
