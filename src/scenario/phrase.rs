//! The small words every setting's sentence is made of: a distribution, a share, whose a
//! budget or breaker is, a name escaped for Markdown. The settings' own words (`sentence`,
//! `phrase`) and `words.rs`, which strings them together, both use these; this module uses
//! neither.

use crate::model::{Dist, Scope};

/// Whose a budget or breaker is.
pub(in crate::scenario) fn scope(s: Scope) -> &'static str {
    match s {
        Scope::PerClient => "each client its own",
        Scope::Shared => "one shared by all clients",
    }
}

/// A share as a percentage with at most three decimals and no trailing zeros: 0.05 -> "5",
/// not the "5.000000000000001" that 100 * 0.05 prints.
pub(in crate::scenario) fn percent(share: f64) -> String {
    let text = format!("{:.3}", 100.0 * share);
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A distribution in words.
pub(in crate::scenario) fn words(d: &Dist) -> String {
    match d {
        Dist::Constant(c) => format!("{c}"),
        Dist::Exponential { mean, .. } => format!("an exponential time with mean {mean}"),
        Dist::Uniform { min, max } => format!("between {min} and {max} (uniform)"),
        Dist::Normal { mean, sd, .. } => format!("|Normal({mean}, {sd})|"),
        Dist::LogNormal { median, sigma, .. } => {
            format!("a log-normal time with median {median} (sigma {sigma})")
        }
        Dist::Mixture { parts, .. } => {
            let parts: Vec<String> = parts
                .iter()
                .map(|(w, d)| format!("{:.0} % {}", 100.0 * w, words(d)))
                .collect();
            format!("a mixture: {}", parts.join(", "))
        }
    }
}

/// A name (or a sweep value, a label) as Markdown text: every character that could start
/// markup, an HTML tag or an entity, or break a table is backslash-escaped, and line breaks and
/// other control characters become spaces, so the text reads as itself on one line.
pub fn escape(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        match c {
            '|' | '*' | '_' | '`' | '[' | ']' | '<' | '>' | '#' | '\\' | '&' | '~' | '!' | '$' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// The text with its first letter in upper case.
pub fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or(String::new(), |c| {
        c.to_uppercase().chain(chars).collect::<String>()
    })
}
