//! From a file to an [`Experiment`]: JSON syntax, variants as merge patches, sweeps, and the
//! command-line overrides of seed, replications and sweep.

use std::path::Path;

use serde_json::Value;

use super::error::{Problem, ScenarioError, quote, short};
use super::schema::RawScenario;
use super::validate::validate;
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

/// Reads and validates a scenario file.
pub fn load_file(path: &Path, options: &LoadOptions) -> Result<Experiment, ScenarioError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|reason| ScenarioError::Read {
        file: file.clone(),
        reason,
    })?;
    load_str(&text, &file, options)
}

/// Validates scenario text; `file` names it in messages.
pub fn load_str(
    text: &str,
    file: &str,
    options: &LoadOptions,
) -> Result<Experiment, ScenarioError> {
    // A UTF-8 byte-order mark is not JSON, but some editors start every file with one.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut doc: Value = serde_json::from_str(text).map_err(|e| ScenarioError::Syntax {
        file: file.to_string(),
        line: e.line(),
        column: e.column(),
        message: strip_position(&e.to_string()),
    })?;
    let invalid = |problems: Vec<Problem>| ScenarioError::Invalid {
        file: file.to_string(),
        problems,
    };
    // Shape of the file as written: paths and, from the text, line and column.
    let mut de = serde_json::Deserializer::from_str(text);
    let raw: RawScenario = serde_path_to_error::deserialize(&mut de)
        .map_err(|e| invalid(vec![shape_problem(e, true)]))?;

    let mut problems = Vec::new();
    if let Some(seed) = options.seed {
        doc["seed"] = seed.into();
    }
    if let Some(r) = options.replications {
        doc["replications"] = r.into();
    }
    let name = raw.name.clone();
    check_name(&name, &mut problems);
    let seed = options.seed.or(raw.seed).unwrap_or(1);
    let replications = options.replications.or(raw.replications).unwrap_or(1);
    if replications == 0 || replications > 1_000_000 {
        problems.push(Problem::new(
            "replications",
            format!("must be between 1 and 1000000 (got {replications})"),
        ));
    }
    let mut sweep = match &options.sweep {
        Some(s) => Some(s.clone()),
        None => raw.sweep.as_ref().map(|s| {
            let mut sweep = Sweep::new(s.path.clone(), s.values.clone());
            if let Some(label) = &s.label {
                check_label("sweep.label", label, &mut problems);
                sweep = sweep.with_label(label.trim());
            }
            match &s.second {
                Some(second) => {
                    let mut axis = Axis::new(second.path.clone(), second.values.clone());
                    if let Some(label) = &second.label {
                        check_label("sweep.second.label", label, &mut problems);
                        axis = axis.with_label(label.trim());
                    }
                    sweep.with_second(axis)
                }
                None => sweep,
            }
        }),
    };
    if let Some(s) = &mut sweep {
        s.base_value = get_path(&doc, &s.path).cloned();
        if let Some(second) = &mut s.second {
            second.base_value = get_path(&doc, &second.path).cloned();
        }
    }
    if let Some(s) = &sweep {
        check_sweep(s, &mut problems);
    }
    let variants: Vec<(String, Value)> = match &raw.variants {
        None => vec![("baseline".to_string(), Value::Object(Default::default()))],
        Some(list) => {
            if list.is_empty() {
                problems.push(Problem::new(
                    "variants",
                    "must list at least one variant, or be left out for a single \"baseline\"",
                ));
            }
            let mut names = std::collections::HashMap::new();
            for (i, v) in list.iter().enumerate() {
                check_variant(i, &v.name, &v.patch, &mut names, &mut problems);
                if let Some(s) = &sweep {
                    let from_command_line = options.sweep.is_some();
                    check_sweep_against_patch(s, from_command_line, i, v, &mut problems);
                }
            }
            // A variant without a patch (or with `null`) is the base scenario itself.
            list.iter()
                .map(|v| {
                    let patch = match &v.patch {
                        Value::Null => Value::Object(Default::default()),
                        p => p.clone(),
                    };
                    (v.name.clone(), patch)
                })
                .collect()
        }
    };
    if !problems.is_empty() {
        return Err(invalid(problems));
    }

    // The base document without the file-level keys, as variants and sweeps patch it.
    if let Value::Object(map) = &mut doc {
        for key in ["variants", "sweep", "$schema"] {
            map.remove(key);
        }
    }
    let values = sweep.as_ref().map_or(vec![(None, None)], sweep_points);
    let mut points = Vec::with_capacity(values.len());
    // A problem the base document has is reported once, without a variant's name (unless
    // every variant's patch fixes it); a variant is blamed only for what its patch adds.
    let mut reported = std::collections::HashSet::new();
    for (value, second_value) in values {
        let mut base = doc.clone();
        // Each swept setting with its value and the key that names it in messages.
        let mut settings = Vec::new();
        if let (Some(v), Some(s)) = (&value, &sweep) {
            settings.push(("sweep.path", s.path.as_str(), v));
        }
        if let (Some(v), Some(second)) = (
            &second_value,
            sweep.as_ref().and_then(|s| s.second.as_ref()),
        ) {
            settings.push(("sweep.second.path", second.path.as_str(), v));
        }
        let mut placed = true;
        for (key, path, v) in &settings {
            if let Err(message) = set_path(&mut base, path, (*v).clone()) {
                if reported.insert((key.to_string(), message.clone())) {
                    problems.push(Problem::new(*key, message));
                }
                placed = false;
            }
        }
        if !placed {
            continue;
        }
        let context = if settings.is_empty() {
            String::new()
        } else {
            let pairs: Vec<String> = settings
                .iter()
                .map(|(_, path, v)| format!("{path} = {v}"))
                .collect();
            format!("with {}", pairs.join(", "))
        };
        let base_problems = check(&base).err().unwrap_or_default();
        let mut point_variants = Vec::with_capacity(variants.len());
        for (i, (vname, patch)) in variants.iter().enumerate() {
            let mut merged = base.clone();
            json_patch::merge(&mut merged, patch);
            match check(&merged) {
                Ok(scenario) => point_variants.push(Variant {
                    name: vname.clone(),
                    scenario,
                }),
                Err(found) => {
                    let place = format!("variants[{i}] \"{vname}\" {context}");
                    for mut p in found {
                        if base_problems.contains(&p) {
                            // The base's own problem (a variant may also fix it, so only
                            // the variants that keep it count).
                            let from_sweep =
                                settings.iter().any(|(_, path, _)| p.path.starts_with(path));
                            if from_sweep {
                                p.message = format!("{} ({context})", p.message);
                            }
                        } else {
                            p.message = format!("{} (in {})", p.message, place.trim());
                        }
                        if reported.insert((p.path.clone(), p.message.clone())) {
                            problems.push(p);
                        }
                    }
                }
            }
        }
        points.push(Point {
            value,
            second_value,
            variants: point_variants,
        });
    }
    if !problems.is_empty() {
        return Err(invalid(problems));
    }
    Ok(Experiment {
        name,
        description: raw.description.clone(),
        seed,
        replications: replications as u32,
        sweep,
        points,
    })
}

/// Deserializes and validates one merged document.
fn check(doc: &Value) -> Result<super::Scenario, Vec<Problem>> {
    match serde_path_to_error::deserialize::<_, RawScenario>(doc) {
        Err(e) => Err(vec![shape_problem(e, false)]),
        Ok(raw) => validate(&raw),
    }
}

/// Puts `value` at dotted `path` in `doc`, creating objects on the way. A key that is a
/// number indexes an array (`server.faults.0.to`).
pub fn set_path(doc: &mut Value, path: &str, value: Value) -> Result<(), String> {
    let keys: Vec<&str> = path.split('.').collect();
    if keys.iter().any(|k| k.is_empty()) {
        return Err(format!(
            "\"{path}\" is not a dotted path like \"clients.count\""
        ));
    }
    let mut here = doc;
    for (depth, key) in keys.iter().enumerate() {
        let last = depth + 1 == keys.len();
        let so_far = keys[..=depth].join(".");
        here = match here {
            Value::Object(map) => {
                if last {
                    map.insert(key.to_string(), value);
                    return Ok(());
                }
                map.entry(key.to_string())
                    .or_insert_with(|| Value::Object(Default::default()))
            }
            Value::Array(items) => {
                let i: usize = key.parse().map_err(|_| {
                    format!("\"{so_far}\": \"{key}\" must be an index into the list")
                })?;
                let len = items.len();
                let item = items.get_mut(i).ok_or_else(|| {
                    format!("\"{so_far}\": index {i} is past the end of a list of {len}")
                })?;
                if last {
                    *item = value;
                    return Ok(());
                }
                item
            }
            other => {
                return Err(format!(
                    "\"{path}\" goes through {}, which is neither an object nor a list",
                    short(other)
                ));
            }
        };
    }
    unreachable!("the loop returns at the last key")
}

fn check_name(name: &str, problems: &mut Vec<Problem>) {
    let ok = !name.is_empty()
        && name.len() <= 100
        && name != "."
        && name != ".."
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        && !name.starts_with('.');
    if !ok {
        problems.push(Problem::new(
            "name",
            format!(
                "must be a plain folder name of at most 100 letters, digits, '.', '_' and '-', not starting with '.' (got {}); it names the output folder",
                quote(name)
            ),
        ));
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

fn check_sweep(s: &Sweep, problems: &mut Vec<Problem>) {
    check_axis("sweep", &s.path, &s.values, problems);
    if let Some(second) = &s.second {
        check_axis("sweep.second", &second.path, &second.values, problems);
        // Keys on the way, so that "clients" overlaps "clients.count" but not "clients_x".
        let (a, b) = (format!("{}.", s.path), format!("{}.", second.path));
        if a == b {
            problems.push(Problem::new(
                "sweep.second.path",
                format!(
                    "\"{}\" is also sweep.path; the two axes of a sweep must be different settings",
                    second.path
                ),
            ));
        } else if a.starts_with(&b) || b.starts_with(&a) {
            problems.push(Problem::new(
                "sweep.second.path",
                format!(
                    "\"{}\" overlaps sweep.path \"{}\" (one lies inside the other); the two axes of a sweep must be separate settings",
                    second.path, s.path
                ),
            ));
        }
    }
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
            format!("--sweep {path}")
        } else {
            format!("{at} \"{path}\"")
        };
        let overlap = if key == path {
            "the setting"
        } else if path.starts_with(&format!("{key}.")) {
            "a whole object holding the setting"
        } else {
            "a key inside the setting"
        };
        problems.push(Problem::new(
            format!("variants[{i}].patch.{key}"),
            format!(
                "variant \"{}\" sets \"{key}\", {overlap} that {sweep} sweeps: its patch is applied after the sweep value and would overwrite it, so the sweep would do nothing for this variant; remove \"{key}\" from the variant's patch, or sweep another path",
                variant.name
            ),
        ));
    }
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
fn check_variant<'a>(
    i: usize,
    name: &'a str,
    patch: &Value,
    earlier: &mut std::collections::HashMap<&'a str, usize>,
    problems: &mut Vec<Problem>,
) {
    let path = format!("variants[{i}]");
    if name.trim().is_empty() {
        problems.push(Problem::new(format!("{path}.name"), "must not be empty"));
    }
    check_printable(&format!("{path}.name"), name, problems);
    if let Some(j) = earlier.insert(name, i) {
        earlier.insert(name, j);
        problems.push(Problem::new(
            format!("{path}.name"),
            format!(
                "{} is also the name of variants[{j}]; names must be unique",
                quote(name)
            ),
        ));
    }
    match patch {
        Value::Object(map) => {
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
        Value::Null => {}
        other => problems.push(Problem::new(
            format!("{path}.patch"),
            format!(
                "must be an object to merge into the scenario (got {})",
                short(other)
            ),
        )),
    }
}

/// Turns a serde shape error into a problem with its path, a nearest-key hint for unknown
/// keys, and the line and column when the text is at hand.
fn shape_problem(e: serde_path_to_error::Error<serde_json::Error>, with_position: bool) -> Problem {
    let path = e.path().to_string();
    let inner = e.inner();
    let mut message = strip_position(&inner.to_string());
    if let Some(hint) = nearest_key_hint(&message) {
        message.push_str(&hint);
    } else if message.contains("expected map with a single key") {
        message.push_str(
            "; it must have exactly one key (one kind of distribution or workload): when a variant patch changes the kind, remove the old one with null, e.g. {\"exponential\": null, \"constant\": \"10ms\"}",
        );
    }
    if with_position && inner.line() > 0 {
        message = format!(
            "{message} (line {}, column {})",
            inner.line(),
            inner.column()
        );
    }
    let path = if path == "." { String::new() } else { path };
    Problem::new(path, message)
}

/// For serde's "unknown field `x`, expected one of `a`, `b`" message: the closest valid key.
fn nearest_key_hint(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    let (unknown, expected) = rest.split_once('`')?;
    let candidates: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    let best = candidates
        .iter()
        .map(|c| (strsim::damerau_levenshtein(unknown, c), *c))
        .min()?;
    (best.0 <= unknown.len().max(3) / 2 + 1).then(|| format!("; did you mean `{}`?", best.1))
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
        assert_eq!(sc.clients.count, 2);
        match &sc.server.kind {
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

    #[test]
    fn nearest_key_is_suggested() {
        let hint =
            nearest_key_hint("unknown field `rate_per_sec`, expected `rate_per_s` or `profile`");
        assert_eq!(hint.as_deref(), Some("; did you mean `rate_per_s`?"));
        assert_eq!(
            nearest_key_hint("unknown field `zzzzzzzz`, expected `a` or `b`"),
            None
        );
    }
}
