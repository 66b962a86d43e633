//! Interval arithmetic on symbolic integers: the smallest interval that
//! holds every value of an expression, given intervals for its names. In:
//! an [`Int`] and ranges of its names. Out: a range, or `None` where the
//! expression leaves what is handled here. The runtime's launch proof and
//! the lowering's bounds rest on it, so every rule is sound first.

use super::{Int, Op, Sym};

impl Int {
    /// The smallest interval holding every value, given intervals for the
    /// names; `None` when a name has none or an operation leaves the
    /// non-negative, overflow-free cases that interval arithmetic handles here.
    pub fn range(&self, env: &dyn Fn(&str) -> Option<(i64, i64)>) -> Option<(i64, i64)> {
        let Int::Dynamic(sym) = self else {
            let v = self.as_static()?;
            return Some((v, v));
        };
        match &**sym {
            Sym::Var(n) => env(n),
            // `x - x / d * d` is `x % d`, which intervals of the two sides
            // apart would not see (the grouped tile walks' column in the group).
            Sym::Bin(Op::Sub, x, m) if let Some(d) = divisor_of_multiple(x, m) => {
                remainder_range(x.range(env)?, d.range(env)?)
            }
            // `x - x % d`, the multiple of d at or below x (`block.x -
            // block.x % 32 + j`, a warp's first block): from 0 where x is
            // not negative, to x itself.
            Sym::Bin(Op::Sub, x, m)
                if let Int::Dynamic(r) = m
                    && let Sym::Bin(Op::Mod, y, d) = &**r
                    && y == x =>
            {
                let ((xl, xh), (dl, _)) = (x.range(env)?, d.range(env)?);
                (xl >= 0 && dl > 0).then_some((0, xh))
            }
            Sym::Bin(op, a, b) => {
                let ((al, ah), (bl, bh)) = (a.range(env)?, b.range(env)?);
                match op {
                    Op::Add => Some((al.checked_add(bl)?, ah.checked_add(bh)?)),
                    Op::Sub => Some((al.checked_sub(bh)?, ah.checked_sub(bl)?)),
                    Op::Mul => {
                        let p = [
                            al.checked_mul(bl)?,
                            al.checked_mul(bh)?,
                            ah.checked_mul(bl)?,
                            ah.checked_mul(bh)?,
                        ];
                        Some((*p.iter().min()?, *p.iter().max()?))
                    }
                    // A positive divisor, truncating as `apply` does: the
                    // quotient grows with the dividend, and for a fixed
                    // dividend moves one way with the divisor, so the
                    // corners bound it, whatever the dividend's sign
                    // (`ceil_div(M - block.x, G)`, 0 or below on the last
                    // blocks: a loop of no trips there).
                    Op::Div | Op::CeilDiv if bl > 0 => {
                        let q = |a: i64, b: i64| match op {
                            Op::Div => Some(a / b),
                            _ => Some(a.checked_add(b)?.checked_sub(1)? / b),
                        };
                        let (l1, l2) = (q(al, bl)?, q(al, bh)?);
                        let (h1, h2) = (q(ah, bl)?, q(ah, bh)?);
                        Some((l1.min(l2), h1.max(h2)))
                    }
                    Op::Mod => remainder_range((al, ah), (bl, bh)),
                    Op::Min => Some((al.min(bl), ah.min(bh))),
                    Op::Max => Some((al.max(bl), ah.max(bh))),
                    _ => None,
                }
            }
        }
    }
}

/// The range of `a % b` for `a` and `b` in the given ranges, where `b` is
/// positive. The remainder truncates as `apply` does, taking the
/// dividend's sign, so a negative dividend's remainders are those of its
/// magnitude negated (`(i - 40) % 4` in -3..3).
fn remainder_range((al, ah): (i64, i64), (bl, bh): (i64, i64)) -> Option<(i64, i64)> {
    if bl <= 0 {
        return None;
    }
    let below = match al < 0 {
        true => {
            let (l, h) =
                non_negative_remainders((ah.min(-1).checked_neg()?, al.checked_neg()?), (bl, bh));
            Some((-h, -l))
        }
        false => None,
    };
    let above = (ah >= 0).then(|| non_negative_remainders((al.max(0), ah), (bl, bh)));
    match (below, above) {
        (Some((l, _)), Some((_, h))) => Some((l, h)),
        (Some(r), None) | (None, Some(r)) => Some(r),
        (None, None) => None,
    }
}

/// The range of `a % b` for `a` not negative and `b` positive.
fn non_negative_remainders((al, ah): (i64, i64), (bl, bh): (i64, i64)) -> (i64, i64) {
    match () {
        _ if ah < bl => (al, ah),
        // One divisor, one quotient: the remainders run from the first.
        _ if bl == bh && al / bl == ah / bl => (al % bl, ah % bl),
        _ => (0, ah.min(bh - 1)),
    }
}

/// The factors of a product in any grouping: `a * (b * c)` gives `[a, b, c]`.
fn factors<'a>(v: &'a Int, out: &mut Vec<&'a Int>) {
    match v {
        Int::Dynamic(sym) if let Sym::Bin(Op::Mul, a, b) = &**sym => {
            factors(a, out);
            factors(b, out);
        }
        _ => out.push(v),
    }
}

/// `d` where `m` is `x / d * d`, its factors in any order and grouping
/// (`2 * (x / (2 * n)) * n`).
fn divisor_of_multiple<'a>(x: &Int, m: &'a Int) -> Option<&'a Int> {
    let mut fs = Vec::new();
    factors(m, &mut fs);
    fs.iter().enumerate().find_map(|(i, f)| {
        let Int::Dynamic(sym) = f else { return None };
        let Sym::Bin(Op::Div, q, d) = &**sym else {
            return None;
        };
        let mut ds = Vec::new();
        factors(d, &mut ds);
        let rest = fs
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != i)
            .map(|(_, f)| *f);
        (q == x && same_product(rest.collect(), ds)).then_some(d)
    })
}

/// Whether two lists of factors have the same product: the same product of
/// constants and the same symbolic factors, each as often.
fn same_product(a: Vec<&Int>, b: Vec<&Int>) -> bool {
    let constant = |v: &[&Int]| {
        v.iter()
            .filter_map(|f| f.as_static())
            .try_fold(1i64, |p, c| p.checked_mul(c))
    };
    if constant(&a).is_none() || constant(&a) != constant(&b) {
        return false;
    }
    let mut left: Vec<&Int> = b.into_iter().filter(|f| !f.is_static()).collect();
    for f in a.iter().filter(|f| !f.is_static()) {
        match left.iter().position(|g| g == f) {
            Some(j) => {
                left.swap_remove(j);
            }
            None => return false,
        }
    }
    left.is_empty()
}
