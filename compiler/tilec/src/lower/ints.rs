//! The IR's integers as lowering makes them: a symbolic [`Int`] of the
//! checked program (extents, builtins, loop counters, the counters of
//! unrolled copies) interned into the kernel's table of [`IntDef`]s, each
//! with the innermost loop it depends on (its scope).

use super::Lowerer;
use crate::ir::{IntDef, IntId, IntValue};
use tilec_layout::int::Sym;
use tilec_layout::{Builtin, Int};

impl Lowerer<'_> {
    /// `v` with the counters of the enclosing unrolled loops replaced by
    /// their values in the copy being lowered.
    pub(super) fn fix(&self, v: &Int) -> Int {
        self.unrolled
            .iter()
            .fold(v.clone(), |v, (n, x)| v.substitute(n, *x))
    }

    /// Interns a symbolic integer, and everything it is made of.
    pub(super) fn int(&mut self, v: &Int) -> Result<IntId, String> {
        let def = match v {
            Int::Static(c) => IntDef::Const(*c),
            Int::Dynamic(sym) => match &**sym {
                Sym::Var(n) => match self.k.strides.iter().find(|s| s.in_place && &s.name == n) {
                    Some(s) => return self.int(&s.declared),
                    None => self.name(n)?,
                },
                Sym::Bin(op, a, b) => {
                    let (a, b) = (self.int(a)?, self.int(b)?);
                    IntDef::Bin(*op, a, b)
                }
            },
        };
        Ok(self.def(def))
    }

    fn name(&self, n: &str) -> Result<IntDef, String> {
        Ok(match Builtin::parse(n) {
            Some(b) => IntDef::from(b),
            None => {
                if let Some((_, v)) = self.unrolled.iter().rev().find(|(u, _)| u == n) {
                    IntDef::Const(*v)
                } else if let Some(&l) = self
                    .active
                    .iter()
                    .rev()
                    .find(|&&l| self.counters[l].name == n)
                {
                    IntDef::LoopVar(l)
                } else if let Some(e) = self.k.extents.iter().position(|x| x == n) {
                    IntDef::Extent(e)
                } else {
                    return Err(format!("`{n}` has no value here"));
                }
            }
        })
    }

    pub(super) fn def(&mut self, def: IntDef) -> IntId {
        if let Some(&id) = self.table.get(&def) {
            return id;
        }
        let scope = match &def {
            IntDef::LoopVar(l) => Some(*l),
            IntDef::Bin(_, a, b) | IntDef::Below(a, b) | IntDef::Compare(_, a, b) => {
                self.deeper(self.ints[*a].scope, self.ints[*b].scope)
            }
            IntDef::Swizzle(a, _) => self.ints[*a].scope,
            _ => None,
        };
        self.ints.push(IntValue {
            def: def.clone(),
            scope,
            narrow: false,
        });
        let id = self.ints.len() - 1;
        self.table.insert(def, id);
        id
    }

    fn deeper(&self, a: Option<usize>, b: Option<usize>) -> Option<usize> {
        match (a, b) {
            (Some(x), Some(y)) => Some(if self.counters[x].depth >= self.counters[y].depth {
                x
            } else {
                y
            }),
            (x, None) | (None, x) => x,
        }
    }
}
