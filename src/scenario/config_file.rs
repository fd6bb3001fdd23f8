//! Policies read from a config file of another program: the file reading and the expansion
//! that `grpc_service_config` (`grpc_config.rs`) and `envoy_config` (`envoy_config.rs`)
//! share, in one place. What a file means is each kind's own; this file is not where any of it
//! is read.
//!
//! The loader calls [`expand`] on each document the file writes (the scenario, each variant's
//! patch) before any rule is checked: every policy object that names a config gets the
//! settings the config gives, under the settings written beside it (which win, merged key by
//! key), and the config's `read_as` records what was understood. A config whose `read_as` is
//! written is not read again, so `scenario.resolved.json` reruns without the config file.

use std::collections::HashMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::envoy_config::RawEnvoyConfig;
use super::error::{Problem, quote};
use super::grpc_config::RawGrpcServiceConfig;
use super::load::merge;

/// The largest config file read: configs are a few kilobytes.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;
/// The most distinct config files one scenario file may name.
pub const MAX_CONFIG_FILES: usize = 16;

/// A problem inside a config file: (path inside it, what is wrong and the fix).
pub(super) type Inner = (String, String);

/// One kind of config file a policy may name, by its key.
pub(super) trait ConfigKind: DeserializeOwned + Serialize {
    /// The policy key that names it.
    const KEY: &'static str;
    /// The file, as written (relative to the scenario file's folder).
    fn file(&self) -> &str;
    /// What was understood, once read.
    fn read_as(&mut self) -> &mut Option<String>;
    /// The file's text as a JSON value, or why it is not one (`shown` names the file).
    fn parse(bytes: &[u8], shown: &str) -> Result<Value, String>;
    /// The policy settings the config gives, and the words of what was understood.
    fn import(&self, config: &Value) -> Result<(Value, String), Inner>;
}

/// The config files read so far for one scenario file, by resolved path and kind.
#[derive(Default)]
pub(super) struct ConfigFiles {
    read: HashMap<(PathBuf, &'static str), Result<Value, String>>,
}

impl ConfigFiles {
    /// The parsed file at `path`, read once; a file that is not a regular file, larger than
    /// [`MAX_CONFIG_BYTES`] or not of its kind's syntax gives the reason instead.
    fn get<K: ConfigKind>(&mut self, path: &Path) -> Result<&Value, String> {
        let key = (path.to_path_buf(), K::KEY);
        if !self.read.contains_key(&key) {
            if self.read.len() >= MAX_CONFIG_FILES {
                return Err(format!(
                    "is one config file more than the {MAX_CONFIG_FILES} one scenario file may name; share one file between policies"
                ));
            }
            let parsed = read_bytes(path).and_then(|b| K::parse(&b, &path.display().to_string()));
            self.read.insert(key.clone(), parsed);
        }
        self.read[&key].as_ref().map_err(Clone::clone)
    }
}

/// Reads a config file (never a device or a pipe, never more than [`MAX_CONFIG_BYTES`]).
fn read_bytes(path: &Path) -> Result<Vec<u8>, String> {
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{shown} is not a regular file"));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_CONFIG_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(format!(
            "{shown} is larger than {} MiB; a config is a few KB: is it the right file?",
            MAX_CONFIG_BYTES >> 20
        ));
    }
    Ok(bytes)
}

/// Whether `key` names a config file.
fn is_config_key(key: &str) -> bool {
    key == RawGrpcServiceConfig::KEY || key == RawEnvoyConfig::KEY
}

/// Expands every policy object in `doc` (found at `at`, "" for the scenario) that names a
/// config file not yet read; `dir` is the scenario file's folder. Problems name the JSON path
/// of the scenario, the file and the path inside it, the rule, the value and the fix.
pub(super) fn expand(
    doc: &mut Value,
    at: &str,
    dir: &Path,
    files: &mut ConfigFiles,
    problems: &mut Vec<Problem>,
) {
    match doc {
        Value::Object(map) => {
            let grpc = map.contains_key(RawGrpcServiceConfig::KEY);
            if grpc && map.contains_key(RawEnvoyConfig::KEY) {
                problems.push(Problem::new(
                    join(at, RawEnvoyConfig::KEY),
                    "is written beside grpc_service_config, and a policy reads one config file: remove one".to_string(),
                ));
                map.shift_remove(RawEnvoyConfig::KEY);
            }
            if grpc {
                expand_policy::<RawGrpcServiceConfig>(map, at, dir, files, problems);
            } else if map.contains_key(RawEnvoyConfig::KEY) {
                expand_policy::<RawEnvoyConfig>(map, at, dir, files, problems);
            }
            for (key, value) in map.iter_mut() {
                if !is_config_key(key) {
                    expand(value, &join(at, key), dir, files, problems);
                }
            }
        }
        Value::Array(list) => {
            for (i, value) in list.iter_mut().enumerate() {
                expand(value, &format!("{at}[{i}]"), dir, files, problems);
            }
        }
        _ => {}
    }
}

/// `at.key`, or `key` at the top.
fn join(at: &str, key: &str) -> String {
    if at.is_empty() {
        key.to_string()
    } else {
        format!("{at}.{key}")
    }
}

/// One policy object naming a config: the file's settings under the written ones.
fn expand_policy<K: ConfigKind>(
    policy: &mut Map<String, Value>,
    at: &str,
    dir: &Path,
    files: &mut ConfigFiles,
    problems: &mut Vec<Problem>,
) {
    // A config of the wrong shape has its problem listed by the shape check.
    let Ok(mut raw) = K::deserialize(&policy[K::KEY]) else {
        return;
    };
    if raw.read_as().is_some() {
        return;
    }
    let path = dir.join(raw.file());
    let imported = files
        .get::<K>(&path)
        .map_err(|reason| (String::new(), reason))
        .and_then(|config| raw.import(config));
    let (mut settings, words) = match imported {
        Ok(found) => found,
        Err((inner, reason)) => {
            let inside = if inner.is_empty() {
                String::new()
            } else {
                format!(" at {inner}")
            };
            problems.push(Problem::new(
                format!("{}.file", join(at, K::KEY)),
                format!("{}{inside}: {reason}", quote(raw.file())),
            ));
            // Its problem is listed: the rules need not say it again.
            policy.shift_remove(K::KEY);
            return;
        }
    };
    let written: Map<String, Value> = policy
        .iter()
        .filter(|(k, _)| *k != K::KEY)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    merge(&mut settings, &Value::Object(written));
    *raw.read_as() = Some(words);
    let mut out = Map::new();
    out.insert(
        K::KEY.into(),
        serde_json::to_value(&raw).unwrap_or(Value::Null),
    );
    if let Value::Object(s) = settings {
        out.extend(s);
    }
    *policy = out;
}
