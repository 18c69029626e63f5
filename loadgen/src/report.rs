//! The results table: each scenario run yields measurements; the same figure from several runs
//! is summarised (median, min–max) and compared with its design target.

use std::collections::BTreeMap;

use crate::stats::{Summary, fmt_num};

/// How a figure is judged against its target.
#[derive(Clone, Copy, Debug)]
pub enum Target {
    /// At most this much.
    AtMost(f64),
    /// At least this much.
    AtLeast(f64),
    /// Exactly this value.
    Exactly(f64),
}

impl Target {
    /// `"met"`, or how far the median misses.
    fn verdict(self, median: f64) -> String {
        let (ok, goal) = match self {
            Self::AtMost(t) => (median <= t, t),
            Self::AtLeast(t) => (median >= t, t),
            Self::Exactly(t) => ((median - t).abs() < 1e-9, t),
        };
        if ok {
            return "met".into();
        }
        let by = median - goal;
        let pct = match by / goal * 100.0 {
            p if !p.is_finite() => String::new(),
            p if p.abs() < 10.0 => format!(" ({p:+.1}%)"),
            p => format!(" ({p:+.0}%)"),
        };
        format!("MISSED by {}{pct}", fmt_num(by.abs()))
    }

    fn describe(self, unit: &str) -> String {
        match self {
            Self::AtMost(t) => format!("≤ {} {unit}", fmt_num(t)),
            Self::AtLeast(t) => format!("≥ {} {unit}", fmt_num(t)),
            Self::Exactly(t) => format!("= {} {unit}", fmt_num(t)),
        }
    }
}

/// One figure measured in one run.
#[derive(Clone, Debug)]
pub struct Measurement {
    /// Which scenario produced it.
    pub scenario: &'static str,
    /// What it is, e.g. "RSS after 10 s".
    pub figure: String,
    /// Unit as printed, e.g. "MB".
    pub unit: &'static str,
    /// The value.
    pub value: f64,
    /// The design target, if the design names one.
    pub target: Option<Target>,
}

impl Measurement {
    /// A figure with no design target.
    pub fn new(
        scenario: &'static str,
        figure: impl Into<String>,
        unit: &'static str,
        value: f64,
    ) -> Self {
        Self {
            scenario,
            figure: figure.into(),
            unit,
            value,
            target: None,
        }
    }

    /// Attach the design target.
    pub fn target(mut self, target: Target) -> Self {
        self.target = Some(target);
        self
    }
}

/// A row of the table: scenario and figure.
type RowKey = (&'static str, String);

/// One figure's values from every run, its unit and target.
struct Row {
    values: Vec<f64>,
    unit: &'static str,
    target: Option<Target>,
}

/// Every measurement so far, in first-seen order of figures.
#[derive(Default)]
pub struct Report {
    order: Vec<RowKey>,
    rows: BTreeMap<RowKey, Row>,
}

impl Report {
    /// Add one run's measurements.
    pub fn add(&mut self, measurements: Vec<Measurement>) {
        for m in measurements {
            let key = (m.scenario, m.figure);
            let row = self.rows.entry(key.clone()).or_insert_with(|| {
                self.order.push(key.clone());
                Row {
                    values: Vec::new(),
                    unit: m.unit,
                    target: m.target,
                }
            });
            row.values.push(m.value);
        }
    }

    /// The table as Markdown.
    pub fn markdown(&self) -> String {
        let mut out = String::from(
            "| scenario | figure | median | min – max | runs | design target | result |\n\
             |---|---|---:|---:|---:|---|---|\n",
        );
        for key in &self.order {
            let Row {
                values,
                unit,
                target,
            } = &self.rows[key];
            let Some(s) = Summary::of(values) else {
                continue;
            };
            let (goal, verdict) = match target {
                Some(t) => (t.describe(unit), t.verdict(s.median)),
                None => ("–".into(), String::new()),
            };
            out.push_str(&format!(
                "| {} | {} | {} {unit} | {} – {} | {} | {goal} | {verdict} |\n",
                key.0,
                key.1,
                fmt_num(s.median),
                fmt_num(s.min),
                fmt_num(s.max),
                s.runs,
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missed_target_says_by_how_much() {
        assert_eq!(Target::AtMost(15.0).verdict(18.0), "MISSED by 3 (+20%)");
        assert_eq!(
            Target::AtLeast(10_000.0).verdict(5_000.0),
            "MISSED by 5000 (-50%)"
        );
        assert_eq!(Target::AtMost(15.0).verdict(12.0), "met");
        assert_eq!(
            Target::AtLeast(10_000.0).verdict(9_959.0),
            "MISSED by 41 (-0.4%)"
        );
    }

    #[test]
    fn runs_of_one_figure_are_summarised_in_one_row() {
        let mut report = Report::default();
        for v in [3.0, 1.0, 2.0] {
            report.add(vec![
                Measurement::new("idle", "RSS", "MB", v).target(Target::AtMost(15.0)),
            ]);
        }
        let table = report.markdown();
        assert!(
            table.contains("| idle | RSS | 2 MB | 1 – 3 | 3 | ≤ 15 MB | met |"),
            "{table}"
        );
    }
}
