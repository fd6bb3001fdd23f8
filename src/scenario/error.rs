//! What can be wrong with a scenario file, worded for the person who wrote it.

use std::fmt;

use serde_json::Value;

/// Characters of a value or of user text that a message quotes before it cuts it off.
const QUOTED_CHARS: usize = 30;

/// `v` as JSON, cut off after [`QUOTED_CHARS`] characters (with "..."), for messages. Costs
/// no more than the part it shows, however large `v` is, and cuts only between characters.
pub(crate) fn short(v: &Value) -> String {
    /// Takes bytes until it holds enough, then refuses the rest.
    struct Head(Vec<u8>);
    impl std::io::Write for Head {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let room = 4 * QUOTED_CHARS + 4 - self.0.len();
            if room == 0 {
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            let n = buf.len().min(room);
            self.0.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut head = Head(Vec::new());
    // Stops with an error once the head is full: that is the point.
    let _ = serde_json::to_writer(&mut head, v);
    cut(&String::from_utf8_lossy(&head.0))
}

/// `text` in quotes for messages, cut short if it is long, with control characters escaped
/// (`"a\nb"`) so that a message stays one line.
pub(crate) fn quote(text: &str) -> String {
    format!("{:?}", cut(text))
}

/// `x` for messages: as written for everyday numbers, in exponent form (`1e308`) for huge and
/// tiny ones, which would otherwise print hundreds of digits.
pub(crate) fn num(x: f64) -> String {
    if x != 0.0 && x.is_finite() && !(1e-6..1e15).contains(&x.abs()) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// `text` cut off after [`QUOTED_CHARS`] characters, with "..." when something was cut.
pub(crate) fn cut(text: &str) -> String {
    match text.char_indices().nth(QUOTED_CHARS) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_string(),
    }
}

/// One problem in a scenario, at a JSON path.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Problem {
    /// Where: dotted keys with `[i]` for array items, e.g. `policy.retry.max_attempts`.
    pub path: String,
    /// The rule, the value seen and, where it helps, the fix.
    pub message: String,
    /// How many more problems of the same kind (the same rule, at paths that differ only in
    /// list indices) were found after this one and are not listed.
    pub more: usize,
}

impl Problem {
    /// A problem at `path`.
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Problem {
            path: path.into(),
            message: message.into(),
            more: 0,
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// A scenario file that cannot be run.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read. The message says why, so the I/O error is not also its
    /// source: an error chain would print the reason twice.
    #[error("{file}: cannot read the scenario: {reason}")]
    Read {
        /// The file as named on the command line.
        file: String,
        /// Why.
        reason: std::io::Error,
    },
    /// The file is not JSON.
    #[error("{file}:{line}:{column}: not valid JSON: {message}")]
    Syntax {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the parser found.
        message: String,
    },
    /// The JSON breaks one or more rules of the format.
    #[error("{}", listing(.file, .problems))]
    Invalid {
        /// The file.
        file: String,
        /// Every problem found; of many of one kind, the first few, each kind's last listed
        /// one counting the rest in [`Problem::more`].
        problems: Vec<Problem>,
    },
}

/// "FILE: N problems in the scenario:" and one line per problem listed, each kind's last
/// followed by "and M more like this" when more were found.
fn listing(file: &str, problems: &[Problem]) -> String {
    let total: usize = problems.iter().map(|p| 1 + p.more).sum();
    let mut out = format!(
        "{file}: {total} problem{} in the scenario:",
        if total == 1 { "" } else { "s" }
    );
    for p in problems {
        out.push_str(&format!("\n  - {p}"));
        if p.more > 0 {
            out.push_str(&format!("\n    and {} more like this", p.more));
        }
    }
    out
}

impl ScenarioError {
    /// The problems, for callers that want them one by one.
    pub fn problems(&self) -> Vec<Problem> {
        match self {
            ScenarioError::Invalid { problems, .. } => problems.clone(),
            other => vec![Problem::new("", other.to_string())],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn quoted_values_are_cut_between_characters() {
        // 31 two-byte characters: a cut at byte 30 would fall inside one.
        let text = "é".repeat(31);
        assert_eq!(short(&json!(text)), format!("\"{}...", "é".repeat(29)));
        assert_eq!(cut(&text), format!("{}...", "é".repeat(30)));
        assert_eq!(cut("short"), "short");
        assert_eq!(quote("a\nb\t\u{7f}é"), r#""a\nb\t\u{7f}é""#);
        assert_eq!(num(1e308), "1e308");
        assert_eq!(num(-2.5e-9), "-2.5e-9");
        assert_eq!(num(10.0), "10");
        assert_eq!(num(0.05), "0.05");
        assert_eq!(short(&json!({"a": 1})), "{\"a\":1}");
        // A large value costs no more than what is shown.
        let big = json!(vec!["🦀"; 1_000_000]);
        assert_eq!(short(&big).chars().count(), 33);
    }
}
