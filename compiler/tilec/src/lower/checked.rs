//! `--checked` lowering: before every global and shared access, an
//! [`InstKind::Assert`] that the element lies inside its tensor or buffer,
//! with the `.tile` line it comes from.

use super::{Lowerer, Problem};
use crate::diagnostic::SourceLines;
use crate::ir::{Addr, Inst, InstKind, IntDef, Space, buffer_label};
use tilec_layout::int::Op as IntOp;

impl Lowerer<'_> {
    /// A `--checked` build's asserts before `inst`: each global or shared
    /// element it touches (a vector's first and last) inside its tensor or
    /// buffer, unless its guard already skips it.
    fn bound_checks(
        &mut self,
        inst: &Inst,
        lines: &SourceLines,
        out: &mut Vec<Inst>,
    ) -> Result<(), String> {
        let touched: Vec<(&Addr, i64, &str)> = match &inst.kind {
            InstKind::Copy { atom, src, dst } => {
                vec![(src, atom.width(), "read"), (dst, atom.width(), "write")]
            }
            InstKind::Mma { a, b, c, .. } => vec![(a, 1, "read"), (b, 1, "read"), (c, 1, "write")],
            InstKind::Compute { value, dst, .. } => {
                let mut loads = Vec::new();
                value.loads(&mut loads);
                let mut list: Vec<_> = loads.into_iter().map(|a| (a, 1, "read")).collect();
                list.push((dst, 1, "write"));
                list
            }
            InstKind::Fill { dst, .. } => vec![(dst, 1, "write")],
            // Each lane's row: 8 consecutive elements (swizzled as a whole).
            InstKind::Matrix { store, shared, .. } => {
                vec![(shared, 8, if *store { "write" } else { "read" })]
            }
            _ => Vec::new(),
        };
        for (a, width, what) in touched {
            let (len, name) = match a.space {
                Space::Global(p) => {
                    let Some(reach) = self.k.reach(p) else {
                        continue;
                    };
                    // Never skipped: a checked build that dropped a check would lie.
                    let len = self.int(&reach)?;
                    (len, format!("`{}`", self.k.params[p].name))
                }
                Space::Shared(s) => (
                    self.def(IntDef::Const(self.shared_len(s))),
                    format!(
                        "shared buffer `{}`",
                        buffer_label(
                            self.k
                                .shared
                                .iter()
                                .map(|b| b.name.as_deref().unwrap_or("")),
                            's',
                            s
                        )
                    ),
                ),
                Space::Registers(_) => continue,
            };
            let mut cond = self.def(IntDef::Below(a.index, len));
            if width > 1 {
                let last = self.def(IntDef::Const(width - 1));
                let last = self.def(IntDef::Bin(IntOp::Add, a.index, last));
                let last = self.def(IntDef::Below(last, len));
                cond = self.def(IntDef::Bin(IntOp::Min, cond, last));
            }
            if let Some(g) = a.guard {
                // Guards are 0 or 1: outside the guard, nothing to check.
                let one = self.def(IntDef::Const(1));
                let skipped = self.def(IntDef::Bin(IntOp::Sub, one, g));
                cond = self.def(IntDef::Bin(IntOp::Max, skipped, cond));
            }
            out.push(Inst::at(
                inst.span,
                InstKind::Assert {
                    cond,
                    message: format!("out-of-bounds {what} of {name}"),
                    file: lines.file.clone(),
                    line: lines.line(inst.span),
                },
            ));
        }
        Ok(())
    }

    /// `insts` with a `--checked` build's asserts before each (none in
    /// other builds).
    pub(super) fn with_bound_checks(&mut self, insts: Vec<Inst>) -> Result<Vec<Inst>, Problem> {
        let Some(lines) = self.checks else {
            return Ok(insts);
        };
        let mut out = Vec::with_capacity(insts.len());
        for inst in insts {
            self.bound_checks(&inst, lines, &mut out).map_err(|e| {
                Problem::Here(format!("internal error in lowering: {e}"), super::BUG)
            })?;
            out.push(inst);
        }
        Ok(out)
    }
}
