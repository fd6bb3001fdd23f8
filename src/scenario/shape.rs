//! The shape of a scenario document: every unknown key and every value of the wrong type, each
//! with its JSON path and what belongs there in the format's own words, found in one pass.
//!
//! The document is walked against the JSON Schema that `schemars` derives from
//! [`RawScenario`] (the one `retrystorm schema` prints), so the serde types stay the one place
//! that says which keys exist and what each holds: a new setting needs no change here. Serde
//! itself stops at the first problem and words it in Rust's terms (`expected u64`); this walk
//! goes on, and says "a whole number". A document without shape problems deserializes (a test
//! keeps the two in agreement). A duration must be a string here; what the string says is
//! left to `validate`, which reads it.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::OnceLock;

use schemars::JsonSchema;
use serde_json::{Map, Value};

use super::error::{cut, short};
use super::schema::{DurationText, RawScenario};
use super::units::parse_duration;

/// One step of a JSON path: a key of an object or an index into a list.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Step {
    /// A key.
    Key(String),
    /// A list index.
    Index(usize),
}

/// `path` as messages write it: keys joined by dots, indices in brackets (`server.faults[0].to`).
/// A very long key (never one of the format's) is cut short.
pub(super) fn show(path: &[Step]) -> String {
    let mut out = String::new();
    for step in path {
        match step {
            Step::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(&cut(k));
            }
            Step::Index(i) => {
                let _ = write!(out, "[{i}]");
            }
        }
    }
    out
}

/// The steps of a path written as [`show`] writes it (keys hold no dots or brackets).
pub(super) fn parse(path: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let (key, indices) = part.split_once('[').unwrap_or((part, ""));
        if !key.is_empty() {
            steps.push(Step::Key(key.to_string()));
        }
        for index in indices.split('[') {
            if let Ok(i) = index.trim_end_matches(']').parse() {
                steps.push(Step::Index(i));
            }
        }
    }
    steps
}

/// A problem with the shape of a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ShapeProblem {
    /// Where the problem is.
    pub path: Vec<Step>,
    /// What is wrong and what belongs there.
    pub message: String,
    /// Where to point in the text: the value at `path` (or, for a missing key, the object
    /// that lacks it), or with `at_key` the key itself (an unknown key).
    pub at: Vec<Step>,
    /// Point at the key rather than at its value.
    pub at_key: bool,
}

/// Every shape problem of `doc` as a scenario document, in document order.
pub(super) fn check(doc: &Value) -> Vec<ShapeProblem> {
    let shape = Shape::get();
    let mut walk = Walk {
        shape,
        path: Vec::new(),
        found: Vec::new(),
    };
    walk.value(shape.root, doc);
    walk.found
}

/// JSON types, as bits of [`Typed::types`].
const OBJECT: u8 = 1;
const ARRAY: u8 = 2;
const STRING: u8 = 4;
const BOOLEAN: u8 = 8;
const NULL: u8 = 16;
const NUMBER: u8 = 32;
const INTEGER: u8 = 64;
/// Each type's name in the schema and in messages, in the order messages list them.
const TYPES: [(u8, &str, &str); 7] = [
    (INTEGER, "integer", "a whole number"),
    (NUMBER, "number", "a number"),
    (STRING, "string", "a string"),
    (BOOLEAN, "boolean", "true or false"),
    (ARRAY, "array", "a list"),
    (OBJECT, "object", "an object"),
    (NULL, "null", "null"),
];

/// What the value at one place may be: one schema of the JSON Schema, compiled for walking.
enum Node {
    /// Anything (a variant's patch, a sweep value).
    Any,
    /// A duration: a string, which `validate` reads.
    Duration,
    /// Exactly this value (a word such as "none").
    Const(Value),
    /// One of these values.
    Enum(Vec<Value>),
    /// One of these kinds of value (`oneOf`, `anyOf`), by node.
    Choice(Vec<usize>),
    /// A value of some JSON types.
    Typed(Typed),
}

/// A [`Node`] of some JSON types.
struct Typed {
    /// Allowed types, as bits.
    types: u8,
    /// Bounds of a whole number: those of its Rust type (the schema's `format`).
    minimum: Option<f64>,
    maximum: Option<f64>,
    /// An object's keys, in the schema's order, with their nodes.
    properties: Vec<(String, usize)>,
    /// Keys an object must have.
    required: Vec<String>,
    /// Whether an object may have no other keys.
    closed: bool,
    /// The node of the values under keys it does not list (a map such as `services`, whose
    /// keys are names).
    values: Option<usize>,
    /// The node of a list's items.
    items: Option<usize>,
}

/// The schema of a scenario, compiled once.
struct Shape {
    nodes: Vec<Node>,
    root: usize,
}

impl Shape {
    fn get() -> &'static Shape {
        static SHAPE: OnceLock<Shape> = OnceLock::new();
        SHAPE.get_or_init(|| {
            let mut root = schemars::schema_for!(RawScenario).to_value();
            let defs = match root.as_object_mut().and_then(|o| o.remove("$defs")) {
                Some(Value::Object(defs)) => defs,
                _ => Map::new(),
            };
            let mut compiler = Compiler {
                defs,
                nodes: Vec::new(),
                named: HashMap::new(),
                duration: format!("#/$defs/{}", DurationText::schema_name()),
            };
            let root = compiler.compile(&root);
            Shape {
                nodes: compiler.nodes,
                root,
            }
        })
    }

    fn node(&self, id: usize) -> &Node {
        static ANY: Node = Node::Any;
        self.nodes.get(id).unwrap_or(&ANY)
    }

    /// The key of an object with exactly one key that names a kind (serde's externally
    /// tagged enum variants: `{"exponential": {...}}`).
    fn tag(&self, id: usize) -> Option<&str> {
        match self.node(id) {
            Node::Typed(t) => match (t.properties.as_slice(), t.required.as_slice()) {
                ([(key, _)], [required]) if t.types == OBJECT && key == required => {
                    Some(key.as_str())
                }
                _ => None,
            },
            _ => None,
        }
    }

    /// Whether the node allows only null (the other half of an optional setting).
    fn null_only(&self, id: usize) -> bool {
        matches!(self.node(id), Node::Typed(t) if t.types == NULL)
    }

    /// What node `id` asks for, in the format's words: "a whole number", "an object",
    /// "one of: none, full, equal, decorrelated", "a duration such as \"250ms\"".
    fn describe(&self, id: usize) -> String {
        match self.node(id) {
            Node::Any => "any value".to_string(),
            Node::Duration => "a duration such as \"250ms\"".to_string(),
            Node::Const(c) => c.to_string(),
            Node::Enum(list) => one_of(
                list.iter()
                    .map(|v| v.as_str().map_or(v.to_string(), str::to_string)),
            ),
            Node::Choice(ids) => self.describe_choice(ids),
            Node::Typed(t) => {
                let words: Vec<&str> = TYPES
                    .iter()
                    .filter(|(bit, _, _)| t.types & bit != 0 && *bit != NULL)
                    .map(|(_, _, words)| *words)
                    .collect();
                if words.is_empty() {
                    "any value".to_string()
                } else {
                    words.join(" or ")
                }
            }
        }
    }

    /// What one of `ids` asks for: names for a choice of words, "an object with one key, one
    /// of: ..." for kinds, else each branch's description joined by "or".
    fn describe_choice(&self, ids: &[usize]) -> String {
        let mut words = Vec::new();
        let mut kinds = Vec::new();
        let mut parts: Vec<String> = Vec::new();
        for &id in ids {
            if self.null_only(id) {
                continue;
            }
            if let Node::Const(Value::String(word)) = self.node(id) {
                words.push(word.clone());
                parts.push(format!("{word:?}"));
            } else if let Some(kind) = self.tag(id) {
                if kinds.is_empty() {
                    // Where the kinds go, once.
                    parts.push(String::new());
                }
                kinds.push(kind);
            } else {
                parts.push(self.describe(id));
            }
        }
        if !words.is_empty() && words.len() == parts.len() {
            return one_of(words.into_iter());
        }
        let kinds = match kinds.as_slice() {
            [kind] => format!("{{\"{kind}\": {{...}}}}"),
            _ => format!("an object with one key, one of: {}", kinds.join(", ")),
        };
        let parts: Vec<String> = parts
            .into_iter()
            .map(|p| if p.is_empty() { kinds.clone() } else { p })
            .collect();
        parts.join(" or ")
    }

    /// The kinds named by the tagged branches of a choice, nested choices included.
    fn kinds(&self, ids: &[usize]) -> Vec<String> {
        let mut out = Vec::new();
        for &id in ids {
            match self.node(id) {
                Node::Choice(inner) => out.extend(self.kinds(inner)),
                _ => out.extend(self.tag(id).map(str::to_string)),
            }
        }
        out
    }

    /// The words (string constants) of a choice, nested choices included.
    fn words(&self, ids: &[usize]) -> Vec<String> {
        let mut out = Vec::new();
        for &id in ids {
            match self.node(id) {
                Node::Choice(inner) => out.extend(self.words(inner)),
                Node::Const(Value::String(word)) => out.push(word.clone()),
                _ => {}
            }
        }
        out
    }

    /// How `v` meets node `id`, as one branch of a choice.
    fn fit(&self, id: usize, v: &Value) -> Fit {
        match self.node(id) {
            Node::Any => Fit::Whole,
            Node::Duration if v.is_string() => Fit::Whole,
            Node::Duration => Fit::No,
            Node::Const(c) if v == c => Fit::Whole,
            Node::Enum(list) if list.contains(v) => Fit::Whole,
            Node::Const(_) | Node::Enum(_) => Fit::No,
            Node::Choice(ids) => {
                let fits: Vec<Fit> = ids.iter().map(|&b| self.fit(b, v)).collect();
                if fits.contains(&Fit::Whole) {
                    Fit::Whole
                } else if fits.contains(&Fit::Inside) {
                    Fit::Inside
                } else {
                    Fit::No
                }
            }
            Node::Typed(t) if !type_fits(t, v) => Fit::No,
            Node::Typed(_) => match v {
                Value::Object(map) => match self.tag(id) {
                    Some(kind) if map.len() != 1 || !map.contains_key(kind) => Fit::No,
                    _ => Fit::Inside,
                },
                Value::Array(_) => Fit::Inside,
                _ => Fit::Whole,
            },
        }
    }
}

/// Turns the JSON Schema into [`Node`]s; each definition becomes one node, so the schema's
/// recursion (a mixture of distributions) becomes a cycle of indices.
struct Compiler {
    defs: Map<String, Value>,
    nodes: Vec<Node>,
    named: HashMap<String, usize>,
    duration: String,
}

impl Compiler {
    fn push(&mut self, node: Node) -> usize {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    fn compile(&mut self, schema: &Value) -> usize {
        let Some(r) = schema.get("$ref").and_then(Value::as_str) else {
            let node = self.build(schema);
            return self.push(node);
        };
        if r == self.duration {
            return self.push(Node::Duration);
        }
        if let Some(&id) = self.named.get(r) {
            return id;
        }
        let id = self.push(Node::Any);
        self.named.insert(r.to_string(), id);
        let def = r
            .strip_prefix("#/$defs/")
            .and_then(|name| self.defs.get(name))
            .cloned()
            .unwrap_or(Value::Bool(true));
        let node = match def.get("$ref") {
            Some(_) => Node::Choice(vec![self.compile(&def)]),
            None => self.build(&def),
        };
        if let Some(slot) = self.nodes.get_mut(id) {
            *slot = node;
        }
        id
    }

    fn build(&mut self, schema: &Value) -> Node {
        if let Some(branches) = choice(schema) {
            return Node::Choice(branches.iter().map(|b| self.compile(b)).collect());
        }
        if let Some(c) = schema.get("const") {
            return Node::Const(c.clone());
        }
        if let Some(list) = schema.get("enum").and_then(Value::as_array) {
            return Node::Enum(list.clone());
        }
        let listed: &[Value] = match schema.get("type") {
            Some(t @ Value::String(_)) => std::slice::from_ref(t),
            Some(Value::Array(list)) => list,
            _ => &[],
        };
        let types = listed
            .iter()
            .filter_map(Value::as_str)
            .filter_map(|name| TYPES.iter().find(|(_, n, _)| *n == name))
            .fold(0, |bits, (bit, _, _)| bits | bit);
        let properties = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|props| {
                props
                    .iter()
                    .map(|(k, s)| (k.clone(), self.compile(s)))
                    .collect()
            })
            .unwrap_or_default();
        let required = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let items = schema.get("items").map(|s| self.compile(s));
        let values = match schema.get("additionalProperties") {
            Some(s @ Value::Object(_)) => Some(self.compile(s)),
            _ => None,
        };
        // What a whole number's Rust type holds; the schema's own bounds are rules, which
        // `validate` words better than "must be a whole number".
        let (minimum, maximum) = match schema.get("format").and_then(Value::as_str) {
            Some("uint64") => (Some(0.0), Some(u64::MAX as f64)),
            Some("uint32") => (Some(0.0), Some(f64::from(u32::MAX))),
            _ => (None, None),
        };
        Node::Typed(Typed {
            types,
            minimum,
            maximum,
            properties,
            required,
            closed: schema.get("additionalProperties") == Some(&Value::Bool(false)),
            values,
            items,
        })
    }
}

/// The branches of a `oneOf` or `anyOf`.
fn choice(schema: &Value) -> Option<&[Value]> {
    schema
        .get("oneOf")
        .or_else(|| schema.get("anyOf"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
}

/// "one of: a, b, c".
fn one_of(words: impl Iterator<Item = String>) -> String {
    format!("one of: {}", words.collect::<Vec<_>>().join(", "))
}

/// Whether `v` has one of the JSON types `t` allows, whole numbers within its bounds.
fn type_fits(t: &Typed, v: &Value) -> bool {
    if t.types == 0 {
        return true;
    }
    let bit = match v {
        Value::Object(_) => OBJECT,
        Value::Array(_) => ARRAY,
        Value::String(_) => STRING,
        Value::Bool(_) => BOOLEAN,
        Value::Null => NULL,
        Value::Number(_) if t.types & NUMBER != 0 => NUMBER,
        Value::Number(n) => {
            let n = match (n.as_u64(), n.as_i64()) {
                (Some(n), _) => n as f64,
                (None, Some(n)) => n as f64,
                (None, None) => return false,
            };
            return t.types & INTEGER != 0
                && t.minimum.is_none_or(|m| n >= m)
                && t.maximum.is_none_or(|m| n <= m);
        }
    };
    t.types & bit != 0
}

/// How a value meets one branch of a choice.
#[derive(PartialEq)]
enum Fit {
    /// Not at all.
    No,
    /// A scalar or a word that is right as it is.
    Whole,
    /// An object or a list of the branch's kind, whose insides are still to be walked.
    Inside,
}

/// One step of the path being walked, borrowed from the document.
#[derive(Clone, Copy)]
enum At<'d> {
    Key(&'d str),
    Index(usize),
}

struct Walk<'s, 'd> {
    shape: &'s Shape,
    path: Vec<At<'d>>,
    found: Vec<ShapeProblem>,
}

impl<'d> Walk<'_, 'd> {
    fn here(&self) -> Vec<Step> {
        self.path
            .iter()
            .map(|s| match s {
                At::Key(k) => Step::Key(k.to_string()),
                At::Index(i) => Step::Index(*i),
            })
            .collect()
    }

    /// A problem with the value here.
    fn push(&mut self, message: String) {
        let here = self.here();
        self.found.push(ShapeProblem {
            path: here.clone(),
            message,
            at: here,
            at_key: false,
        });
    }

    /// A problem with the key that leads here.
    fn push_key(&mut self, message: String) {
        let here = self.here();
        self.found.push(ShapeProblem {
            path: here.clone(),
            message,
            at: here,
            at_key: true,
        });
    }

    /// "must be X (got Y)"; at the top, "the scenario file must be an object".
    fn wrong(&mut self, expected: &str, v: &Value, hint: &str) {
        let whole = if self.path.is_empty() {
            "the scenario file "
        } else {
            ""
        };
        self.push(format!(
            "{whole}must be {expected} (got {}){hint}",
            short(v)
        ));
    }

    fn value(&mut self, id: usize, v: &'d Value) {
        let shape = self.shape;
        match shape.node(id) {
            Node::Any => {}
            Node::Duration => {
                // A string is read by `validate`; anything else is explained here.
                if !v.is_string()
                    && let Err(message) = parse_duration(v)
                {
                    self.push(message);
                }
            }
            Node::Const(c) if v != c => self.wrong(&shape.describe(id), v, ""),
            Node::Enum(list) if !list.contains(v) => self.wrong(&shape.describe(id), v, ""),
            Node::Const(_) | Node::Enum(_) => {}
            Node::Choice(ids) => self.choice(ids, v),
            Node::Typed(t) if !type_fits(t, v) => self.wrong(&shape.describe(id), v, ""),
            Node::Typed(t) => match v {
                Value::Object(map) => self.object(t, map),
                Value::Array(items) => {
                    if let Some(item) = t.items {
                        for (i, x) in items.iter().enumerate() {
                            self.path.push(At::Index(i));
                            self.value(item, x);
                            self.path.pop();
                        }
                    }
                }
                _ => {}
            },
        }
    }

    fn object(&mut self, t: &Typed, map: &'d Map<String, Value>) {
        // Keys that a misspelt key was probably meant as: not also reported missing.
        let mut meant = Vec::new();
        for (key, x) in map {
            self.path.push(At::Key(key));
            match t.properties.iter().find(|(k, _)| k == key) {
                Some((_, id)) => self.value(*id, x),
                None if t.closed => {
                    let keys: Vec<&str> = t.properties.iter().map(|(k, _)| k.as_str()).collect();
                    let message = match nearest(key, &keys) {
                        Some(k) => {
                            meant.push(k);
                            format!("unknown key; did you mean `{k}`?")
                        }
                        None => format!("unknown key; the keys here are {}", keys.join(", ")),
                    };
                    self.push_key(message);
                }
                None => {
                    if let Some(id) = t.values {
                        self.value(id, x);
                    }
                }
            }
            self.path.pop();
        }
        for key in &t.required {
            if !map.contains_key(key) && !meant.contains(&key.as_str()) {
                let what = t
                    .properties
                    .iter()
                    .find(|(k, _)| k == key)
                    .map_or("a value".to_string(), |(_, id)| self.shape.describe(*id));
                let at = self.here();
                let mut path = at.clone();
                path.push(Step::Key(key.clone()));
                self.found.push(ShapeProblem {
                    path,
                    message: format!("is required: {what}"),
                    at,
                    at_key: false,
                });
            }
        }
    }

    fn choice(&mut self, ids: &[usize], v: &'d Value) {
        let shape = self.shape;
        let mut inside = Vec::new();
        for &id in ids {
            match shape.fit(id, v) {
                Fit::Whole => return,
                Fit::Inside => inside.push(id),
                Fit::No => {}
            }
        }
        if let [only] = inside.as_slice() {
            return self.value(*only, v);
        }
        if let Some(&first) = inside.first() {
            // Never so in the scenario format: several kinds of object could be meant.
            // The first that holds the value wins, else the first speaks.
            let before = self.found.len();
            for &id in &inside {
                self.value(id, v);
                if self.found.len() == before {
                    return;
                }
                self.found.truncate(before);
            }
            return self.value(first, v);
        }
        // One kind of value is meant (the choice allows null only besides, for a setting
        // left out): that kind explains what is wrong.
        let meant: Vec<usize> = ids
            .iter()
            .copied()
            .filter(|&id| !shape.null_only(id))
            .collect();
        if let [one] = meant.as_slice() {
            return self.value(*one, v);
        }
        let expected = shape.describe_choice(ids);
        let kinds = shape.kinds(ids);
        match v {
            Value::Object(map) if !kinds.is_empty() => self.wrong_kind(map, &kinds, v),
            Value::String(s) => {
                let words = shape.words(ids);
                let words: Vec<&str> = words.iter().map(String::as_str).collect();
                let hint =
                    nearest(s, &words).map_or(String::new(), |w| format!("; did you mean {w:?}?"));
                self.wrong(&expected, v, &hint);
            }
            _ => self.wrong(&expected, v, ""),
        }
    }

    /// An object that should have one key naming its kind, but has none, several or an
    /// unknown one.
    fn wrong_kind(&mut self, map: &'d Map<String, Value>, kinds: &[String], v: &Value) {
        let list = kinds.join(", ");
        let known = map.keys().filter(|k| kinds.contains(k)).count();
        match (map.len(), known) {
            (0, _) => self.push(format!(
                "must have one key, the kind: one of {list} (got {})",
                short(v)
            )),
            (_, 0) => {
                // Every key is unknown: point at each.
                let kinds: Vec<&str> = kinds.iter().map(String::as_str).collect();
                for key in map.keys() {
                    self.path.push(At::Key(key));
                    let hint = nearest(key, &kinds)
                        .map_or(String::new(), |k| format!("did you mean `{k}`? "));
                    self.push_key(format!(
                        "unknown key; {hint}the one key here names the kind: {list}"
                    ));
                    self.path.pop();
                }
            }
            (n, _) => {
                let keys: Vec<&str> = map.keys().map(String::as_str).collect();
                self.push(format!(
                    "has {n} keys ({}) but must have exactly one, the kind: one of {list}; when a variant patch changes the kind, remove the old one with null, e.g. {{\"exponential\": null, \"constant\": \"10ms\"}}",
                    keys.join(", ")
                ));
            }
        }
    }
}

/// The candidate nearest to `word`, if it is near enough to be what was meant.
pub(super) fn nearest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    // A word much longer than every candidate is far from all of them; measuring it would
    // only cost time.
    let longest = candidates.iter().map(|c| c.chars().count()).max()?;
    let len = word.chars().count();
    if len > 2 * longest + 4 {
        return None;
    }
    let (distance, best) = candidates
        .iter()
        .map(|c| (strsim::damerau_levenshtein(word, c), *c))
        .min()?;
    (distance <= len.max(3) / 2 + 1).then_some(best)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(doc: &Value) -> Vec<String> {
        check(doc)
            .into_iter()
            .map(|p| match show(&p.path) {
                path if path.is_empty() => p.message,
                path => format!("{path}: {}", p.message),
            })
            .collect()
    }

    fn good() -> Value {
        json!({"name": "s", "duration": "1s",
               "clients": {"count": 2, "workload": {"open": {"rate_per_s": 10}}},
               "server": {"service_time": {"constant": "1ms"}},
               "policy": {"retry": {"max_attempts": 3,
                          "backoff": {"base": "1ms", "cap": "1s", "jitter": "full"}},
                          "hedge": {"delay": "p95", "max_hedges": 2, "cancel": true,
                                    "budget": 0.1, "window": 100},
                          "idempotent": false,
                          "idempotency_key": {"ttl": "1h", "cost": "1ms"},
                          "adaptive_throttle": {"k": 1.5, "window": "1m"}}})
    }

    /// A call graph with every key a service, a call and a call's policy have.
    fn good_graph() -> Value {
        json!({"name": "g", "duration": "1s",
               "clients": {"count": 2, "workload": {"open": {"rate_per_s": 10}}, "entry": "api"},
               "policy": {"timeout": "1s", "fallback": {"latency": {"constant": "1ms"}}},
               "services": {
                   "api": {"service_time": {"constant": "1ms"}, "call_mode": "parallel",
                           "calls": [{"to": "db", "fraction": 0.5,
                                      "policy": {"timeout": "10ms",
                                                 "retry": {"retry_on": ["bulkhead_full"]},
                                                 "bulkhead": {"max_concurrent": 4, "max_wait": "1ms"},
                                                 "fallback": {"latency": {"constant": "1ms"}},
                                                 "propagate_deadline": true,
                                                 "hedge": {"delay": "1ms"},
                                                 "idempotency_key": true,
                                                 "adaptive_throttle": true}}]},
                   "db": {"kind": "occ", "permanent_error_rate": 0.1}}})
    }

    #[test]
    fn a_good_document_has_no_shape_problems() {
        assert_eq!(messages(&good()), Vec::<String>::new());
        assert_eq!(messages(&good_graph()), Vec::<String>::new());
    }

    #[test]
    fn services_calls_and_call_policies_are_walked_key_by_key() {
        let mut doc = good_graph();
        let api = &mut doc["services"]["api"];
        api["concurency"] = json!(2);
        api["call_mode"] = json!("paralel");
        let call = &mut api["calls"][0];
        call["fraction"] = json!("half");
        call["policy"]["bulkhed"] = json!({"max_concurrent": 1});
        call["policy"]["bulkhead"]["max_concurrent"] = json!(-1);
        call["policy"]["propagate_deadline"] = json!("yes");
        doc["services"]["db"] = json!(5);
        doc["clients"]["entry"] = json!(1);
        let found = messages(&doc);
        assert_eq!(
            found,
            [
                "clients.entry: must be a string (got 1)",
                "services.api.call_mode: must be one of: sequential, parallel (got \"paralel\"); did you mean \"parallel\"?",
                "services.api.calls[0].fraction: must be a number (got \"half\")",
                "services.api.calls[0].policy.bulkhead.max_concurrent: must be a whole number (got -1)",
                "services.api.calls[0].policy.propagate_deadline: must be true or false (got \"yes\")",
                "services.api.calls[0].policy.bulkhed: unknown key; did you mean `bulkhead`?",
                "services.api.concurency: unknown key; did you mean `concurrency`?",
                "services.db: must be an object (got 5)",
            ]
        );
        doc["services"] = json!([]);
        assert_eq!(messages(&doc)[1], "services: must be an object (got [])");
    }

    #[test]
    fn every_problem_is_found_in_the_formats_words() {
        let mut doc = good();
        doc["clients"]["count"] = json!("x");
        let open = &mut doc["clients"]["workload"]["open"];
        *open = json!({"rate_per_sec": 1});
        doc["server"]["concurency"] = json!(3);
        doc["server"]["queue_limit"] = json!(2.5);
        doc["policy"]["retry"]["backoff"]["jitter"] = json!("ful");
        doc["policy"]["retry"]["max_attempts"] = json!(-1);
        doc["network"] = json!({"latency": {"exponentail": {"mean": "1ms"}}});
        doc["server"]["service_time"] = json!({"constant": "1ms", "exponential": {"mean": "1ms"}});
        doc["variants"] = json!([{"patch": {}}]);
        let found = messages(&doc);
        let expected = [
            "clients.count: must be a whole number (got \"x\")",
            "clients.workload.open.rate_per_sec: unknown key; did you mean `rate_per_s`?",
            "server.service_time: has 2 keys (constant, exponential) but must have exactly one, the kind: one of constant, exponential, uniform, normal, lognormal, mixture",
            "server.concurency: unknown key; did you mean `concurrency`?",
            "server.queue_limit: must be a whole number or \"unlimited\" (got 2.5)",
            "policy.retry.max_attempts: must be a whole number or \"unlimited\" (got -1)",
            "policy.retry.backoff.jitter: must be one of: none, full, equal, decorrelated (got \"ful\"); did you mean \"full\"?",
            "network.latency.exponentail: unknown key; did you mean `exponential`? the one key here names the kind: constant, exponential, uniform, normal, lognormal, mixture",
            "variants[0].name: is required: a string",
        ];
        for e in expected {
            assert!(
                found.iter().any(|f| f.starts_with(e)),
                "missing {e:?} in {found:#?}"
            );
        }
        assert_eq!(found.len(), expected.len(), "{found:#?}");
        for f in &found {
            for serde_words in [
                "expected",
                "u64",
                "struct",
                "map",
                "invalid type",
                "unknown variant",
            ] {
                assert!(!f.contains(serde_words), "{f}");
            }
        }
    }

    #[test]
    fn words_and_choices_are_described_as_the_format_writes_them() {
        let mut doc = good();
        doc["policy"]["retry"]["backoff"] = json!(5);
        doc["server"]["kind"] = json!("ocm");
        doc["clients"]["workload"] = json!({"open": null});
        doc["duration"] = json!("1 fortnight");
        doc["max_time"] = json!(5);
        doc["network"] = json!({"latency": {"constant": {"any": "value"}}});
        let found = messages(&doc);
        assert_eq!(
            found,
            [
                "clients.workload.open: must be an object (got null)",
                "server.kind: must be one of: queue, occ (got \"ocm\"); did you mean \"occ\"?",
                "policy.retry.backoff: must be \"none\" or {\"envoy\": {...}} or an object (got 5)",
                "max_time: a duration needs a unit (got the bare number 5); write \"5s\" or \"5ms\"",
                "network.latency.constant: must be a duration such as \"10ms\" or \"1.5s\" (got {\"any\":\"value\"})",
            ],
            "what a duration's text says is validate's"
        );
        assert_eq!(
            messages(&json!([1])),
            ["the scenario file must be an object (got [1])"]
        );
        let missing = messages(&json!({"name": "x"}));
        assert_eq!(
            missing,
            [
                "duration: is required: a duration such as \"250ms\"",
                "clients: is required: an object or a list",
            ]
        );
    }

    #[test]
    fn paths_show_and_parse() {
        let path = vec![
            Step::Key("server".into()),
            Step::Key("faults".into()),
            Step::Index(3),
            Step::Key("to".into()),
        ];
        assert_eq!(show(&path), "server.faults[3].to");
        assert_eq!(parse("server.faults[3].to"), path);
        assert_eq!(
            parse("a[1][2]"),
            [Step::Key("a".into()), Step::Index(1), Step::Index(2)]
        );
        assert_eq!(parse(""), []);
    }

    #[test]
    fn a_long_unknown_key_is_not_measured_against_every_key() {
        let long = "x".repeat(1_000_000);
        assert_eq!(nearest(&long, &["count", "workload"]), None);
        assert_eq!(nearest("wrkload", &["count", "workload"]), Some("workload"));
        assert_eq!(nearest("zzzzzzzz", &["a", "b"]), None);
    }

    /// Every bundled scenario, and every one of its values replaced by values of each JSON
    /// type: the walk finds no problem exactly when serde reads the document, so a document
    /// this walk passes can always be deserialized. The walk is stricter in two ways that
    /// the format asks for: serde also reads an object's values written as a list in field
    /// order, and takes any JSON as a duration (for `validate` to explain).
    #[test]
    fn the_walk_agrees_with_serde() {
        let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
        let mut docs = Vec::new();
        // The scenario files; `configs/` holds the service configs they read.
        for entry in std::fs::read_dir(folder).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|x| x == "json") {
                let text = std::fs::read_to_string(path).unwrap();
                docs.push(serde_json::from_str::<Value>(&text).unwrap());
            }
        }
        docs.push(good());
        docs.push(good_graph());
        let replacements = [
            json!(null),
            json!(true),
            json!(3),
            json!(-1),
            json!(2.5),
            json!(1e300),
            json!("x"),
            json!("none"),
            json!("unlimited"),
            json!("full"),
            json!([]),
            json!([1]),
            json!({}),
            json!({"x": 1}),
            json!({"constant": "1ms"}),
            json!({"open": {"rate_per_s": 1}}),
        ];
        let mut checked = 0;
        for doc in &docs {
            let mut paths = Vec::new();
            collect_paths(doc, &mut Vec::new(), &mut paths);
            for path in paths {
                for r in &replacements {
                    let mut d = doc.clone();
                    *pointer(&mut d, &path) = r.clone();
                    let walk = check(&d);
                    let serde = serde_json::from_value::<RawScenario>(d.clone());
                    // Durations are any JSON to serde and strings to the walk.
                    let not_a_duration = walk
                        .iter()
                        .all(|p| Some(&p.message) == parse_duration(r).err().as_ref());
                    let stricter = serde.is_ok() && (r.is_array() || not_a_duration);
                    assert_eq!(
                        walk.is_empty() || stricter,
                        serde.is_ok(),
                        "{} = {r}: walk {:?}, serde {:?}",
                        show(&path),
                        walk.first().map(|p| &p.message),
                        serde.err()
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 5000, "{checked}");
    }

    fn collect_paths(v: &Value, path: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
        out.push(path.clone());
        match v {
            Value::Object(map) => {
                for (k, x) in map {
                    path.push(Step::Key(k.clone()));
                    collect_paths(x, path, out);
                    path.pop();
                }
            }
            Value::Array(items) => {
                for (i, x) in items.iter().enumerate() {
                    path.push(Step::Index(i));
                    collect_paths(x, path, out);
                    path.pop();
                }
            }
            _ => {}
        }
    }

    fn pointer<'a>(v: &'a mut Value, path: &[Step]) -> &'a mut Value {
        path.iter().fold(v, |v, step| match step {
            Step::Key(k) => &mut v[k.as_str()],
            Step::Index(i) => &mut v[*i],
        })
    }
}
