//! Facts about integers that an operation needs, and the conditions that
//! remain when they cannot be decided at compile time.
//!
//! In: a fact over static or symbolic integers. Out: `Ok` when it holds, a
//! typed error when it is statically false, and otherwise a recorded
//! condition for the compiler to check at launch (or to predicate). No fact is
//! ever assumed.

use crate::error::AlgebraError;
use crate::int::{Bindings, Int};
use std::fmt;

/// A proposition about integers.
#[derive(Clone, PartialEq, Eq, Debug, serde::Serialize, serde::Deserialize)]
pub enum Fact {
    /// `divisor` divides `dividend` exactly.
    Divides { divisor: Int, dividend: Int },
    /// `a <= b`.
    Le(Int, Int),
    /// At least one holds.
    Any(Vec<Fact>),
    /// All hold.
    All(Vec<Fact>),
}

impl Fact {
    pub fn divides(divisor: &Int, dividend: &Int) -> Fact {
        Fact::Divides {
            divisor: divisor.clone(),
            dividend: dividend.clone(),
        }
    }

    /// True or false when the fact is decidable at compile time.
    pub fn decide(&self) -> Option<bool> {
        match self {
            Fact::Divides { divisor, dividend } => match dividend.rem(divisor) {
                Int::Static(r) => Some(r == 0),
                Int::Dynamic(_) => None,
            },
            Fact::Le(a, b) => a.known_le(b),
            Fact::Any(fs) => three_valued(fs, true),
            Fact::All(fs) => three_valued(fs, false),
        }
    }

    /// Whether `self` provably implies `other` (conservative: `false` may
    /// mean "not provable"): the same fact, a multiple's divisibility
    /// (`N % 8192 == 0` implies `N % 4 == 0`), through `All` and `Any`.
    pub fn implies(&self, other: &Fact) -> bool {
        if self == other {
            return true;
        }
        match (self, other) {
            (_, Fact::Any(fs)) if fs.iter().any(|f| self.implies(f)) => true,
            (_, Fact::All(fs)) if fs.iter().all(|f| self.implies(f)) => true,
            (Fact::All(fs), _) => fs.iter().any(|f| f.implies(other)),
            (Fact::Any(fs), _) => !fs.is_empty() && fs.iter().all(|f| f.implies(other)),
            (
                Fact::Divides {
                    divisor: a,
                    dividend: x,
                },
                Fact::Divides {
                    divisor: b,
                    dividend: y,
                },
            ) => {
                x == y
                    && matches!(
                        (a.as_static(), b.as_static()),
                        (Some(a), Some(b)) if a.checked_rem(b) == Some(0)
                    )
            }
            _ => false,
        }
    }

    /// The fact with `name` replaced by `v` everywhere.
    pub fn replace(&self, name: &str, v: &Int) -> Fact {
        match self {
            Fact::Divides { divisor, dividend } => Fact::Divides {
                divisor: divisor.replace(name, v),
                dividend: dividend.replace(name, v),
            },
            Fact::Le(a, b) => Fact::Le(a.replace(name, v), b.replace(name, v)),
            Fact::Any(fs) => Fact::Any(fs.iter().map(|f| f.replace(name, v)).collect()),
            Fact::All(fs) => Fact::All(fs.iter().map(|f| f.replace(name, v)).collect()),
        }
    }

    /// The names the fact mentions, each once, in first-use order.
    pub fn names(&self, out: &mut Vec<String>) {
        match self {
            Fact::Divides { divisor, dividend } => {
                divisor.names(out);
                dividend.names(out);
            }
            Fact::Le(a, b) => {
                a.names(out);
                b.names(out);
            }
            Fact::Any(v) | Fact::All(v) => v.iter().for_each(|x| x.names(out)),
        }
    }

    /// Whether the fact provably holds for every value of its names in
    /// their ranges (interval arithmetic: `false` may mean "not provable").
    /// A divisibility is decided only where every name has one value.
    pub fn holds_throughout(&self, ranges: &dyn Fn(&str) -> Option<(i64, i64)>) -> bool {
        match self {
            Fact::Divides { .. } => self
                .eval(&|n: &str| ranges(n).filter(|(lo, hi)| lo == hi).map(|(v, _)| v))
                .unwrap_or(false),
            Fact::Le(a, b) => b.sub(a).range(ranges).is_some_and(|(lo, _)| lo >= 0),
            Fact::Any(fs) => fs.iter().any(|f| f.holds_throughout(ranges)),
            Fact::All(fs) => fs.iter().all(|f| f.holds_throughout(ranges)),
        }
    }

    /// Truth with every name bound; `None` if a name is unbound.
    pub fn eval(&self, env: &dyn Bindings) -> Option<bool> {
        match self {
            Fact::Divides { divisor, dividend } => {
                let d = divisor.eval(env)?;
                Some(d != 0 && dividend.eval(env)? % d == 0)
            }
            Fact::Le(a, b) => Some(a.eval(env)? <= b.eval(env)?),
            Fact::Any(fs) => fs
                .iter()
                .map(|f| f.eval(env))
                .try_fold(false, |acc, v| Some(acc || v?)),
            Fact::All(fs) => fs
                .iter()
                .map(|f| f.eval(env))
                .try_fold(true, |acc, v| Some(acc && v?)),
        }
    }
}

/// `Any` (short-circuit on true) or `All` (short-circuit on false), with
/// unknowns making the answer unknown unless a decisive member exists.
fn three_valued(fs: &[Fact], decisive: bool) -> Option<bool> {
    let mut unknown = false;
    for f in fs {
        match f.decide() {
            Some(v) if v == decisive => return Some(decisive),
            Some(_) => {}
            None => unknown = true,
        }
    }
    if unknown { None } else { Some(!decisive) }
}

impl fmt::Display for Fact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let join = |fs: &[Fact], sep: &str, f: &mut fmt::Formatter<'_>| {
            for (i, x) in fs.iter().enumerate() {
                if i > 0 {
                    write!(f, " {sep} ")?;
                }
                write!(f, "({x})")?;
            }
            Ok(())
        };
        match self {
            Fact::Divides { divisor, dividend } => write!(f, "{dividend} % {divisor} == 0"),
            Fact::Le(a, b) => write!(f, "{a} <= {b}"),
            Fact::Any(fs) => join(fs, "or", f),
            Fact::All(fs) => join(fs, "and", f),
        }
    }
}

/// A fact left for run time, with the operation that needs it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Condition {
    pub fact: Fact,
    pub needed_by: &'static str,
    /// The tensor (the caller's index) whose tiles the fact is about, where
    /// it is one tensor's: code that never touches that tensor's elements
    /// one by one (a kernel reading it by TMA alone) does not need it.
    pub tensor: Option<usize>,
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (needed by {})", self.fact, self.needed_by)
    }
}

/// The conditions collected while computing one result.
#[derive(Clone, Default, PartialEq, Eq, Debug)]
pub struct Conditions {
    pub list: Vec<Condition>,
}

impl Conditions {
    pub fn new() -> Self {
        Self::default()
    }

    /// Requires `fact`: `Ok` if it holds or is recorded for run time, the
    /// error built by `err` if it is statically false.
    pub fn require(
        &mut self,
        fact: Fact,
        needed_by: &'static str,
        err: impl FnOnce() -> AlgebraError,
    ) -> Result<(), AlgebraError> {
        match fact.decide() {
            Some(true) => Ok(()),
            Some(false) => Err(err()),
            None => {
                let c = Condition {
                    fact,
                    needed_by,
                    tensor: None,
                };
                if !self.list.contains(&c) {
                    self.list.push(c);
                }
                Ok(())
            }
        }
    }

    /// Records `fact` unless it is statically true: a condition that may
    /// fail, for a caller with a fallback when it does.
    pub fn record(&mut self, fact: Fact, needed_by: &'static str) {
        self.record_for(fact, needed_by, None)
    }

    /// Records `fact` (see [`Conditions::record`]) as being about `tensor`.
    pub fn record_for(&mut self, fact: Fact, needed_by: &'static str, tensor: Option<usize>) {
        if fact.decide() != Some(true) {
            let c = Condition {
                fact,
                needed_by,
                tensor,
            };
            if !self.list.contains(&c) {
                self.list.push(c);
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn divides(d: i64, x: &str) -> Fact {
        Fact::divides(&Int::Static(d), &Int::var(x))
    }

    #[test]
    fn a_multiple_s_divisibility_implies_its_divisors() {
        assert!(divides(8192, "N").implies(&divides(4, "N")));
        assert!(!divides(4, "N").implies(&divides(8192, "N")));
        assert!(!divides(8192, "N").implies(&divides(3, "N")));
        assert!(!divides(8192, "M").implies(&divides(4, "N")));
        let both = Fact::All(vec![divides(16, "K"), divides(8, "M")]);
        assert!(both.implies(&divides(4, "M")));
        assert!(both.implies(&Fact::All(vec![divides(8, "K"), divides(2, "M")])));
        assert!(!divides(16, "K").implies(&both));
        assert!(divides(16, "K").implies(&Fact::Any(vec![divides(8, "K"), divides(3, "M")])));
        // Either member implies it: so does the disjunction; not otherwise.
        let either = Fact::Any(vec![divides(8, "K"), divides(16, "K")]);
        assert!(either.implies(&divides(4, "K")));
        assert!(!either.implies(&divides(16, "K")));
        assert!(!Fact::Any(vec![]).implies(&divides(2, "K")));
        // Signs do not change divisibility; a zero divisor divides nothing.
        assert!(divides(-8, "K").implies(&divides(4, "K")));
        assert!(!divides(8, "K").implies(&divides(0, "K")));
        // No overflow (i64::MIN % -1), whatever the answer.
        let _ = divides(i64::MIN, "K").implies(&divides(-1, "K"));
    }
}
