//! A tune's files: tune.json (everything found), candidates.csv (every candidate at every
//! fault) and report.md (what was searched, on which faults, what wins and what it costs).

use std::fmt::Write as _;

use serde_json::{Map, Value as Json, json};

use super::file::{Tune, value_text};
use super::front::{Found, Standing, Value};
use super::measure::Measure;
use super::race::{Dropped, Searched};

/// A summary as JSON: `{"value": .., "ci95": ..}`, or null.
fn summary(v: Option<Value>) -> Json {
    v.map_or(
        Json::Null,
        |v| json!({"value": v.value, "ci95": v.half_width}),
    )
}

/// Why candidate `c` stands where it does, in words.
pub fn reason(tune: &Tune, s: &Searched, found: &Found, c: usize) -> String {
    let constraint = |k: usize, f: usize| {
        let x = &tune.constraints[k];
        format!(
            "{} {} at {}",
            x.measure.label,
            x.bound.text(&x.measure),
            tune.faults[f]
        )
    };
    match &found.standing[c] {
        Standing::Front if found.recommended == Some(c) => "on the front; recommended".into(),
        Standing::Front => "on the front".into(),
        Standing::Dominated { by } => format!(
            "candidate {by} ({}) is as good at every objective's worst fault and better at one",
            tune.label(*by)
        ),
        Standing::Breaks {
            constraint: k,
            fault,
        } => format!("breaks {}", constraint(*k, *fault)),
        Standing::Truncated => {
            "a replication hit a limit and stopped early, so its numbers describe a cut-short run"
                .into()
        }
        Standing::Dropped(Dropped::Breaks {
            constraint: k,
            fault,
        }) => format!(
            "dropped after {} replications: breaks {} with 95 % confidence",
            s.replications[c],
            constraint(*k, *fault)
        ),
        Standing::Dropped(Dropped::Dominated { by }) => format!(
            "dropped after {} replications: candidate {by} ({}) is better with 95 % confidence at some fault and no worse at any",
            s.replications[c],
            tune.label(*by)
        ),
    }
}

/// tune.json.
pub fn tune_json(tune: &Tune, s: &Searched, found: &Found) -> Vec<u8> {
    let objective_map = |v: &[Option<Value>]| -> Json {
        let mut m = Map::new();
        for (o, x) in tune.objectives.iter().zip(v) {
            m.insert(o.measure.key.clone(), summary(*x));
        }
        Json::Object(m)
    };
    let candidates: Vec<Json> = (0..tune.candidates.len())
        .map(|c| {
            let mut settings = Map::new();
            for (st, &i) in tune.settings.iter().zip(&tune.candidates[c].choice) {
                settings.insert(st.path.clone(), st.values[i].clone());
            }
            let mut faults = Map::new();
            for (f, name) in tune.faults.iter().enumerate() {
                let mut m = Map::new();
                for (k, measure) in s.measures.iter().enumerate() {
                    m.insert(measure.key.clone(), summary(found.values[c][f][k]));
                }
                faults.insert(name.clone(), Json::Object(m));
            }
            json!({
                "candidate": c,
                "settings": settings,
                "standing": found.standing[c].word(),
                "why": reason(tune, s, found, c),
                "replications": s.replications[c],
                "worst": objective_map(&found.worst[c]),
                "mean": objective_map(&found.mean[c]),
                "faults": faults,
            })
        })
        .collect();
    let doc = json!({
        "name": tune.name,
        "description": tune.description,
        "scenario": tune.scenario,
        "seed": tune.seed,
        "method": tune.method,
        "replications": tune.replications,
        "first_round": tune.first_round,
        "version": env!("CARGO_PKG_VERSION"),
        "faults": tune.faults,
        "search": tune.settings.iter().map(|s| json!({"path": s.path, "label": s.label, "values": s.values})).collect::<Vec<_>>(),
        "objectives": tune.objectives.iter().map(|o| json!({"metric": o.measure.key, "better": better(&o.measure)})).collect::<Vec<_>>(),
        "constraints": tune.constraints.iter().map(|c| json!({
            "metric": c.measure.key,
            "bound": c.bound.text(&c.measure),
            "fault": c.fault.map(|f| tune.faults[f].clone()),
        })).collect::<Vec<_>>(),
        "replications_spent": s.spent(tune.faults.len()),
        "replications_of_a_grid": tune.candidates.len() as u64 * tune.faults.len() as u64 * u64::from(tune.replications),
        "rounds": s.rounds,
        "front": found.front,
        "mean_front": found.mean_front,
        "recommended": found.recommended,
        "candidates": candidates,
    });
    let mut out = serde_json::to_vec_pretty(&doc).expect("a tune document serialises");
    out.push(b'\n');
    out
}

fn better(m: &Measure) -> &'static str {
    if m.sign() > 0.0 { "higher" } else { "lower" }
}

/// candidates.csv: one row per candidate and fault, every measure's value and half-width.
pub fn candidates_csv(tune: &Tune, s: &Searched, found: &Found) -> anyhow::Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut head: Vec<String> = vec!["candidate".into()];
    head.extend(tune.settings.iter().map(|s| s.path.clone()));
    head.extend(["standing", "replications", "fault"].map(String::from));
    for m in &s.measures {
        head.push(m.key.clone());
        head.push(format!("{}_ci95", m.key));
    }
    w.write_record(&head)?;
    for c in 0..tune.candidates.len() {
        for (f, fault) in tune.faults.iter().enumerate() {
            let mut row = vec![c.to_string()];
            row.extend(
                tune.settings
                    .iter()
                    .zip(&tune.candidates[c].choice)
                    .map(|(s, &i)| value_text(&s.values[i])),
            );
            row.extend([
                found.standing[c].word().to_string(),
                s.replications[c].to_string(),
                fault.clone(),
            ]);
            for v in &found.values[c][f] {
                match v {
                    Some(v) => row.extend([v.value.to_string(), v.half_width.to_string()]),
                    None => row.extend([String::new(), String::new()]),
                }
            }
            w.write_record(&row)?;
        }
    }
    w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))
}

/// A summary as report.md prints it: `99.2 % ± 0.1`, or where the interval would cross a
/// bound the value cannot (a share above 100 %), the interval cut there in brackets.
fn text(m: &Measure, v: Option<Value>) -> String {
    v.map_or("-".into(), |v| {
        let e = (v.value * m.scale, v.half_width * m.scale);
        let words = m.unit.estimate_text(m.decimals, e, true);
        match m.unit {
            crate::metrics::Unit::Percent if !words.contains('%') => format!("{words} %"),
            crate::metrics::Unit::Times if !words.contains('x') => format!("{words}x"),
            crate::metrics::Unit::Millis => format!("{words} ms"),
            _ => words,
        }
    })
}

/// report.md.
pub fn report_md(
    tune: &Tune,
    s: &Searched,
    found: &Found,
    captions: &[(String, String)],
    ext: &str,
) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# Tune: {}\n", tune.name);
    if let Some(d) = &tune.description {
        let _ = writeln!(md, "{d}\n");
    }
    searched_section(&mut md, tune, s);
    recommendation_section(&mut md, tune, s, found);
    front_section(&mut md, tune, found);
    let _ = writeln!(md, "## Figures\n");
    for (stem, caption) in captions {
        let _ = writeln!(md, "![{stem}]({stem}.{ext})\n\n{caption}\n");
    }
    left_section(&mut md, tune, s, found);
    md
}

fn searched_section(md: &mut String, tune: &Tune, s: &Searched) {
    let _ = writeln!(md, "## What was searched\n");
    let _ = writeln!(
        md,
        "Scenario `{}`, seed {}. Settings ({} candidates):\n",
        tune.scenario,
        tune.seed,
        tune.candidates.len()
    );
    for st in &tune.settings {
        let values: Vec<String> = st.values.iter().map(value_text).collect();
        let _ = writeln!(md, "- {} (`{}`): {}", st.label, st.path, values.join(", "));
    }
    let _ = writeln!(
        md,
        "\nFaults of the suite (the scenario's variants): {}.\n",
        tune.faults.join(", ")
    );
    let objectives: Vec<String> = tune
        .objectives
        .iter()
        .map(|o| format!("{} ({} is better)", o.measure.label, better(&o.measure)))
        .collect();
    let _ = writeln!(
        md,
        "Objectives, most important first: {}.",
        objectives.join("; ")
    );
    for c in &tune.constraints {
        let at = c.fault.map_or("at every fault".to_string(), |f| {
            format!("at {}", tune.faults[f])
        });
        let _ = writeln!(
            md,
            "Constraint: {} {} {at}.",
            c.measure.label,
            c.bound.text(&c.measure)
        );
    }
    let grid =
        tune.candidates.len() as u64 * tune.faults.len() as u64 * u64::from(tune.replications);
    let spent = s.spent(tune.faults.len());
    let how = match tune.method {
        super::file::Method::Race => format!(
            "A race: every candidate ran {} replications at each fault, then rounds doubling up to {}; after each round a candidate left once it broke a constraint with 95 % confidence, or once another candidate was better at some fault with confidence and no worse at any (paired by replication: every candidate's replication r draws the same random numbers).",
            tune.first_round, tune.replications
        ),
        super::file::Method::Grid => format!(
            "A grid: every candidate ran {} replications at each fault.",
            tune.replications
        ),
    };
    let _ = writeln!(
        md,
        "\n{how} Replications run: {spent} of the grid's {grid} ({:.0} %).\n",
        100.0 * spent as f64 / grid.max(1) as f64
    );
}

fn recommendation_section(md: &mut String, tune: &Tune, s: &Searched, found: &Found) {
    let _ = writeln!(md, "## What wins\n");
    let Some(r) = found.recommended else {
        let _ = writeln!(
            md,
            "No candidate kept every constraint and ran to the end: nothing is recommended. The table below says why each left.\n"
        );
        return;
    };
    let _ = writeln!(
        md,
        "**Recommended: {}** (candidate {r}, {} replications at each fault).\n",
        tune.label(r),
        s.replications[r]
    );
    let _ = writeln!(
        md,
        "It is the best of the worst-case front on {}; candidates within the tolerance of the best there ({}), or no worse with 95 % confidence at any fault, were decided by the next objective, then by the order the values are listed in.\n",
        tune.objectives[0].measure.label,
        tolerance_words(tune)
    );
    let _ = writeln!(
        md,
        "| objective | worst fault | mean over the suite |\n|---|---|---|"
    );
    for (o, obj) in tune.objectives.iter().enumerate() {
        let _ = writeln!(
            md,
            "| {} | {} | {} |",
            obj.measure.title(),
            text(&obj.measure, found.worst[r][o]),
            text(&obj.measure, found.mean[r][o])
        );
    }
    let _ = writeln!(md);
    for (k, c) in tune.constraints.iter().enumerate() {
        let m = s.measures.iter().position(|x| *x == c.measure).unwrap_or(0);
        let at = super::race::faults_of(tune, k);
        let tightest = at
            .iter()
            .filter_map(|&f| Some((f, found.values[r][f][m]?)))
            .min_by(|a, b| {
                c.bound
                    .slack(a.1.value)
                    .total_cmp(&c.bound.slack(b.1.value))
            });
        if let Some((f, v)) = tightest {
            let _ = writeln!(
                md,
                "Margin: {} is {} at {} against the bound {}: {} to spare.",
                c.measure.label,
                text(&c.measure, Some(v)),
                tune.faults[f],
                c.bound.text(&c.measure),
                c.measure.text(c.bound.slack(v.value))
            );
        }
    }
    let o = &tune.objectives[0].measure;
    let runner_up = found
        .front
        .iter()
        .copied()
        .filter(|&c| c != r)
        .max_by(|&a, &b| {
            let key =
                |c: usize| o.sign() * found.worst[c][0].map_or(f64::NEG_INFINITY, |v| v.value);
            key(a).total_cmp(&key(b))
        });
    if let (Some(u), Some(a), Some(b)) = (
        runner_up,
        found.worst[r][0],
        runner_up.and_then(|u| found.worst[u][0]),
    ) {
        let _ = writeln!(
            md,
            "Next on the front by {}: {} at {} worst case (recommended: {}).",
            o.label,
            tune.label(u),
            o.text(b.value),
            o.text(a.value)
        );
    }
    let _ = writeln!(md);
}

/// Each objective's tolerance in words.
fn tolerance_words(tune: &Tune) -> String {
    let words: Vec<String> = tune
        .objectives
        .iter()
        .map(|o| match o.tolerance {
            Some(t) => format!("{} {}", o.measure.label, o.measure.text(t)),
            None => format!("{} 1 % of the best", o.measure.label),
        })
        .collect();
    words.join("; ")
}

fn front_section(md: &mut String, tune: &Tune, found: &Found) {
    let _ = writeln!(md, "## The front\n");
    let _ = writeln!(
        md,
        "Candidates that kept every constraint, ran to the end and are beaten by none on the worst fault of the suite (each value: the mean over replications, a latency percentile pooled over them, ± its 95 % half-width).\n"
    );
    let mut head = String::from("| candidate |");
    let mut rule = String::from("|---|");
    for o in &tune.objectives {
        let _ = write!(head, " {}: worst | mean |", o.measure.title());
        rule.push_str("---|---|");
    }
    let _ = writeln!(md, "{head}\n{rule}");
    for &c in &found.front {
        let mut row = format!(
            "| {}{} |",
            tune.label(c),
            if found.recommended == Some(c) {
                " **(recommended)**"
            } else {
                ""
            }
        );
        for (o, obj) in tune.objectives.iter().enumerate() {
            let _ = write!(
                row,
                " {} | {} |",
                text(&obj.measure, found.worst[c][o]),
                text(&obj.measure, found.mean[c][o])
            );
        }
        let _ = writeln!(md, "{row}");
    }
    let also: Vec<String> = found
        .mean_front
        .iter()
        .filter(|c| !found.front.contains(c))
        .map(|&c| tune.label(c))
        .collect();
    if !also.is_empty() {
        let _ = writeln!(
            md,
            "\nOn the front of the mean over the suite but not of its worst fault: {}.",
            also.join("; ")
        );
    }
    let _ = writeln!(md);
}

fn left_section(md: &mut String, tune: &Tune, s: &Searched, found: &Found) {
    let off: Vec<usize> = (0..tune.candidates.len())
        .filter(|&c| found.standing[c] != Standing::Front)
        .collect();
    if off.is_empty() {
        return;
    }
    let _ = writeln!(
        md,
        "## Candidates not on the front\n\n| candidate | why |\n|---|---|"
    );
    for c in off {
        let _ = writeln!(md, "| {} | {} |", tune.label(c), reason(tune, s, found, c));
    }
    let _ = writeln!(
        md,
        "\nEvery candidate's numbers at every fault are in candidates.csv and tune.json."
    );
}
