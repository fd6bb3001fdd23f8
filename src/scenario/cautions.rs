//! Settings that are valid but most likely not what the file means: `check` and `run` print
//! them as warnings and go on. A caution never stops a run; a rule that a scenario must obey
//! is a problem in `validate` instead.

use std::fmt;

use super::schema::RawScenario;
use super::{Experiment, Scenario};

/// One caution: the JSON path of the setting and what it does that the file may not mean.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caution {
    /// The path of the setting, as problems name it (`services.api.calls[0].policy`).
    pub path: String,
    /// What happens, and the fix.
    pub text: String,
    /// The variants it holds in, when not every one: their names.
    pub only_in: Vec<String>,
}

impl fmt::Display for Caution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.text)?;
        if !self.only_in.is_empty() {
            write!(f, " (in {})", self.only_in.join(", "))?;
        }
        Ok(())
    }
}

/// The cautions of every variant of `e` at its first sweep point (a sweep changes one value,
/// not the shape of the calls), each once.
pub fn cautions(e: &Experiment) -> Vec<Caution> {
    let variants = e.points.first().map_or(&[][..], |p| &p.variants[..]);
    let mut found: Vec<(String, String, Vec<String>)> = Vec::new();
    for v in variants {
        for (path, text) in of_scenario(&v.scenario, &v.resolved) {
            match found.iter_mut().find(|(p, t, _)| *p == path && *t == text) {
                Some((_, _, names)) => names.push(v.name.clone()),
                None => found.push((path, text, vec![v.name.clone()])),
            }
        }
    }
    found
        .into_iter()
        .map(|(path, text, names)| Caution {
            path,
            text,
            only_in: if names.len() == variants.len() {
                Vec::new()
            } else {
                names
            },
        })
        .collect()
}

/// The name of call `i` of service `service` where the file writes its calls by name.
fn call_name<'a>(raw: &'a RawScenario, service: &str, i: usize) -> Option<&'a str> {
    let (_, s) = raw
        .services
        .as_ref()?
        .0
        .iter()
        .find(|(n, _)| n == service)?;
    s.calls.as_ref()?.calls.get(i)?.0.as_deref()
}

/// The cautions of one scenario (`raw` as resolved, for the calls' names), as (path, text).
fn of_scenario(s: &Scenario, raw: &RawScenario) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for service in &s.services {
        for (i, call) in service.calls.iter().enumerate() {
            let p = &call.policy;
            // A propagated deadline bounds the call by the time its caller still waits.
            if p.timeout.is_none() && p.deadline.is_none() && !p.propagate_deadline {
                let at = match call_name(raw, &service.name, i) {
                    Some(name) => format!("calls.{name}"),
                    None => format!("calls[{i}]"),
                };
                out.push((
                    format!("services.{}.{at}.policy", service.name),
                    format!(
                        "has no timeout and no deadline: each attempt on the call to {} waits as long as that service takes, holding a worker of {} all the while (a call's policy does not inherit the clients'); set \"timeout\" (e.g. \"1s\") unless waiting for ever is what {} does",
                        s.services[call.to].name, service.name, service.name
                    ),
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{LoadOptions, load_str};

    fn graph(policy: &str, variants: &str) -> Experiment {
        let text = format!(
            r#"{{"name": "g", "duration": "1s", "clients": {{"count": 1, "workload": {{"open": {{"rate_per_s": 1}}}}, "entry": "a"}},
               "services": {{"a": {{"service_time": {{"constant": "1ms"}}, "calls": [{{"to": "b", "policy": {policy}}}]}},
                             "b": {{"service_time": {{"constant": "1ms"}}}}}}{variants}}}"#
        );
        load_str(&text, "g.json", &LoadOptions::default()).unwrap()
    }

    #[test]
    fn a_call_that_waits_for_ever_is_cautioned_at_its_path() {
        let c = cautions(&graph("{}", ""));
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].path, "services.a.calls[0].policy");
        assert!(c[0].text.contains("no timeout and no deadline"), "{}", c[0]);
        assert!(c[0].only_in.is_empty());
    }

    #[test]
    fn a_call_written_by_name_is_cautioned_at_its_name() {
        let text = r#"{"name": "g", "duration": "1s", "clients": {"count": 1, "workload": {"open": {"rate_per_s": 1}}, "entry": "a"},
            "services": {"a": {"service_time": {"constant": "1ms"}, "calls": {"fast": {"to": "b", "policy": {"timeout": "1s"}}, "b": {}}},
                         "b": {"service_time": {"constant": "1ms"}}}}"#;
        let c = cautions(&load_str(text, "g.json", &LoadOptions::default()).unwrap());
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].path, "services.a.calls.b.policy");
    }

    #[test]
    fn a_timeout_a_deadline_or_a_propagated_deadline_bounds_the_wait() {
        for policy in [
            r#"{"timeout": "1s"}"#,
            r#"{"deadline": "1s"}"#,
            r#"{"propagate_deadline": true}"#,
        ] {
            assert!(cautions(&graph(policy, "")).is_empty(), "{policy}");
        }
    }

    #[test]
    fn a_caution_of_some_variants_names_them() {
        let variants = r#", "variants": [{"name": "bounded", "patch": {}},
            {"name": "unbounded", "patch": {"services": {"a": {"calls": [{"to": "b", "policy": {}}]}}}}]"#;
        let c = cautions(&graph(r#"{"timeout": "1s"}"#, variants));
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].only_in, vec!["unbounded".to_string()]);
        assert!(c[0].to_string().ends_with("(in unbounded)"));
    }

    #[test]
    fn a_single_server_has_no_caution() {
        let text = r#"{"name": "s", "duration": "1s", "clients": {"count": 1, "workload": {"open": {"rate_per_s": 1}}},
            "server": {"service_time": {"constant": "1ms"}}}"#;
        let e = load_str(text, "s.json", &LoadOptions::default()).unwrap();
        assert!(cautions(&e).is_empty());
    }
}
