//! `server.discipline`: the order in which waiting attempts are served and which are shed,
//! in one place: the raw setting (a word, or `codel`/`adaptive_lifo` with their settings), the
//! rules and defaults that give the checked [`Discipline`], and its words in report.md. The
//! disciplines themselves are `crate::model::server`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::engine::SimDuration;
use crate::model::Discipline;
use crate::scenario::check::{Checker, written};
use crate::scenario::schema::DurationText;

/// The longest wait in a standing queue under `codel` by default (`target`).
pub const DEFAULT_CODEL_TARGET: SimDuration = SimDuration::from_millis(5);
/// How long the waiting room must stay non-empty for the queue to stand, by default
/// (`interval` of `codel` and `adaptive_lifo`).
pub const DEFAULT_SHED_INTERVAL: SimDuration = SimDuration::from_millis(100);

/// `server.discipline`: a word, or a shedding discipline with its settings.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum RawDiscipline {
    /// "fifo", "lifo", "codel" or "adaptive_lifo" (the last two with their defaults).
    Word(RawDisciplineWord),
    /// {"codel": {...}} or {"adaptive_lifo": {...}}.
    Settings(RawDisciplineSettings),
}

/// The disciplines by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RawDisciplineWord {
    /// First come, first served.
    Fifo,
    /// Last come, first served.
    Lifo,
    /// Controlled delay with the default target and interval.
    Codel,
    /// Adaptive LIFO with the default interval.
    AdaptiveLifo,
}

/// A shedding discipline written as an object: one key naming it.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum RawDisciplineSettings {
    /// Controlled delay: shed at dequeue an attempt that waited too long.
    Codel(RawCodel),
    /// Newest first while the queue stands, oldest first otherwise.
    AdaptiveLifo(RawAdaptiveLifo),
}

/// `discipline.codel`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawCodel {
    /// The longest wait while the queue stands (default "5ms").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<DurationText>,
    /// How long the waiting room must stay non-empty for the queue to stand, and the
    /// longest wait otherwise (default "100ms").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<DurationText>,
}

/// `discipline.adaptive_lifo`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawAdaptiveLifo {
    /// How long the waiting room must stay non-empty for the queue to stand (default
    /// "100ms").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<DurationText>,
}

/// `discipline` at `path`: a word takes the defaults; `codel`'s and `adaptive_lifo`'s
/// durations are longer than zero, and `codel`'s target shorter than its interval.
pub(in crate::scenario) fn check(
    c: &mut Checker,
    path: &str,
    raw: &mut Option<RawDiscipline>,
) -> Discipline {
    let discipline = read_discipline(c, path, raw.as_ref());
    // The discipline that runs, with its settings filled in.
    *raw = Some(match discipline {
        Discipline::Fifo => RawDiscipline::Word(RawDisciplineWord::Fifo),
        Discipline::Lifo => RawDiscipline::Word(RawDisciplineWord::Lifo),
        Discipline::Codel { target, interval } => {
            RawDiscipline::Settings(RawDisciplineSettings::Codel(RawCodel {
                target: Some(written(target)),
                interval: Some(written(interval)),
            }))
        }
        Discipline::AdaptiveLifo { interval } => {
            RawDiscipline::Settings(RawDisciplineSettings::AdaptiveLifo(RawAdaptiveLifo {
                interval: Some(written(interval)),
            }))
        }
    });
    discipline
}

/// [`check`], read.
fn read_discipline(c: &mut Checker, path: &str, raw: Option<&RawDiscipline>) -> Discipline {
    let mut read = |key: &str, d: Option<&DurationText>, default: SimDuration| match d {
        None => Some(default),
        Some(d) => c.positive_duration(&format!("{path}.{key}"), d),
    };
    let (codel, adaptive) = match raw {
        None | Some(RawDiscipline::Word(RawDisciplineWord::Fifo)) => return Discipline::Fifo,
        Some(RawDiscipline::Word(RawDisciplineWord::Lifo)) => return Discipline::Lifo,
        Some(RawDiscipline::Word(RawDisciplineWord::Codel)) => (Some(RawCodel::default()), None),
        Some(RawDiscipline::Word(RawDisciplineWord::AdaptiveLifo)) => {
            (None, Some(RawAdaptiveLifo::default()))
        }
        Some(RawDiscipline::Settings(RawDisciplineSettings::Codel(k))) => (Some(k.clone()), None),
        Some(RawDiscipline::Settings(RawDisciplineSettings::AdaptiveLifo(k))) => {
            (None, Some(k.clone()))
        }
    };
    if let Some(k) = codel {
        let target = read("codel.target", k.target.as_ref(), DEFAULT_CODEL_TARGET);
        let interval = read("codel.interval", k.interval.as_ref(), DEFAULT_SHED_INTERVAL);
        let (Some(target), Some(interval)) = (target, interval) else {
            return Discipline::Fifo;
        };
        if target >= interval {
            c.err(
                &format!("{path}.codel.target"),
                format!(
                    "must be shorter than the interval (got target {target}, interval {interval}): the target bounds the wait in a standing queue, the interval the wait right after the queue was empty; lower target or raise interval"
                ),
            );
        }
        return Discipline::Codel { target, interval };
    }
    let k = adaptive.unwrap_or_default();
    match read(
        "adaptive_lifo.interval",
        k.interval.as_ref(),
        DEFAULT_SHED_INTERVAL,
    ) {
        Some(interval) => Discipline::AdaptiveLifo { interval },
        None => Discipline::Fifo,
    }
}

/// The order of a waiting room in a phrase that follows its size: empty for FIFO.
pub(in crate::scenario) fn phrase(d: &Discipline) -> String {
    match *d {
        Discipline::Fifo => String::new(),
        Discipline::Lifo => ", newest first (LIFO)".to_string(),
        Discipline::Codel { target, interval } => format!(
            ", oldest first with CoDel shedding: once the waiting room has held attempts for {interval} without a break, an attempt that waited longer than {target} is shed when its turn comes ({interval} right after the room was empty), answered rejected like a full server's refusal"
        ),
        Discipline::AdaptiveLifo { interval } => format!(
            ", adaptive LIFO: oldest first, newest first once the waiting room has held attempts for {interval} without a break (nothing is shed)"
        ),
    }
}
