//! What a search found: each candidate's numbers at each fault, over the suite (worst case
//! and mean), its standing, the Pareto fronts and the recommendation.

use super::file::Tune;
use super::race::{Dropped, Paired, Searched, estimate, faults_of, paired};

/// A measure's summary at one fault: the mean over replications (a latency percentile: the
/// percentile of every replication's latencies pooled) and the 95 % half-width of the
/// replications' values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Value {
    /// The value, in summary.json's unit.
    pub value: f64,
    /// The 95 % half-width.
    pub half_width: f64,
}

/// Where a candidate stands at the end.
#[derive(Debug, Clone, PartialEq)]
pub enum Standing {
    /// On the front of the worst case over the suite.
    Front,
    /// Kept every constraint and ran to the end, but another candidate is as good
    /// everywhere over the suite's worst case and better somewhere.
    Dominated { by: usize },
    /// Ran to the end but breaks a constraint (its estimate is outside the bound).
    Breaks { constraint: usize, fault: usize },
    /// Some replication hit a limit and stopped early: it may not win.
    Truncated,
    /// Left the race.
    Dropped(Dropped),
}

impl Standing {
    /// One word for tables and CSVs.
    pub fn word(&self) -> &'static str {
        match self {
            Standing::Front => "front",
            Standing::Dominated { .. } => "dominated",
            Standing::Breaks { .. } => "breaks a constraint",
            Standing::Truncated => "truncated",
            Standing::Dropped(_) => "dropped",
        }
    }
}

/// Everything decided from a search.
#[derive(Debug, Clone)]
pub struct Found {
    /// Per candidate, per fault, per measure.
    pub values: Vec<Vec<Vec<Option<Value>>>>,
    /// Per candidate, per objective: the worst over the faults where it applies.
    pub worst: Vec<Vec<Option<Value>>>,
    /// Per candidate, per objective: the mean over the faults where it applies.
    pub mean: Vec<Vec<Option<Value>>>,
    /// Per candidate.
    pub standing: Vec<Standing>,
    /// The front of the worst case, in candidate order.
    pub front: Vec<usize>,
    /// The front of the mean over the suite, in candidate order.
    pub mean_front: Vec<usize>,
    /// The recommended candidate, if any candidate is on the front.
    pub recommended: Option<usize>,
}

/// Decides what the search found.
pub fn decide(tune: &Tune, s: &Searched) -> Found {
    let values: Vec<Vec<Vec<Option<Value>>>> = s
        .cells
        .iter()
        .map(|faults| {
            faults
                .iter()
                .map(|cell| {
                    s.measures
                        .iter()
                        .zip(&cell.samples)
                        .map(|(m, xs)| {
                            let e = estimate(xs)?;
                            let value = if m.pooled() {
                                m.of_pool(&cell.pool)?
                            } else {
                                e.mean
                            };
                            Some(Value {
                                value,
                                half_width: e.half_width,
                            })
                        })
                        .collect()
                })
                .collect()
        })
        .collect();
    let index = |o: usize| {
        s.measures
            .iter()
            .position(|m| *m == tune.objectives[o].measure)
            .expect("every objective is a measure")
    };
    let over = |c: usize, worst: bool| -> Vec<Option<Value>> {
        (0..tune.objectives.len())
            .map(|o| {
                suite(
                    &values[c],
                    index(o),
                    tune.objectives[o].measure.sign(),
                    worst,
                )
            })
            .collect()
    };
    let n = tune.candidates.len();
    let worst: Vec<_> = (0..n).map(|c| over(c, true)).collect();
    let mean: Vec<_> = (0..n).map(|c| over(c, false)).collect();
    let mut standing: Vec<Standing> = (0..n).map(|c| standing_of(tune, s, &values, c)).collect();
    let eligible: Vec<usize> = (0..n)
        .filter(|&c| standing[c] == Standing::Front && worst[c].iter().all(Option::is_some))
        .collect();
    let signs: Vec<f64> = tune.objectives.iter().map(|o| o.measure.sign()).collect();
    let front = pareto(&eligible, &worst, &signs);
    let mean_front = pareto(&eligible, &mean, &signs);
    for &c in &eligible {
        if !front.contains(&c) {
            let by = eligible
                .iter()
                .copied()
                .find(|&b| beats(&worst[b], &worst[c], &signs))
                .expect("a candidate off the front is beaten by one");
            standing[c] = Standing::Dominated { by };
        }
    }
    let recommended = recommend(tune, s, &front, &worst);
    Found {
        values,
        worst,
        mean,
        standing,
        front,
        mean_front,
        recommended,
    }
}

/// A measure over the suite: the worst of the faults (by `sign`, +1 where higher is better),
/// or their mean; `None` where it applies at no fault. The mean's half-width is the mean of
/// the half-widths: the faults share random numbers, so their errors are not independent,
/// and this bound holds whatever their correlation.
fn suite(per_fault: &[Vec<Option<Value>>], m: usize, sign: f64, worst: bool) -> Option<Value> {
    let at: Vec<Value> = per_fault.iter().filter_map(|v| v[m]).collect();
    if at.is_empty() {
        return None;
    }
    if worst {
        return at
            .iter()
            .copied()
            .min_by(|a, b| (sign * a.value).total_cmp(&(sign * b.value)));
    }
    let k = at.len() as f64;
    Some(Value {
        value: at.iter().map(|v| v.value).sum::<f64>() / k,
        half_width: at.iter().map(|v| v.half_width).sum::<f64>() / k,
    })
}

/// Where candidate `c` stands before the fronts are drawn: `Front` if it may be on one.
fn standing_of(
    tune: &Tune,
    s: &Searched,
    values: &[Vec<Vec<Option<Value>>>],
    c: usize,
) -> Standing {
    if let Some(d) = &s.dropped[c] {
        return Standing::Dropped(d.clone());
    }
    if s.cells[c].iter().any(|cell| cell.truncated > 0) {
        return Standing::Truncated;
    }
    for (k, constraint) in tune.constraints.iter().enumerate() {
        let m = s
            .measures
            .iter()
            .position(|x| *x == constraint.measure)
            .expect("every constraint is a measure");
        for f in faults_of(tune, k) {
            if values[c][f][m].is_some_and(|v| !constraint.bound.holds(v.value)) {
                return Standing::Breaks {
                    constraint: k,
                    fault: f,
                };
            }
        }
    }
    Standing::Front
}

/// Whether objective vector `a` is at least as good as `b` everywhere and better somewhere.
fn beats(a: &[Option<Value>], b: &[Option<Value>], signs: &[f64]) -> bool {
    let mut better = false;
    for ((x, y), s) in a.iter().zip(b).zip(signs) {
        let (Some(x), Some(y)) = (x, y) else {
            return false;
        };
        let (x, y) = (s * x.value, s * y.value);
        if x < y {
            return false;
        }
        better |= x > y;
    }
    better
}

/// The candidates of `among` that no other beats.
fn pareto(among: &[usize], of: &[Vec<Option<Value>>], signs: &[f64]) -> Vec<usize> {
    among
        .iter()
        .copied()
        .filter(|&c| {
            !among
                .iter()
                .any(|&b| b != c && beats(&of[b], &of[c], signs))
        })
        .collect()
}

/// The recommendation from the worst-case front: the best on the first objective; among
/// those within its tolerance of the best or no worse with confidence at any fault (paired),
/// the best on the second; and so on;
/// among those still tied, the earliest candidate (each setting's values are listed in order
/// of preference).
fn recommend(
    tune: &Tune,
    s: &Searched,
    front: &[usize],
    worst: &[Vec<Option<Value>>],
) -> Option<usize> {
    let mut tied: Vec<usize> = front.to_vec();
    for (o, objective) in tune.objectives.iter().enumerate() {
        let sign = objective.measure.sign();
        let m = s.measures.iter().position(|x| *x == objective.measure)?;
        let key = |c: usize| sign * worst[c][o].map_or(f64::NEG_INFINITY, |v| v.value);
        let best = *tied
            .iter()
            .max_by(|&&a, &&b| key(a).total_cmp(&key(b)).then(b.cmp(&a)))?;
        let top = worst[best][o].map_or(0.0, |v| v.value);
        let tolerance = objective.tolerance_at(top);
        tied.retain(|&c| {
            let close = worst[c][o].is_some_and(|v| (v.value - top).abs() <= tolerance);
            close || (0..tune.faults.len()).all(|f| paired(s, best, c, f, m) != Paired::Better)
        });
    }
    tied.into_iter().min()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(x: f64) -> Option<Value> {
        Some(Value {
            value: x,
            half_width: 0.0,
        })
    }

    #[test]
    fn the_front_keeps_every_trade_off_and_drops_what_is_beaten() {
        // Objective 0 higher is better, objective 1 lower.
        let signs = [1.0, -1.0];
        let of = vec![
            vec![v(0.5), v(1.0)],
            vec![v(0.75), v(1.5)],
            vec![v(0.5), v(1.5)],  // beaten by 0: same success, more load
            vec![v(0.75), v(1.5)], // equal to 1: neither beats the other
            vec![v(0.9), None],    // an objective that does not apply: on no front
        ];
        assert_eq!(pareto(&[0, 1, 2, 3], &of, &signs), [0, 1, 3]);
        assert!(!beats(&of[4], &of[0], &signs) && !beats(&of[0], &of[4], &signs));
    }

    #[test]
    fn the_worst_fault_is_worst_in_the_objectives_direction_and_the_mean_averages() {
        let faults = vec![vec![v(1.0)], vec![v(3.0)], vec![None]];
        assert_eq!(suite(&faults, 0, 1.0, true).unwrap().value, 1.0);
        assert_eq!(suite(&faults, 0, -1.0, true).unwrap().value, 3.0);
        assert_eq!(suite(&faults, 0, 1.0, false).unwrap().value, 2.0);
        assert_eq!(suite(&[vec![None]], 0, 1.0, true), None);
    }
}
