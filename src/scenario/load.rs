//! From a file to an [`Experiment`]: JSON syntax, variants as merge patches, sweeps, and the
//! command-line overrides of seed, replications and sweep.
//!
//! [`load_str`] is the one way in for scenario text. It never panics, and its time grows no
//! faster than the text times a bounded number of scenarios: a file may expand to at most
//! [`MAX_SCENARIOS`] (sweep point, variant) pairs and [`MAX_EXPANDED_BYTES`] of JSON in all.

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::config_file::{self, ConfigFiles};
use super::error::{Problem, ScenarioError, cut, quote, short};
use super::locate::{Place, locate};
use super::policy::preset;
use super::read::read;
use super::schema::{RawScenario, RawSweep, RawVariant};
use super::shape::{self, Step, parse, show};
use super::validate::{file_rules, name_hint, validate};
use super::{Axis, Experiment, Point, Sweep, Variant};

/// Settings given on the command line that override the file.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// Replaces `seed`.
    pub seed: Option<u64>,
    /// Replaces `replications`.
    pub replications: Option<u64>,
    /// Replaces or adds `sweep` (both axes: a file's second axis does not survive).
    pub sweep: Option<Sweep>,
    /// Settings put in place in every scenario of the file, as `--set PATH=VALUE` gives them:
    /// (dotted path, value), in order.
    pub set: Vec<(String, Value)>,
}

/// Keys that belong to the whole file and that a variant patch or a sweep may not change.
const FILE_KEYS: [&str; 6] = [
    "name",
    "seed",
    "replications",
    "variants",
    "sweep",
    "$schema",
];

/// The most scenarios, sweep points times variants, that one file may expand to.
pub const MAX_SCENARIOS: usize = 100_000;
/// The most JSON, in bytes over all its scenarios, that one file may expand to.
pub const MAX_EXPANDED_BYTES: usize = 100_000_000;
/// The most keys a sweep path may have (the deepest setting has fewer than 20).
pub const MAX_PATH_KEYS: usize = 32;
/// Problems of one kind (the same rule, at paths that differ only in list indices) listed
/// before the rest are only counted.
const SHOWN_PER_KIND: usize = 5;

/// The largest scenario file retrystorm reads: scenarios are a few kilobytes, and a larger
/// input (`/dev/zero`, a wrong file) is refused before it fills memory.
pub const MAX_FILE_BYTES: u64 = 16 << 20;

/// Reads and validates a scenario file.
pub fn load_file(path: &Path, options: &LoadOptions) -> Result<Experiment, ScenarioError> {
    let file = path.display().to_string();
    let text = read_text(path).map_err(|reason| ScenarioError::Read {
        file: file.clone(),
        reason,
    })?;
    load_str(&text, &file, options)
}

/// Reads the text of a scenario file, refusing one of more than [`MAX_FILE_BYTES`] (read no
/// further than that, so an endless input ends too) or one that is not UTF-8.
pub fn read_text(path: &Path) -> std::io::Result<String> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(std::io::Error::other(format!(
            "it is larger than {} MiB, the most a scenario file may be (scenarios are a few KB: is it the right file?)",
            MAX_FILE_BYTES >> 20
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "it is not UTF-8 text (byte {} is not; save it as UTF-8)",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

/// A swept setting at one sweep point.
struct Setting<'a> {
    /// The key that names it in messages: `sweep.path` or `sweep.second.path`.
    key: &'static str,
    /// Its dotted path.
    path: &'a str,
    /// The value put there.
    value: &'a Value,
    /// Where the value is written in the file (`None` for a command-line sweep or `--set`).
    place: Option<Place>,
    /// The command-line flag that gave it, where the file does not hold it.
    flag: &'static str,
}

/// Validates scenario text; `file` names it in messages.
///
/// Every problem is reported at once: first the shape of the file as written (every unknown
/// key and every value of the wrong type, with line and column), then the file-level rules,
/// then each (sweep point, variant) scenario's shape and rules. A problem that the base
/// scenario has is reported once, without a variant's name; a variant is blamed only for what
/// its patch adds, a sweep value only for what it brings.
pub fn load_str(
    text: &str,
    file: &str,
    options: &LoadOptions,
) -> Result<Experiment, ScenarioError> {
    // A UTF-8 byte-order mark is not JSON, but some editors start every file with one.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (mut doc, twice) = read(text).map_err(|e| ScenarioError::Syntax {
        file: file.to_string(),
        line: e.line(),
        column: e.column(),
        message: strip_position(&e.to_string()),
    })?;
    let mut found = Found::default();
    for path in twice {
        found.add(
            Problem::new(show(&path), written_twice(&path)),
            "",
            Some((path, true)),
        );
    }
    let invalid = |found: Found| ScenarioError::Invalid {
        file: file.to_string(),
        problems: found.finish(text),
    };
    let written = check_written(&doc, &mut found);
    if !doc.is_object() {
        return Err(invalid(found));
    }

    // Config files (gRPC service configs, Envoy configs) become ordinary settings where the file writes them, before any
    // rule is checked: in the scenario here, in each variant's patch in `read_variants`.
    let mut problems = Vec::new();
    let dir = Path::new(file).parent().unwrap_or(Path::new(""));
    let mut configs = ConfigFiles::default();
    if let Value::Object(map) = &mut doc {
        for (key, value) in map.iter_mut() {
            if key != "variants" && key != "sweep" {
                config_file::expand(value, key, dir, &mut configs, &mut problems);
            }
        }
    }

    // File-level settings, each read where its shape is right (else its problem is listed).
    let head = FileSettings::read(&mut doc, options, &mut problems);
    let mut sweep = read_sweep(&doc, options, &mut problems);
    let mut expand = sweep
        .as_mut()
        .is_none_or(|s| sweep_is_usable(s, &doc, &mut problems));
    expand &= check_set(options, sweep.as_ref(), &doc, &mut problems);
    let variants = read_variants(&doc, sweep.as_ref(), options, &mut problems);
    let variants = expand_variants(variants, dir, &mut configs, &mut problems);

    // The base document without the file-level keys, as variants and sweeps patch it.
    if let Value::Object(map) = &mut doc {
        for key in ["variants", "sweep", "$schema"] {
            map.remove(key);
        }
    }
    if expand {
        expand = check_expansion(sweep.as_ref(), &doc, &variants, &mut problems);
    }
    for p in problems {
        // A command-line sweep or `--set` is not in the file: its problems have no line.
        let from_command_line =
            (options.sweep.is_some() && p.path.starts_with("sweep")) || p.path.starts_with("--set");
        let place = (!from_command_line).then(|| (parse(&p.path), false));
        found.add(p, "", place);
    }
    if !expand {
        return Err(invalid(found));
    }

    let values = sweep.as_ref().map_or(vec![(None, None)], sweep_points);
    let mut points = Vec::with_capacity(values.len());
    for (k, (value, second_value)) in values.iter().enumerate() {
        let settings = point_settings(k, value, second_value, sweep.as_ref(), options);
        let Some(base) = base_at(&doc, &settings, options, &mut found) else {
            continue;
        };
        let context = point_context(&settings);
        let point = PointCheck {
            base: &base,
            settings: &settings,
            context: &context,
            written: &written,
            at_point: None,
        };
        points.push(Point {
            value: value.clone(),
            second_value: second_value.clone(),
            variants: point.variants(&variants, &mut found),
        });
    }
    if !found.is_empty() {
        return Err(invalid(found));
    }
    Ok(Experiment {
        name: head.name,
        description: head.description,
        seed: head.seed,
        replications: head.replications as u32,
        sweep,
        points,
    })
}

/// What is wrong with the key at `path`, which its object writes more than once.
fn written_twice(path: &[Step]) -> &'static str {
    let among_calls = path.len() >= 2 && path[path.len() - 2] == Step::Key("calls".into());
    if among_calls {
        "is written twice in one object: JSON keeps the last and drops the first, so a call would be lost; give each call its own name, and name the service it calls in \"to\" (e.g. {\"charge\": {\"to\": \"payments\"}, \"refund\": {\"to\": \"payments\"}})"
    } else {
        "is written twice in one object: JSON keeps the last and drops the first, so a setting would be lost; write the key once"
    }
}

/// The shape problems of the file as written, each listed in `found` (and, where the shape
/// walk passed, what serde still refuses), as (path, message) pairs.
fn check_written(doc: &Value, found: &mut Found) -> HashSet<(String, String)> {
    let written = shape::check(doc);
    for p in &written {
        let place = (p.at.clone(), p.at_key);
        found.add(Problem::new(show(&p.path), &p.message), "", Some(place));
    }
    if written.is_empty()
        && let Err(e) = serde_path_to_error::deserialize::<_, RawScenario>(doc)
    {
        found.add(unreadable(&e), "", None);
    }
    written
        .into_iter()
        .map(|p| (show(&p.path), p.message))
        .collect()
}

/// The settings that belong to the whole file, with the command line's overrides.
struct FileSettings {
    name: String,
    description: Option<String>,
    seed: u64,
    replications: u64,
}

impl FileSettings {
    /// Reads them from `doc` (writing the command line's seed and replications into it, as
    /// the variants see them) and checks their rules.
    fn read(doc: &mut Value, options: &LoadOptions, problems: &mut Vec<Problem>) -> Self {
        if let Some(seed) = options.seed {
            doc["seed"] = seed.into();
        }
        if let Some(r) = options.replications {
            doc["replications"] = r.into();
        }
        let name = doc.get("name").and_then(Value::as_str);
        let replications = doc.get("replications").and_then(Value::as_u64).unwrap_or(1);
        file_rules(name, replications, problems);
        FileSettings {
            name: name.unwrap_or_default().to_string(),
            description: doc
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_string),
            seed: doc.get("seed").and_then(Value::as_u64).unwrap_or(1),
            replications,
        }
    }
}

/// The sweep: the command line's, else the file's, with each label checked.
fn read_sweep(doc: &Value, options: &LoadOptions, problems: &mut Vec<Problem>) -> Option<Sweep> {
    if let Some(s) = &options.sweep {
        return Some(s.clone());
    }
    let s = doc
        .get("sweep")
        .and_then(|s| RawSweep::deserialize(s).ok())?;
    let mut sweep = Sweep::new(s.path.clone(), s.values.clone());
    if let Some(label) = &s.label {
        check_label("sweep.label", label, problems);
        sweep = sweep.with_label(label.trim());
    }
    if let Some(focus) = &s.focus {
        // The value as `values` writes it: 1800.0 is the point of 1800.
        let same =
            |v: &&Value| *v == focus || v.as_f64().is_some_and(|x| focus.as_f64() == Some(x));
        sweep.base_value = s.values.iter().find(same).cloned();
        if sweep.base_value.is_none() {
            problems.push(Problem::new(
                "sweep.focus",
                format!("{focus} is not one of sweep.values; give the value whose point the figures of one sweep value should show, or leave it out"),
            ));
        }
    }
    Some(match &s.second {
        Some(second) => {
            let mut axis = Axis::new(second.path.clone(), second.values.clone());
            if let Some(label) = &second.label {
                check_label("sweep.second.label", label, problems);
                axis = axis.with_label(label.trim());
            }
            sweep.with_second(axis)
        }
        None => sweep,
    })
}

/// Records the values the scenario itself has at the swept paths (the first axis' unless
/// `sweep.focus` chose one), and checks the sweep's rules: whether its points can be expanded.
fn sweep_is_usable(s: &mut Sweep, doc: &Value, problems: &mut Vec<Problem>) -> bool {
    if s.base_value.is_none() {
        s.base_value = get_path(doc, &s.path).cloned();
    }
    if let Some(second) = &mut s.second {
        second.base_value = get_path(doc, &second.path).cloned();
    }
    let mut usable = check_sweep(s, problems);
    usable &= check_service_in_path("sweep.path", &s.path, doc, problems);
    if let Some(second) = &s.second {
        usable &= check_service_in_path("sweep.second.path", &second.path, doc, problems);
    }
    usable
}

/// The variants to build: (index in the file, name, patch). One whose entry or patch has the
/// wrong shape is left out; its problem is listed.
fn read_variants(
    doc: &Value,
    sweep: Option<&Sweep>,
    options: &LoadOptions,
    problems: &mut Vec<Problem>,
) -> Vec<(usize, String, Value)> {
    let list = match doc.get("variants") {
        None | Some(Value::Null) => {
            return vec![(0, "baseline".into(), Value::Object(Default::default()))];
        }
        Some(Value::Array(list)) => list,
        Some(_) => return Vec::new(),
    };
    if list.is_empty() {
        problems.push(Problem::new(
            "variants",
            "must list at least one variant, or be left out for a single \"baseline\"",
        ));
    }
    let mut names = HashMap::new();
    let mut usable = Vec::new();
    for (i, entry) in list.iter().enumerate() {
        let Ok(mut v) = RawVariant::deserialize(entry) else {
            continue;
        };
        check_variant(i, &v.name, &v.patch, &mut names, problems);
        if !calls_forms_meet(i, &v.patch, doc, problems)
            || !groups_by_index(i, &mut v.patch, doc, problems)
        {
            continue;
        }
        if let Some(s) = sweep {
            let from_command_line = options.sweep.is_some();
            check_sweep_against_patch(s, from_command_line, i, &v, problems);
        }
        check_set_against_patch(&options.set, i, &v, problems);
        match v.patch {
            // A variant without a patch (or with `null`) is the base scenario itself.
            Value::Null => usable.push((i, v.name, Value::Object(Default::default()))),
            patch @ Value::Object(_) => usable.push((i, v.name, patch)),
            _ => {}
        }
    }
    usable
}

/// Each variant's patch with the config files it names read into settings.
fn expand_variants(
    variants: Vec<(usize, String, Value)>,
    dir: &Path,
    configs: &mut ConfigFiles,
    problems: &mut Vec<Problem>,
) -> Vec<(usize, String, Value)> {
    variants
        .into_iter()
        .map(|(i, name, mut patch)| {
            config_file::expand(
                &mut patch,
                &format!("variants[{i}].patch"),
                dir,
                configs,
                problems,
            );
            (i, name, patch)
        })
        .collect()
}

/// The swept settings at sweep point `k` (its first and second axis values), each with the
/// key that names it and where it is written.
fn point_settings<'a>(
    k: usize,
    value: &'a Option<Value>,
    second_value: &'a Option<Value>,
    sweep: Option<&'a Sweep>,
    options: &'a LoadOptions,
) -> Vec<Setting<'a>> {
    // `--set` first: a sweep value, put in place after it, is never at a set path (see
    // `check_set`).
    let mut settings: Vec<Setting> = options
        .set
        .iter()
        .map(|(path, value)| Setting {
            key: "--set",
            path,
            value,
            place: None,
            flag: "--set",
        })
        .collect();
    if let (Some(v), Some(s)) = (value, sweep) {
        let i = k / s.second.as_ref().map_or(1, |a| a.values.len().max(1));
        settings.push(Setting {
            key: "sweep.path",
            path: &s.path,
            value: v,
            place: options
                .sweep
                .is_none()
                .then(|| (parse(&format!("sweep.values[{i}]")), false)),
            flag: "--sweep",
        });
    }
    if let (Some(v), Some(second)) = (second_value, sweep.and_then(|s| s.second.as_ref())) {
        let j = k % second.values.len().max(1);
        settings.push(Setting {
            key: "sweep.second.path",
            path: &second.path,
            value: v,
            place: options
                .sweep
                .is_none()
                .then(|| (parse(&format!("sweep.second.values[{j}]")), false)),
            flag: "--sweep",
        });
    }
    settings
}

/// The base document with the swept settings put in place, or `None` (with the problem
/// listed) where one cannot be.
fn base_at(
    doc: &Value,
    settings: &[Setting],
    options: &LoadOptions,
    found: &mut Found,
) -> Option<Value> {
    let mut base = doc.clone();
    let mut placed = true;
    for s in settings {
        if let Err(message) = set_path(&mut base, s.path, s.value.clone()) {
            let place = options.sweep.is_none().then(|| (parse(s.key), false));
            found.add(Problem::new(s.key, message), "", place);
            placed = false;
        }
    }
    placed.then_some(base)
}

/// How a problem names a sweep point: "with path = value, ...", or nothing without a sweep.
fn point_context(settings: &[Setting]) -> String {
    if settings.is_empty() {
        return String::new();
    }
    let pairs: Vec<String> = settings
        .iter()
        .map(|s| {
            let flag = if s.flag == "--set" { "--set " } else { "" };
            format!("{flag}{} = {}", cut_path(s.path), short(s.value))
        })
        .collect();
    format!("with {}", pairs.join(", "))
}

/// One sweep point's variants being checked against its base document.
struct PointCheck<'a> {
    /// The base document at this point.
    base: &'a Value,
    /// The swept settings at this point.
    settings: &'a [Setting<'a>],
    /// How a problem names this point (empty without a sweep).
    context: &'a str,
    /// The shape problems of the file as written.
    written: &'a HashSet<(String, String)>,
    /// The base's own problems at this point, checked once a variant has one.
    at_point: Option<BaseProblems>,
}

impl<'a> PointCheck<'a> {
    /// Every variant that checks out at this point; the problems of the others are listed.
    fn variants(mut self, variants: &[(usize, String, Value)], found: &mut Found) -> Vec<Variant> {
        let mut point_variants = Vec::with_capacity(variants.len());
        for (i, vname, patch) in variants {
            if let Some((scenario, resolved)) = self.variant(*i, vname, patch, found) {
                point_variants.push(Variant {
                    name: vname.clone(),
                    scenario,
                    resolved,
                });
            }
        }
        point_variants
    }

    /// The base's problems at this point, found (and those of the sweep values listed) the
    /// first time a variant needs them.
    fn base_problems(&mut self, found: &mut Found) -> &BaseProblems {
        let (base, written, settings, context) =
            (self.base, self.written, self.settings, self.context);
        self.at_point
            .get_or_insert_with(|| BaseProblems::find(base, written, settings, context, found))
    }

    /// Variant `i` (`vname`, `patch`) merged over the base and checked; `None` with its
    /// problems listed.
    fn variant(
        &mut self,
        i: usize,
        vname: &str,
        patch: &Value,
        found: &mut Found,
    ) -> Option<(super::Scenario, RawScenario)> {
        let merged = if patch.as_object().is_some_and(|p| p.is_empty()) {
            std::borrow::Cow::Borrowed(self.base)
        } else {
            let mut merged = self.base.clone();
            merge_variant(&mut merged, patch);
            std::borrow::Cow::Owned(merged)
        };
        let blame = Blame {
            i,
            variant: format!("in variants[{i}] {}", quote(vname)),
            settings: self.settings,
            context: self.context,
            patch,
        };
        let merged_shape = shape::check(&merged);
        if !merged_shape.is_empty() {
            let rules = rules_despite_shape(&merged, &merged_shape);
            let written = self.written;
            let at_point = self.base_problems(found);
            let shared: Vec<bool> = rules.iter().map(|p| at_point.rules.contains(p)).collect();
            let mut new = Vec::new();
            for p in merged_shape {
                let key = (show(&p.path), p.message);
                if !written.contains(&key) && !at_point.shape.contains(&key) {
                    new.push((key, p.at, p.at_key));
                }
            }
            for (key, at, at_key) in new {
                let place = blame.in_patch(&at, at_key);
                let who = blame.who(&key.0);
                found.add(Problem::new(key.0, key.1), &who, place);
            }
            for (p, shared) in rules.into_iter().zip(shared) {
                blame.report(p, shared, found);
            }
            return None;
        }
        match check(&merged) {
            Ok(checked) => Some(checked),
            Err(problems) => {
                let shared: Vec<bool> = {
                    let at_point = self.base_problems(found);
                    problems
                        .iter()
                        .map(|p| at_point.rules.contains(p))
                        .collect()
                };
                for (p, shared) in problems.into_iter().zip(shared) {
                    blame.report(p, shared, found);
                }
                None
            }
        }
    }
}

/// Whom a variant's problem is blamed on, and where it is written.
struct Blame<'a> {
    /// The variant's index in the file.
    i: usize,
    /// "in variants[i] "name"".
    variant: String,
    /// The swept settings at this point.
    settings: &'a [Setting<'a>],
    /// How a problem names this point.
    context: &'a str,
    /// The variant's patch.
    patch: &'a Value,
}

impl Blame<'_> {
    /// A variant's problem names the sweep values only where a swept setting holds it: the
    /// same mistake in a patch is one problem, not one per sweep point.
    fn who(&self, path: &str) -> String {
        if self.settings.iter().any(|s| covers(s.path, path)) {
            format!("{} {}", self.variant, self.context)
        } else {
            self.variant.clone()
        }
    }

    /// Where the patch writes `at`, if it does.
    fn in_patch(&self, at: &[Step], key: bool) -> Option<Place> {
        get_steps(self.patch, at).map(|_| {
            let mut place = vec![
                Step::Key("variants".into()),
                Step::Index(self.i),
                Step::Key("patch".into()),
            ];
            place.extend_from_slice(at);
            (place, key)
        })
    }

    /// Lists a rule problem of the merged scenario: one the base shares is the base's (or
    /// the sweep value's that holds it), any other the variant's.
    fn report(&self, p: Problem, shared: bool, found: &mut Found) {
        if !shared {
            let place = self.in_patch(&parse(&p.path), false);
            let who = self.who(&p.path);
            found.add(p, &who, place);
            return;
        }
        match self.settings.iter().find(|s| covers(s.path, &p.path)) {
            Some(s) => {
                let place = s.place.clone();
                found.add(p, self.context, place);
            }
            None => {
                let place = Some((parse(&p.path), false));
                found.add(p, "", place);
            }
        }
    }
}

/// The problems of the base scenario at one sweep point. A problem a variant shares with
/// the base is the base's: it is reported once, without the variant's name.
struct BaseProblems {
    /// Shape problems, as (path, message).
    shape: HashSet<(String, String)>,
    /// Rule problems (beside what the shape problems are about), as a set: a variant's
    /// problems are looked up in it one by one, and a file may have many.
    rules: HashSet<Problem>,
}

impl BaseProblems {
    /// Checks `base` at a sweep point. Its shape problems that the file as written does not
    /// have come from the sweep values: they are reported here, blamed on the value whose
    /// setting holds them. Its rule problems are reported through the variants that keep
    /// them (a variant may fix one).
    fn find(
        base: &Value,
        written: &HashSet<(String, String)>,
        settings: &[Setting],
        context: &str,
        found: &mut Found,
    ) -> BaseProblems {
        let problems = shape::check(base);
        for p in &problems {
            let path = show(&p.path);
            if written.contains(&(path.clone(), p.message.clone())) {
                continue;
            }
            // An unknown key on a swept path is the path's mistake whatever the value: one
            // problem, at the path, not one per value.
            let (context, place) = match settings
                .iter()
                .find(|s| p.at_key && leads_to(s.path, &path))
            {
                Some(s) if s.place.is_some() => {
                    (format!("in {}", s.key), Some((parse(s.key), false)))
                }
                Some(s) => (format!("in {}", s.flag), None),
                None => {
                    let place = settings
                        .iter()
                        .find(|s| covers(s.path, &path))
                        .and_then(|s| s.place.clone());
                    (context.to_string(), place)
                }
            };
            found.add(Problem::new(path, &p.message), &context, place);
        }
        let rules = if problems.is_empty() {
            check(base).err().unwrap_or_default().into_iter().collect()
        } else {
            rules_despite_shape(base, &problems).into_iter().collect()
        };
        BaseProblems {
            shape: problems
                .into_iter()
                .map(|p| (show(&p.path), p.message))
                .collect(),
            rules,
        }
    }
}

/// Problems as they are found: each reported once, and of many of one kind only the first
/// [`SHOWN_PER_KIND`], the last of them counting the rest.
#[derive(Default)]
struct Found {
    /// The problems listed, each with where it is written in the file, if known.
    listed: Vec<(Problem, Option<Place>)>,
    /// Fingerprints of every problem reported, listed or counted.
    seen: HashSet<u64>,
    /// Per kind: how many are listed, and the index of the last listed.
    kinds: HashMap<u64, (usize, usize)>,
}

impl Found {
    /// Adds `problem`, with `context` (which variant, which sweep value) in parentheses after
    /// its message, unless the same was reported before.
    fn add(&mut self, mut problem: Problem, context: &str, place: Option<Place>) {
        let kind = fingerprint(&[&kind_of(&problem.path), &kind_of(&problem.message)]);
        if !context.is_empty() {
            problem.message = format!("{} ({context})", problem.message);
        }
        if !self
            .seen
            .insert(fingerprint(&[&problem.path, &problem.message]))
        {
            return;
        }
        let (shown, last) = self.kinds.entry(kind).or_insert((0, 0));
        if *shown < SHOWN_PER_KIND {
            *shown += 1;
            *last = self.listed.len();
            self.listed.push((problem, place));
        } else if let Some((p, _)) = self.listed.get_mut(*last) {
            p.more += 1;
        }
    }

    fn is_empty(&self) -> bool {
        self.listed.is_empty()
    }

    /// The problems listed, each with the line and column in `text` of what it is about,
    /// where that is written there.
    fn finish(self, text: &str) -> Vec<Problem> {
        let places: Vec<Place> = self.listed.iter().filter_map(|(_, p)| p.clone()).collect();
        let mut positions = locate(text, &places).into_iter();
        self.listed
            .into_iter()
            .map(|(mut p, place)| {
                if place.is_some()
                    && let Some((line, column)) = positions.next().flatten()
                {
                    p.message = format!("{} (line {line}, column {column})", p.message);
                }
                p
            })
            .collect()
    }
}

/// A 64-bit fingerprint of some strings (the same in every run).
fn fingerprint(parts: &[&str]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    parts.hash(&mut h);
    h.finish()
}

/// A path or message with its particulars blurred, so that problems of one kind compare
/// equal: every run of digits reads `#` and every quoted text `""`.
fn kind_of(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut quoted = false;
    for c in text.chars() {
        if c == '"' {
            quoted = !quoted;
            out.push(c);
        } else if quoted {
        } else if c.is_ascii_digit() {
            if !out.ends_with('#') {
                out.push('#');
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Dotted sweep `path` as messages write paths, list indices in brackets.
fn shown_dotted(path: &str) -> String {
    show(
        &path
            .split('.')
            .map(|k| match k.parse() {
                Ok(i) => Step::Index(i),
                Err(_) => Step::Key(k.to_string()),
            })
            .collect::<Vec<_>>(),
    )
}

/// Whether `inner` is `outer` or lies inside it (both paths as messages write them).
fn within(inner: &str, outer: &str) -> bool {
    inner
        .strip_prefix(outer)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
}

/// Whether the setting at dotted sweep `path` holds the problem at `problem` (a path as
/// messages write it, list indices in brackets).
fn covers(path: &str, problem: &str) -> bool {
    within(problem, &shown_dotted(path))
}

/// Whether `problem` lies on the way to dotted sweep `path`, or is it.
fn leads_to(path: &str, problem: &str) -> bool {
    within(&shown_dotted(path), problem)
}

/// The value at `path` in `doc`, if there is one.
fn get_steps<'a>(doc: &'a Value, path: &[Step]) -> Option<&'a Value> {
    path.iter().try_fold(doc, |v, step| match step {
        Step::Key(k) => v.get(k.as_str()),
        Step::Index(i) => v.get(*i),
    })
}

/// Checks that the file expands to a bounded number of scenarios and of bytes, so that loading
/// it takes bounded time and memory; `doc` is the base without the file-level keys. Reports a
/// problem and says `false` when it does not.
fn check_expansion(
    sweep: Option<&Sweep>,
    doc: &Value,
    variants: &[(usize, String, Value)],
    problems: &mut Vec<Problem>,
) -> bool {
    let (first, second) = sweep.map_or((1, 1), |s| {
        (
            s.values.len(),
            s.second.as_ref().map_or(1, |a| a.values.len()),
        )
    });
    let points = first.saturating_mul(second);
    let scenarios = points.saturating_mul(variants.len());
    let at = if sweep.is_some() { "sweep" } else { "variants" };
    if scenarios > MAX_SCENARIOS {
        problems.push(Problem::new(
            at,
            format!(
                "the file expands to {scenarios} scenarios ({points} sweep points times {} variants), more than the 100000 one file may run; sweep fewer values or split the file",
                variants.len()
            ),
        ));
        return false;
    }
    let largest =
        |values: &mut dyn Iterator<Item = &Value>| values.map(json_len).max().unwrap_or(0);
    let one = json_len(doc)
        + largest(&mut variants.iter().map(|(_, _, p)| p))
        + sweep.map_or(0, |s| {
            largest(&mut s.values.iter())
                + s.second
                    .as_ref()
                    .map_or(0, |a| largest(&mut a.values.iter()))
        });
    let bytes = one.saturating_mul(scenarios);
    if bytes > MAX_EXPANDED_BYTES {
        problems.push(Problem::new(
            at,
            format!(
                "the file expands to {scenarios} scenarios of up to {one} bytes of JSON each, {bytes} bytes in all, more than the 100000000 one file may check; sweep fewer values or split the file"
            ),
        ));
        return false;
    }
    true
}

/// The length of `v` written as compact JSON, counted without writing it down.
fn json_len(v: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, v);
    count.0
}

/// Deserializes and validates one merged document: the scenario, and the document as read
/// with every default filled in.
fn check(doc: &Value) -> Result<(super::Scenario, RawScenario), Vec<Problem>> {
    match serde_path_to_error::deserialize::<_, RawScenario>(&*preset::expand(doc)) {
        Err(e) => Err(vec![unreadable(&e)]),
        Ok(mut raw) => validate(&mut raw).map(|scenario| (scenario, raw)),
    }
}

/// The rule problems of `doc` beside its shape problems `shape`, so that one pass lists both
/// kinds: each value a shape problem is about (an unknown key, a value of the wrong type) is
/// taken out and the rest checked. A rule problem at, inside or around a value taken out is
/// left out, being a second message for one mistake; so is everything when the document
/// cannot be read without it (a required key) or a problem is about a list item.
fn rules_despite_shape(doc: &Value, shape: &[shape::ShapeProblem]) -> Vec<Problem> {
    let mut pruned = doc.clone();
    let mut taken = Vec::new();
    for p in shape {
        let Some((Step::Key(key), parent)) = p.path.split_last() else {
            return Vec::new();
        };
        let pointer: String = parent
            .iter()
            .map(|step| match step {
                Step::Key(k) => format!("/{}", k.replace('~', "~0").replace('/', "~1")),
                Step::Index(i) => format!("/{i}"),
            })
            .collect();
        if let Some(Value::Object(map)) = pruned.pointer_mut(&pointer) {
            map.shift_remove(key);
        }
        taken.push(show(&p.path));
    }
    let Ok(mut raw) = serde_json::from_value::<RawScenario>(preset::expand(&pruned).into_owned())
    else {
        return Vec::new();
    };
    let overlaps = |path: &str, t: &str| {
        let inside = |a: &str, b: &str| {
            a == b || b.is_empty() || a.strip_prefix(b).is_some_and(|r| r.starts_with(['.', '[']))
        };
        inside(path, t) || inside(t, path)
    };
    validate(&mut raw)
        .err()
        .unwrap_or_default()
        .into_iter()
        .filter(|p| !taken.iter().any(|t| overlaps(&p.path, t)))
        .collect()
}

/// A document that the shape walk passed and serde still refused. The two agree (a test keeps
/// them so), so this is never reached; if it were, it still names the place.
fn unreadable(e: &serde_path_to_error::Error<serde_json::Error>) -> Problem {
    let path = e.path().to_string();
    let path = if path == "." { String::new() } else { path };
    Problem::new(
        path,
        "is not what the format allows here; `retrystorm schema` prints the format",
    )
}

/// Applies JSON merge `patch` (RFC 7396) to `doc`, keeping the order of keys: a key removed
/// with `null` leaves the others where they were, and a new key goes last. The order of
/// `services` is the order of the scenario's services, so a variant keeps the file's order,
/// with the services its patch adds at the end.
pub(in crate::scenario) fn merge(doc: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *doc = patch.clone();
        return;
    };
    if !doc.is_object() {
        *doc = Value::Object(Default::default());
    }
    if let Value::Object(map) = doc {
        for (key, value) in patch {
            if value.is_null() {
                map.shift_remove(key);
            } else {
                merge(map.entry(key.as_str()).or_insert(Value::Null), value);
            }
        }
    }
}

/// Applies variant `patch` to `doc` as [`merge`] does, but for `clients` written as a list of
/// groups, which a patch reaches group by group: `groups_by_index` has turned its groups'
/// names into their indices, and each group it names merges into that item of the list
/// (`null` removes the group).
fn merge_variant(doc: &mut Value, patch: &Value) {
    let by_index = match (doc.get("clients"), patch.get("clients")) {
        (Some(Value::Array(_)), Some(Value::Object(groups))) => Some(groups.clone()),
        _ => None,
    };
    let Some(groups) = by_index else {
        merge(doc, patch);
        return;
    };
    let mut rest = patch.clone();
    if let Some(map) = rest.as_object_mut() {
        map.shift_remove("clients");
    }
    merge(doc, &rest);
    if let Some(Value::Array(list)) = doc.get_mut("clients") {
        let mut removed = Vec::new();
        for (key, group) in &groups {
            let Some(i) = key.parse::<usize>().ok().filter(|&i| i < list.len()) else {
                continue;
            };
            if group.is_null() {
                removed.push(i);
            } else {
                merge(&mut list[i], group);
            }
        }
        removed.sort_unstable();
        for i in removed.into_iter().rev() {
            list.remove(i);
        }
    }
}

/// Whether variant `i`'s patch can reach the groups of clients of the base scenario `doc`.
/// Where the base lists its groups and the patch writes `clients` as an object, each key
/// must name a group: the patch merges into that group (the list keeps its other groups), and
/// its key becomes the group's index (`clients.1.count`), the path that a sweep and
/// `--set` write, so that their conflicts with the patch are found. A key that names no
/// group is a problem.
fn groups_by_index(i: usize, patch: &mut Value, doc: &Value, problems: &mut Vec<Problem>) -> bool {
    let (Some(Value::Array(listed)), Some(Value::Object(named))) =
        (doc.get("clients"), patch.get("clients"))
    else {
        return true;
    };
    let names: Vec<&str> = listed
        .iter()
        .map(|g| g.get("name").and_then(Value::as_str).unwrap_or_default())
        .collect();
    let mut indexed = serde_json::Map::new();
    let mut meet = true;
    for (key, group) in named {
        match names.iter().position(|n| n == key) {
            Some(k) => {
                indexed.insert(k.to_string(), group.clone());
            }
            None => {
                meet = false;
                problems.push(Problem::new(
                    format!("variants[{i}].patch.clients.{}", cut(key)),
                    format!(
                        "names no group of clients (got {}; the groups are {}): a patch reaches a group of the list by its name; name one of them, or give the whole list of groups in the patch to add one",
                        quote(key),
                        names.iter().map(|n| quote(n)).collect::<Vec<_>>().join(", ")
                    ),
                ));
            }
        }
    }
    if let Some(p) = patch.as_object_mut() {
        p.insert("clients".into(), Value::Object(indexed));
    }
    meet
}

/// Puts `value` at dotted `path` in `doc`, creating objects on the way. A key that is a
/// number indexes an array (`server.faults.0.to`).
pub fn set_path(doc: &mut Value, path: &str, value: Value) -> Result<(), String> {
    let keys: Vec<&str> = path.split('.').collect();
    let Some((last, on_the_way)) = keys
        .split_last()
        .filter(|_| keys.iter().all(|k| !k.is_empty()))
    else {
        return Err(format!(
            "{} is not a dotted path like \"clients.count\"",
            quote(path)
        ));
    };
    // The path up to key `depth`, for messages.
    let so_far = |depth: usize| quote(&keys[..=depth].join("."));
    let mut here = doc;
    for (depth, key) in on_the_way.iter().enumerate() {
        here = match here {
            Value::Object(map) => map
                .entry(key.to_string())
                .or_insert_with(|| Value::Object(Default::default())),
            Value::Array(items) => list_item(items, key, || so_far(depth))?,
            other => return Err(goes_through(path, other)),
        };
    }
    match here {
        Value::Object(map) => {
            map.insert(last.to_string(), value);
        }
        Value::Array(items) => *list_item(items, last, || so_far(keys.len() - 1))? = value,
        other => return Err(goes_through(path, other)),
    }
    Ok(())
}

/// The item of `items` that `key` indexes; `so_far` names the path up to it in messages.
fn list_item<'a>(
    items: &'a mut [Value],
    key: &str,
    so_far: impl Fn() -> String,
) -> Result<&'a mut Value, String> {
    let i: usize = key.parse().map_err(|_| {
        format!(
            "{}: {} must be an index into the list",
            so_far(),
            quote(key)
        )
    })?;
    let len = items.len();
    items
        .get_mut(i)
        .ok_or_else(|| format!("{}: index {i} is past the end of a list of {len}", so_far()))
}

fn goes_through(path: &str, other: &Value) -> String {
    format!(
        "{} goes through {}, which is neither an object nor a list",
        quote(path),
        short(other)
    )
}

/// Characters of a sweep path that a message shows before it cuts it off: enough for a path
/// into a call's policy (`services.frontend.calls.0.policy.retry.max_attempts`), so that two
/// such paths read apart.
const SHOWN_PATH_CHARS: usize = 120;

/// A sweep path for messages, cut off (with "...") after [`SHOWN_PATH_CHARS`] characters.
fn cut_path(path: &str) -> String {
    match path.char_indices().nth(SHOWN_PATH_CHARS) {
        Some((end, _)) => format!("{}...", &path[..end]),
        None => path.to_string(),
    }
}

/// The value at dotted `path` in `doc`, if there is one.
fn get_path<'a>(doc: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(doc, |v, key| match v {
        Value::Object(map) => map.get(key),
        Value::Array(items) => key.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => None,
    })
}

/// The (first, second) values of every point of `s`, first axis outer.
fn sweep_points(s: &Sweep) -> Vec<(Option<Value>, Option<Value>)> {
    s.values
        .iter()
        .flat_map(|x| match &s.second {
            None => vec![(Some(x.clone()), None)],
            Some(second) => second
                .values
                .iter()
                .map(|y| (Some(x.clone()), Some(y.clone())))
                .collect(),
        })
        .collect()
}

/// Checks a sweep; says whether it can be expanded into its points.
fn check_sweep(s: &Sweep, problems: &mut Vec<Problem>) -> bool {
    let before = problems.len();
    check_axis("sweep", &s.path, &s.values, problems);
    if let Some(second) = &s.second {
        check_axis("sweep.second", &second.path, &second.values, problems);
        // Keys on the way, so that "clients" overlaps "clients.count" but not "clients_x".
        let (a, b) = (format!("{}.", s.path), format!("{}.", second.path));
        if a == b {
            problems.push(Problem::new(
                "sweep.second.path",
                format!(
                    "{} is also sweep.path; the two axes of a sweep must be different settings",
                    quote(&second.path)
                ),
            ));
        } else if a.starts_with(&b) || b.starts_with(&a) {
            problems.push(Problem::new(
                "sweep.second.path",
                format!(
                    "{} overlaps sweep.path {} (one lies inside the other); the two axes of a sweep must be separate settings",
                    quote(&second.path),
                    quote(&s.path)
                ),
            ));
        }
    }
    problems.len() == before
}

/// A sweep of a setting inside a service (`services.<name>.<key>...`) names a service that
/// the file has: otherwise the sweep would add a service holding only that setting, which is
/// never what was meant (sweeping a whole `services.<name>` may add one). Says whether it
/// does.
fn check_service_in_path(at: &str, path: &str, doc: &Value, problems: &mut Vec<Problem>) -> bool {
    let mut keys = path.split('.');
    let (Some("services"), Some(name), Some(_)) = (keys.next(), keys.next(), keys.next()) else {
        return true;
    };
    let Some(services) = doc.get("services").and_then(Value::as_object) else {
        return true;
    };
    if services.contains_key(name) {
        return true;
    }
    let names: Vec<&str> = services.keys().map(String::as_str).collect();
    problems.push(Problem::new(
        at,
        format!(
            "{} names no service of the file (got {}){}",
            quote(path),
            quote(name),
            name_hint(name, &names)
        ),
    ));
    false
}

fn check_label(at: &str, label: &str, problems: &mut Vec<Problem>) {
    if label.trim().is_empty() {
        problems.push(Problem::new(
            at,
            "must not be empty; leave it out for a name made from the path",
        ));
    }
    check_printable(at, label, problems);
}

/// A variant whose patch sets a swept setting (or a key on its way, or one inside it) would
/// overwrite every sweep value: the sweep would silently do nothing for it. Reported once per
/// axis and variant, naming the patch key and the fix.
fn check_sweep_against_patch(
    s: &Sweep,
    from_command_line: bool,
    i: usize,
    variant: &super::schema::RawVariant,
    problems: &mut Vec<Problem>,
) {
    let mut axes = vec![("sweep.path", s.path.as_str())];
    if let Some(second) = &s.second {
        axes.push(("sweep.second.path", second.path.as_str()));
    }
    for (at, path) in axes {
        let Some(key) = patch_key_over(&variant.patch, path) else {
            continue;
        };
        let sweep = if from_command_line {
            format!("--sweep {}", cut(path))
        } else {
            format!("{at} {}", quote(path))
        };
        let overlap = overlap_words(&key, path);
        let (name, key_shown) = (quote(&variant.name), quote(&key));
        problems.push(Problem::new(
            format!("variants[{i}].patch.{}", cut(&key)),
            format!(
                "variant {name} sets {key_shown}, {overlap} that {sweep} sweeps: its patch is applied after the sweep value and would overwrite it, so the sweep would do nothing for this variant; remove {key_shown} from the variant's patch, or sweep another path"
            ),
        ));
    }
}

/// What a patch's `key` is to the setting at `path`: the setting, an object holding it, or a
/// key inside it.
fn overlap_words(key: &str, path: &str) -> &'static str {
    if key == path {
        "the setting"
    } else if path.starts_with(&format!("{key}.")) {
        "a whole object holding the setting"
    } else {
        "a key inside the setting"
    }
}

/// A variant whose patch sets a path that `--set` sets would quietly undo it for that
/// variant: each such key is a problem.
fn check_set_against_patch(
    set: &[(String, Value)],
    i: usize,
    variant: &super::schema::RawVariant,
    problems: &mut Vec<Problem>,
) {
    for (path, _) in set {
        let Some(key) = patch_key_over(&variant.patch, path) else {
            continue;
        };
        let (name, key_shown, path_shown) = (quote(&variant.name), quote(&key), cut(path));
        problems.push(Problem::new(
            format!("variants[{i}].patch.{}", cut(&key)),
            format!(
                "variant {name} sets {key_shown}, {} that --set {path_shown} sets: its patch is applied after --set and would overwrite it for this variant; remove {key_shown} from the variant's patch, or leave out --set {path_shown}",
                overlap_words(&key, path)
            ),
        ));
    }
}

/// The rules of `--set`: a path of the scenario, not of the whole file; one that no sweep
/// axis also sets; one that names a service the file has. False where a setting cannot be
/// put in place (its problem listed).
fn check_set(
    options: &LoadOptions,
    sweep: Option<&Sweep>,
    doc: &Value,
    problems: &mut Vec<Problem>,
) -> bool {
    let mut usable = true;
    let swept: Vec<&str> = sweep.map_or(Vec::new(), |s| {
        std::iter::once(s.path.as_str())
            .chain(s.second.as_ref().map(|a| a.path.as_str()))
            .collect()
    });
    for (path, _) in &options.set {
        let first = path.split('.').next().unwrap_or_default();
        let problem = if FILE_KEYS.contains(&first) {
            let fix = match first {
                "seed" => "use --seed",
                "replications" => "use --replications",
                "sweep" => "use --sweep",
                _ => "edit the file",
            };
            Some(format!(
                "{} belongs to the whole file, not to a scenario that --set changes; {fix}",
                quote(first)
            ))
        } else if let Some(axis) = swept.iter().find(|a| {
            let nested = |x: &str, y: &str| y.strip_prefix(x).is_some_and(|r| r.starts_with('.'));
            **a == path.as_str() || nested(a, path) || nested(path, a)
        }) {
            Some(format!(
                "--set {} and the sweep of {} change the same setting: the sweep would overwrite it at every point; leave out one of them",
                cut(path),
                cut(axis)
            ))
        } else if options.set.iter().filter(|(p, _)| p == path).count() > 1 {
            Some(format!(
                "--set {} is given more than once; give each setting once",
                cut(path)
            ))
        } else {
            None
        };
        if let Some(message) = problem {
            problems.push(Problem::new("--set", message));
            usable = false;
        }
        usable &= check_service_in_path("--set", path, doc, problems);
    }
    usable
}

/// The first key of merge `patch` that sets dotted `path`, a key on its way (an object, a list
/// or `null` replaces everything under it) or a key inside it, if any.
fn patch_key_over(patch: &Value, path: &str) -> Option<String> {
    let mut here = patch;
    let mut keys = Vec::new();
    for key in path.split('.') {
        let Value::Object(map) = here else {
            // A merge patch replaces what is here as a whole (only at depth > 0: a patch
            // that is not an object is reported by check_variant).
            return (!keys.is_empty()).then(|| keys.join("."));
        };
        here = map.get(key)?;
        keys.push(key);
    }
    // The patch reaches the swept setting: name the first key it sets there.
    let mut key = keys.join(".");
    while let Some((k, v)) = here.as_object().and_then(|map| map.iter().next()) {
        key = format!("{key}.{k}");
        here = v;
    }
    Some(key)
}

/// Checks one axis; `at` names it in messages (`sweep` or `sweep.second`).
fn check_axis(at: &str, path: &str, values: &[Value], problems: &mut Vec<Problem>) {
    if values.is_empty() {
        problems.push(Problem::new(
            format!("{at}.values"),
            "must list at least one value",
        ));
    }
    let first = path.split('.').next().unwrap_or("");
    if FILE_KEYS.contains(&first) {
        problems.push(Problem::new(
            format!("{at}.path"),
            format!("cannot sweep \"{first}\"; it belongs to the whole file"),
        ));
    }
    let keys = path.split('.').count();
    if keys > MAX_PATH_KEYS {
        problems.push(Problem::new(
            format!("{at}.path"),
            format!("has {keys} keys, more than the 32 a path may have; no setting lies that deep"),
        ));
    }
}

/// A name or label that is written into tables, figures and CSV files may not hold control
/// characters (a newline, a tab, ...): they would break the lines it is written on.
fn check_printable(at: &str, text: &str, problems: &mut Vec<Problem>) {
    if text.chars().any(char::is_control) {
        problems.push(Problem::new(
            at,
            format!(
                "must not contain control characters such as a newline or a tab (got {}); it is written into tables, figures and CSV files",
                quote(text)
            ),
        ));
    }
}

/// Checks variant `i`; `earlier` holds the names of the variants before it, with their index.
fn check_variant(
    i: usize,
    name: &str,
    patch: &Value,
    earlier: &mut HashMap<String, usize>,
    problems: &mut Vec<Problem>,
) {
    let path = format!("variants[{i}]");
    if name.trim().is_empty() {
        problems.push(Problem::new(format!("{path}.name"), "must not be empty"));
    }
    check_printable(&format!("{path}.name"), name, problems);
    if let Some(j) = earlier.insert(name.to_string(), i) {
        earlier.insert(name.to_string(), j);
        problems.push(Problem::new(
            format!("{path}.name"),
            format!(
                "{} is also the name of variants[{j}]; names must be unique",
                quote(name)
            ),
        ));
    }
    // A patch that is not an object (or null) is a shape problem of the file as written.
    if let Value::Object(map) = patch {
        for key in FILE_KEYS {
            if map.contains_key(key) {
                problems.push(Problem::new(
                    format!("{path}.patch.{key}"),
                    format!(
                        "a variant cannot change \"{key}\": it belongs to the whole file (variants share the seed so that they meet the same traffic)"
                    ),
                ));
            }
        }
    }
}

/// Whether variant `i`'s patch can merge into the calls of the base scenario `doc`. A patch that
/// writes a service's `calls` as an object (calls by name) merges call by call into calls
/// the base writes by name; into a list it cannot: a merge patch replaces a list whole, so it
/// would keep only the calls the patch names, and partly written at that. Each such place is
/// a problem.
fn calls_forms_meet(i: usize, patch: &Value, doc: &Value, problems: &mut Vec<Problem>) -> bool {
    let Some(services) = patch.get("services").and_then(Value::as_object) else {
        return true;
    };
    let mut meet = true;
    for (name, service) in services {
        let Some(Value::Object(named)) = service.get("calls") else {
            continue;
        };
        let Some(Value::Array(listed)) = doc.pointer(&format!(
            "/services/{}/calls",
            name.replace('~', "~0").replace('/', "~1")
        )) else {
            continue;
        };
        meet = false;
        let example: Vec<String> = listed
            .iter()
            .take(2)
            .filter_map(|c| c.get("to").and_then(Value::as_str))
            .map(|to| format!("{}: {{...}}", quote(to)))
            .collect();
        problems.push(Problem::new(
            format!("variants[{i}].patch.services.{}.calls", cut(name)),
            format!(
                "names calls by key (got {}), but the base scenario writes services.{}.calls as a list of {}, and a merge patch cannot reach into a list: it would replace the list whole with only the calls it names; write the base's calls as an object of calls by name ({{{}}}, a call's \"to\" defaulting to its name), or give the whole list in the patch",
                short(&Value::Object(named.clone())),
                cut(name),
                listed.len(),
                example.join(", ")
            ),
        ));
    }
    meet
}

/// serde_json appends " at line L column C" to its messages; positions are reported apart.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn set_path_creates_objects_and_indexes_lists() {
        let mut doc = json!({"clients": {"count": 1}, "server": {"faults": [{"to": "1s"}]}});
        set_path(&mut doc, "clients.count", json!(30)).unwrap();
        set_path(&mut doc, "server.faults.0.to", json!("5s")).unwrap();
        set_path(&mut doc, "policy.retry.max_attempts", json!(4)).unwrap();
        assert_eq!(doc["clients"]["count"], 30);
        assert_eq!(doc["server"]["faults"][0]["to"], "5s");
        assert_eq!(doc["policy"]["retry"]["max_attempts"], 4);
        assert!(set_path(&mut doc, "clients.count.x", json!(1)).is_err());
        assert!(set_path(&mut doc, "server.faults.3.to", json!(1)).is_err());
    }

    /// A small valid scenario with `sweep` as its sweep.
    fn with_sweep(sweep: &str) -> String {
        format!(
            r#"{{"name": "s", "duration": "1s",
              "clients": {{"count": 2, "workload": {{"open": {{"rate_per_s": 10}}}}}},
              "server": {{"concurrency": 2, "service_time": {{"constant": "1ms"}}}},
              "sweep": {sweep}}}"#
        )
    }

    fn problems(text: &str, options: &LoadOptions) -> Vec<Problem> {
        match load_str(text, "test", options) {
            Err(ScenarioError::Invalid { problems, .. }) => problems,
            other => panic!("expected problems, got {other:?}"),
        }
    }

    #[test]
    fn a_second_axis_crosses_the_first_first_axis_outer() {
        let text = with_sweep(
            r#"{"path": "clients.count", "values": [1, 2, 3],
                "second": {"path": "server.concurrency", "values": [1, 4]}}"#,
        );
        let e = load_str(&text, "test", &LoadOptions::default()).unwrap();
        let pairs: Vec<(Value, Value)> = e
            .points
            .iter()
            .map(|p| (p.value.clone().unwrap(), p.second_value.clone().unwrap()))
            .collect();
        let expected: Vec<(Value, Value)> = [(1, 1), (1, 4), (2, 1), (2, 4), (3, 1), (3, 4)]
            .iter()
            .map(|(x, y)| (json!(x), json!(y)))
            .collect();
        assert_eq!(pairs, expected);
        // Each point's scenario has both values in place.
        let sc = &e.points[3].variants[0].scenario;
        assert_eq!(sc.clients[0].count, 2);
        match &sc.server().kind {
            crate::scenario::ServerKind::Queue(q) => assert_eq!(q.concurrency, Some(4)),
            other => panic!("{other:?}"),
        }
        let sweep = e.sweep.unwrap();
        let second = sweep.second.as_ref().unwrap();
        assert_eq!(second.path, "server.concurrency");
        // The scenario's own values are the focus: clients.count = 2, concurrency = 2 is
        // not swept, so the second axis' focus is its middle value.
        assert_eq!(sweep.base_value, Some(json!(2)));
        assert_eq!(second.base_value, Some(json!(2)));
        assert_eq!(sweep.focus(), sweep.point_index(1, 1));
        assert_eq!(sweep.first_axis_points(), vec![1, 3, 5]);
    }

    #[test]
    fn one_axis_sweeps_are_unchanged() {
        let text = with_sweep(r#"{"path": "clients.count", "values": [1, 2, 3]}"#);
        let e = load_str(&text, "test", &LoadOptions::default()).unwrap();
        assert_eq!(e.points.len(), 3);
        assert!(e.points.iter().all(|p| p.second_value.is_none()));
        let sweep = e.sweep.unwrap();
        assert_eq!(sweep.second, None);
        assert_eq!(sweep.focus(), 1);
        assert_eq!(sweep.first_axis_points(), vec![0, 1, 2]);
    }

    /// tail-at-scale's over-time figures showed 200 req/s, where nothing happens: the file
    /// can name the point they show.
    #[test]
    fn sweep_focus_chooses_the_point_figures_of_one_value_show() {
        let text = with_sweep(r#"{"path": "clients.count", "values": [1, 2, 3], "focus": 3.0}"#);
        let sweep = load_str(&text, "test", &LoadOptions::default())
            .unwrap()
            .sweep
            .unwrap();
        assert_eq!(sweep.focus(), 2, "not the scenario's own 2");
        assert_eq!(sweep.base_value, Some(json!(3)), "as `values` writes it");
        let text = with_sweep(r#"{"path": "clients.count", "values": [1, 2, 3], "focus": 4}"#);
        let found = problems(&text, &LoadOptions::default());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].path, "sweep.focus");
        assert!(
            found[0].message.contains("4 is not one of sweep.values"),
            "{found:?}"
        );
    }

    #[test]
    fn the_second_path_is_checked_like_the_first() {
        let cases = [
            (
                r#"{"path": "clients.count", "values": [1], "second": {"path": "clients.count", "values": [2]}}"#,
                "sweep.second.path",
                "also sweep.path",
            ),
            (
                r#"{"path": "clients", "values": [{"count": 1, "workload": {"open": {"rate_per_s": 1}}}], "second": {"path": "clients.count", "values": [2]}}"#,
                "sweep.second.path",
                "overlaps",
            ),
            (
                r#"{"path": "clients.count", "values": [1], "second": {"path": "seed", "values": [2]}}"#,
                "sweep.second.path",
                "belongs to the whole file",
            ),
            (
                r#"{"path": "clients.count", "values": [1], "second": {"path": "server.concurrency", "values": []}}"#,
                "sweep.second.values",
                "at least one value",
            ),
            (
                r#"{"path": "clients.count", "values": [1], "second": {"path": "clients.count.x", "values": [2]}}"#,
                "sweep.second.path",
                "overlaps",
            ),
            (
                r#"{"path": "clients.count", "values": [1], "second": {"path": "duration.x", "values": [2]}}"#,
                "sweep.second.path",
                "neither an object nor a list",
            ),
            (
                r#"{"path": "clients.count", "values": [1], "second": {"path": "server.concurrency", "values": [0]}}"#,
                "server.concurrency",
                "server.concurrency = 0",
            ),
        ];
        for (sweep, path, needle) in cases {
            let found = problems(&with_sweep(sweep), &LoadOptions::default());
            assert!(
                found
                    .iter()
                    .any(|p| p.path == path && p.message.contains(needle)),
                "{sweep}: expected {path}: ...{needle}..., got {found:?}"
            );
        }
        // Paths that share a prefix of characters but not of keys do not overlap.
        let text = with_sweep(
            r#"{"path": "server.concurrency", "values": [1], "second": {"path": "server.concurrency_x", "values": [2]}}"#,
        );
        let found = problems(&text, &LoadOptions::default());
        assert!(
            found.iter().all(|p| p.path != "sweep.second.path"),
            "{found:?}"
        );
    }

    #[test]
    fn a_command_line_sweep_replaces_both_axes_of_the_file() {
        let text = with_sweep(
            r#"{"path": "clients.count", "values": [1, 2],
                "second": {"path": "server.concurrency", "values": [1, 4]}}"#,
        );
        let options = LoadOptions {
            sweep: Some(Sweep::new(
                "clients.count",
                vec![json!(5), json!(6), json!(7)],
            )),
            ..LoadOptions::default()
        };
        let e = load_str(&text, "test", &options).unwrap();
        assert_eq!(e.points.len(), 3);
        assert_eq!(e.sweep.unwrap().second, None);
        let options = LoadOptions {
            sweep: Some(
                Sweep::new("server.concurrency", vec![json!(1), json!(2)]).with_second(Axis::new(
                    "clients.count",
                    vec![json!(3), json!(4), json!(5)],
                )),
            ),
            ..LoadOptions::default()
        };
        let e = load_str(&with_sweep("null"), "test", &options).unwrap();
        assert_eq!(e.points.len(), 6);
        assert_eq!(e.points[2].value, Some(json!(1)));
        assert_eq!(e.points[2].second_value, Some(json!(5)));
    }

    /// `with_sweep` plus variants whose patches are `patches`.
    fn with_sweep_and_patches(sweep: &str, patches: &[&str]) -> String {
        let variants: Vec<String> = patches
            .iter()
            .enumerate()
            .map(|(i, p)| format!(r#"{{"name": "v{i}", "patch": {p}}}"#))
            .collect();
        let text = with_sweep(sweep);
        format!(
            "{}, \"variants\": [{}]}}",
            text.trim_end().strip_suffix('}').unwrap(),
            variants.join(", ")
        )
    }

    #[test]
    fn a_patch_over_a_swept_path_is_a_conflict_reported_once() {
        let jitter = r#"{"policy": {"retry": {"backoff": {"jitter": "full"}}}}"#;
        let retry = r#"{"policy": {"retry": {"max_attempts": 2}}}"#;
        let sibling = r#"{"policy": {"retry": {"backoff": {"base": "1ms"}}}}"#;
        let whole = r#"{"policy": {"retry": "x"}}"#;
        // (sweep path, patch, the patch key named, or None for no conflict)
        let cases = [
            (
                "policy.retry.backoff.jitter",
                jitter,
                Some("policy.retry.backoff.jitter"),
            ),
            ("policy.retry", jitter, Some("policy.retry.backoff.jitter")),
            ("policy.retry.backoff.jitter", whole, Some("policy.retry")),
            ("policy.retry.backoff.jitter", retry, None),
            ("policy.retry.backoff.jitter", sibling, None),
            ("policy.retry.backoff.jitter", "{}", None),
            ("policy.retry.backoff.jitter", "null", None),
        ];
        for (path, patch, key) in cases {
            let sweep = format!(r#"{{"path": "{path}", "values": ["full", "none", "equal"]}}"#);
            let text = with_sweep_and_patches(&sweep, &["{}", patch]);
            let found: Vec<Problem> = match load_str(&text, "test", &LoadOptions::default()) {
                Ok(_) => Vec::new(),
                Err(ScenarioError::Invalid { problems, .. }) => problems,
                Err(e) => panic!("{e}"),
            };
            let conflicts: Vec<&Problem> = found
                .iter()
                .filter(|p| p.path.starts_with("variants[1].patch"))
                .collect();
            match key {
                None => assert!(conflicts.is_empty(), "{path} / {patch}: {found:?}"),
                Some(key) => {
                    assert_eq!(conflicts.len(), 1, "{path} / {patch}: {found:?}");
                    let p = conflicts[0];
                    assert_eq!(p.path, format!("variants[1].patch.{key}"));
                    for needle in [
                        format!("sweep.path \"{path}\""),
                        "variant \"v1\"".to_string(),
                        format!("remove \"{key}\" from the variant's patch, or sweep another path"),
                    ] {
                        assert!(p.message.contains(&needle), "{needle}: {}", p.message);
                    }
                }
            }
        }
    }

    #[test]
    fn both_axes_and_the_command_line_sweep_are_checked_against_patches() {
        let patch = r#"{"server": {"concurrency": 3}}"#;
        let text = with_sweep_and_patches(
            r#"{"path": "clients.count", "values": [1, 2],
                "second": {"path": "server.concurrency", "values": [1, 4]}}"#,
            &[patch],
        );
        let found = problems(&text, &LoadOptions::default());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].path, "variants[0].patch.server.concurrency");
        assert!(
            found[0]
                .message
                .contains("sweep.second.path \"server.concurrency\"")
        );

        let text = with_sweep_and_patches("null", &[patch]);
        let options = LoadOptions {
            sweep: Some(Sweep::new(
                "server",
                vec![json!({"service_time": {"constant": "1ms"}})],
            )),
            ..LoadOptions::default()
        };
        let found = problems(&text, &options);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].path, "variants[0].patch.server.concurrency");
        assert!(
            found[0].message.contains("--sweep server"),
            "{}",
            found[0].message
        );
    }

    #[test]
    fn an_axis_is_labelled_as_written_or_from_its_path() {
        let text = with_sweep(
            r#"{"path": "clients.count", "label": "clients", "values": [1],
                "second": {"path": "server.concurrency", "values": [1, 4]}}"#,
        );
        let sweep = load_str(&text, "test", &LoadOptions::default())
            .unwrap()
            .sweep
            .unwrap();
        assert_eq!(sweep.label, "clients");
        assert_eq!(sweep.second.unwrap().label, "server concurrency");
        let text = with_sweep(r#"{"path": "clients.count", "label": " ", "values": [1]}"#);
        let found = problems(&text, &LoadOptions::default());
        assert!(
            found
                .iter()
                .any(|p| p.path == "sweep.label" && p.message.contains("must not be empty")),
            "{found:?}"
        );
        for (path, label) in [
            ("clients.count", "clients count"),
            ("policy.retry.max_attempts", "retry max attempts"),
            ("server.faults.0.to", "faults 0 to"),
            ("clients", "clients"),
            ("", "sweep value"),
        ] {
            assert_eq!(crate::scenario::label_from_path(path), label, "{path}");
        }
    }

    /// A call graph of `n` services far beyond the bound: a chain whose every service also
    /// calls the first (a cycle each), an unknown service and a long way ahead, each with a
    /// drop outage behind calls without a timeout. Its rules cost time linear in its calls.
    fn graph_of(n: usize) -> String {
        let services: Vec<String> = (0..n)
            .map(|i| {
                format!(
                    r#""s{i}": {{"service_time": {{"constant": "1ms"}}, "faults": [{{"from": "0s", "to": "1s", "outage": "drop"}}],
                       "calls": [{{"to": "s{}"}}, {{"to": "s0"}}, {{"to": "nowhere{i}", "fraction": 0.9}}, {{"to": "s{}", "fraction": 0.9}}]}}"#,
                    (i + 1) % n,
                    (i * 7) % n
                )
            })
            .collect();
        format!(
            r#"{{"name": "g", "duration": "1s", "clients": {{"count": 1, "workload": {{"open": {{"rate_per_s": 1}}}}, "entry": "s0"}},
               "services": {{{}}}}}"#,
            services.join(", ")
        )
    }

    /// `load_str` is the one way in for text, and fuzzed: whatever it is given, it returns
    /// problems (never panics), and the limits keep its work small.
    #[test]
    fn hostile_input_gives_problems_not_panics() {
        let key_path = |keys: usize| vec!["a"; keys].join(".");
        let many: Vec<String> = (0..2000).map(|i| i.to_string()).collect();
        let many = many.join(", ");
        let long_key = "k".repeat(1_000_000);
        let nested = format!("{}1{}", "{\"a\": ".repeat(120), "}".repeat(120));
        let texts = vec![
            String::new(),
            "null".to_string(),
            "[]".to_string(),
            "\"x\"".to_string(),
            "{}".to_string(),
            "\u{feff}".to_string(),
            "{\"name\": 5}".to_string(),
            with_sweep(&format!(
                r#"{{"path": "{}", "values": [1]}}"#,
                key_path(1_000_000)
            )),
            with_sweep(&format!(r#"{{"path": "{}", "values": [1]}}"#, key_path(32))),
            with_sweep(r#"{"path": "server.faults.99999999999999999999.to", "values": [1]}"#),
            with_sweep(r#"{"path": "clients.count..x", "values": [1]}"#),
            with_sweep(&format!(
                r#"{{"path": "clients.count", "values": [{many}], "second": {{"path": "server.concurrency", "values": [{many}]}}}}"#
            )),
            with_sweep(&format!(r#"{{"path": "{long_key}", "values": [1]}}"#)),
            with_sweep_and_patches("null", &[&nested, &format!(r#"{{"{long_key}": 1}}"#)]),
            with_sweep_and_patches("null", &[&format!("\"{}\"", "é".repeat(31))]),
            with_sweep(
                r#"{"path": "network.latency", "values": [{"mixture": [{"weight": 1e308, "dist": {"constant": "1ms"}}, {"weight": 1e308, "dist": {"constant": "1ms"}}]}]}"#,
            ),
            graph_of(3000),
        ];
        for text in &texts {
            match load_str(text, "fuzz", &LoadOptions::default()) {
                Err(ScenarioError::Invalid { problems, .. }) => {
                    assert!(!problems.is_empty());
                    for p in &problems {
                        assert!(p.to_string().len() < 1000, "{p}");
                    }
                }
                Err(ScenarioError::Syntax { .. }) => {}
                other => panic!("{:.200}: {other:?}", text),
            }
        }
    }
}
