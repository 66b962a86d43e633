//! Integers as linear forms: `constant + Σ coefficient * atom`, an atom a
//! name or any part other than a sum, a difference or a product by a
//! constant (`ceil_div(M, 128)`, `M * N`). The folding rules keep values as
//! written, so `(S - 1) + 1` and `S` are different trees; their forms are
//! equal. In: an [`Int`]. Out: its form, or `None` where a coefficient
//! overflows 64 bits.

use super::{Int, Op, Sym};

/// `constant + Σ coefficient * atom`, no atom twice, no zero coefficient.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Linear {
    pub constant: i64,
    pub terms: Vec<(Int, i64)>,
}

impl Linear {
    /// The form of `x`.
    pub fn of(x: &Int) -> Option<Linear> {
        let mut form = Linear {
            constant: 0,
            terms: Vec::new(),
        };
        form.add_scaled(x, 1)?;
        Some(form)
    }

    /// Adds `k * x` to the form.
    pub fn add_scaled(&mut self, x: &Int, k: i64) -> Option<()> {
        let Int::Dynamic(sym) = x else {
            self.constant = self.constant.checked_add(x.as_static()?.checked_mul(k)?)?;
            return Some(());
        };
        match &**sym {
            Sym::Bin(Op::Add, a, b) => {
                self.add_scaled(a, k)?;
                self.add_scaled(b, k)
            }
            Sym::Bin(Op::Sub, a, b) => {
                self.add_scaled(a, k)?;
                self.add_scaled(b, k.checked_neg()?)
            }
            Sym::Bin(Op::Mul, a, b) if a.is_static() || b.is_static() => {
                let (c, rest) = match a.as_static() {
                    Some(c) => (c, b),
                    None => (b.as_static()?, a),
                };
                self.add_scaled(rest, k.checked_mul(c)?)
            }
            _ => self.add_atom(x, k),
        }
    }

    /// Adds `k * form` to the form.
    pub fn add_form(&mut self, form: &Linear, k: i64) -> Option<()> {
        self.constant = self.constant.checked_add(form.constant.checked_mul(k)?)?;
        for (atom, c) in &form.terms {
            self.add_atom(atom, c.checked_mul(k)?)?;
        }
        Some(())
    }

    fn add_atom(&mut self, atom: &Int, k: i64) -> Option<()> {
        match self.terms.iter().position(|(a, _)| a == atom) {
            Some(i) => {
                let c = self.terms[i].1.checked_add(k)?;
                match c {
                    0 => {
                        self.terms.remove(i);
                    }
                    _ => self.terms[i].1 = c,
                }
            }
            None if k != 0 => self.terms.push((atom.clone(), k)),
            None => {}
        }
        Some(())
    }

    /// The coefficient of `atom` (0 where it has none).
    pub fn coefficient(&self, atom: &Int) -> i64 {
        self.terms
            .iter()
            .find(|(a, _)| a == atom)
            .map_or(0, |&(_, c)| c)
    }

    /// The form less its `atom` term.
    pub fn without(&self, atom: &Int) -> Linear {
        Linear {
            constant: self.constant,
            terms: self
                .terms
                .iter()
                .filter(|(a, _)| a != atom)
                .cloned()
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(n: &str) -> Int {
        Int::var(n)
    }

    #[test]
    fn equal_values_written_apart_have_one_form() {
        let s = v("S");
        let left = s.sub(&Int::Static(1)).add(&Int::Static(1));
        assert_ne!(left, s);
        assert_eq!(Linear::of(&left), Linear::of(&s));
    }

    #[test]
    fn products_by_constants_distribute_and_other_parts_are_atoms() {
        let x = v("block.x");
        let cd = v("M").ceil_div(&Int::Static(128));
        let e = x
            .add(&Int::Static(1))
            .mul(&Int::Static(128))
            .sub(&cd.mul(&Int::Static(2)));
        let f = Linear::of(&e).unwrap();
        assert_eq!(f.constant, 128);
        assert_eq!(f.coefficient(&x), 128);
        assert_eq!(f.coefficient(&cd), -2);
        assert_eq!(f.without(&x).terms, vec![(cd, -2)]);
        let mn = v("M").mul(&v("N"));
        assert_eq!(Linear::of(&mn).unwrap().terms, vec![(mn, 1)]);
    }

    #[test]
    fn a_coefficient_past_64_bits_has_no_form() {
        let big = v("M").mul(&Int::Static(i64::MAX)).mul(&Int::Static(4));
        assert_eq!(Linear::of(&big), None);
    }
}
