//! What can be wrong with a scenario file, worded for the person who wrote it.

use std::fmt;

/// One problem in a scenario, at a JSON path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Where: dotted keys with `[i]` for array items, e.g. `policy.retry.max_attempts`.
    pub path: String,
    /// The rule, the value seen and, where it helps, the fix.
    pub message: String,
}

impl Problem {
    /// A problem at `path`.
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Problem {
            path: path.into(),
            message: message.into(),
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
    /// The file could not be read.
    #[error("{file}: cannot read the scenario: {source}")]
    Read {
        /// The file as named on the command line.
        file: String,
        /// Why.
        source: std::io::Error,
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
    #[error("{file}: {} problem{} in the scenario:\n{}", .problems.len(),
        if .problems.len() == 1 { "" } else { "s" },
        .problems.iter().map(|p| format!("  - {p}")).collect::<Vec<_>>().join("\n"))]
    Invalid {
        /// The file.
        file: String,
        /// Every problem found.
        problems: Vec<Problem>,
    },
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
