//! A script's budget: which constructor and configuring methods build it.

use arbitrary::{Result, Unstructured};
use hedging::Budget;

/// A shared `Budget`, as its constructors and configuring methods are called.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BudgetScript {
    pub(crate) kind: BudgetKind,
    pub(crate) max_outstanding: Option<usize>,
    pub(crate) min_per_second: Option<u32>,
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum BudgetKind {
    /// `Budget::new(ratio)`, then `.burst(burst)` if set.
    Bucket { ratio: f64, burst: Option<f64> },
    /// `Budget::throttling(max_tokens, ratio)`.
    Throttling { max_tokens: f64, ratio: f64 },
}

impl BudgetScript {
    pub(super) fn read(u: &mut Unstructured<'_>) -> Result<BudgetScript> {
        let kind = if u.ratio(1, 3)? {
            BudgetKind::Throttling {
                max_tokens: *u.choose(&[1.0, 2.0, 3.0, 4.0, 5.0, 10.0, 0.0, 2.5])?,
                ratio: *u.choose(&[0.1, 0.5, 1.0, 1.5, 0.0, f64::NAN])?,
            }
        } else {
            BudgetKind::Bucket {
                ratio: *u.choose(&[
                    0.0,
                    0.1,
                    0.25,
                    0.5,
                    1.0,
                    2.0,
                    f64::INFINITY,
                    f64::NAN,
                    -1.0,
                ])?,
                // Without a burst the savings follow the traffic; with one, a fixed cap.
                burst: if u.ratio(1, 2)? {
                    Some(*u.choose(&[1.0, 1.5, 2.0, 3.0, 4.0, 0.2, f64::NAN, 10.0, 20.0])?)
                } else {
                    None
                },
            }
        };
        let max_outstanding = if u.ratio(2, 3)? {
            Some(u.int_in_range(0..=4)?)
        } else {
            None
        };
        let min_per_second = if u.ratio(1, 3)? {
            Some(*u.choose(&[1, 2, 3, 4, 1000])?)
        } else {
            None
        };
        Ok(BudgetScript {
            kind,
            max_outstanding,
            min_per_second,
        })
    }

    pub(crate) fn build(&self) -> Budget {
        let budget = match self.kind {
            BudgetKind::Bucket { ratio, burst } => {
                let budget = Budget::new(ratio);
                match burst {
                    Some(burst) => budget.burst(burst),
                    None => budget,
                }
            }
            BudgetKind::Throttling { max_tokens, ratio } => Budget::throttling(max_tokens, ratio),
        };
        let budget = match self.max_outstanding {
            Some(copies) => budget.max_outstanding(copies),
            None => budget,
        };
        match self.min_per_second {
            Some(copies) => budget.min_per_second(copies),
            None => budget,
        }
    }
}
