//! The kernel IR's text form read back: what [`KernelIr::to_text`] writes
//! (`tilec build --emit ir`) becomes a [`KernelIr`] again, so that the
//! verifier, the executor and codegen have file tests of their own,
//! written as IR, without the front end (as Cranelift's `.clif` files).
//!
//! In: the text, one statement a line (`//` comments and blank lines
//! allowed). Out: the IR, with value numbers renumbered densely (constants,
//! written inline, get numbers of their own) and every span empty; or the
//! first problem, with its line. The parser checks only the form; what the
//! IR means is the verifier's to check.

mod arith;
mod header;
mod operands;
mod pipeline;

use super::{
    Addr, CopyAtom, Groups, Inst, InstKind, IntDef, IntId, IntValue, KernelIr, MmaAtom,
    NARROW_SUFFIX, Param, Space, op_name,
};
use crate::arith::Binary;
use crate::span::Span;
use std::collections::HashMap;
use tilec_layout::int::Op as IntOp;
use tilec_layout::{Builtin, Elem};

/// Reads the text form of one kernel.
pub fn parse(text: &str) -> Result<KernelIr> {
    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with("//"))
        .collect();
    let mut p = Parser {
        lines,
        at: 0,
        names: HashMap::new(),
        table: HashMap::new(),
        else_follows: false,
        after_follows: false,
        ir: KernelIr {
            name: String::new(),
            params: Vec::new(),
            extents: Vec::new(),
            block_offset: false,
            block_threads: 0,
            min_blocks: None,
            cluster: [1; 3],
            pads: false,
            shared: Vec::new(),
            registers: Vec::new(),
            ints: Vec::new(),
            tensor_maps: Vec::new(),
            body: Vec::new(),
        },
    };
    p.header()?;
    p.ir.body = p.block(None, false)?;
    if let Some((n, l)) = p.lines.get(p.at) {
        return Err(format!(
            "line {n}: unexpected `{l}` after the kernel's body"
        ));
    }
    Ok(p.ir)
}

struct Parser<'t> {
    lines: Vec<(usize, &'t str)>,
    at: usize,
    /// Value numbers as written -> numbers in the table.
    names: HashMap<usize, IntId>,
    /// Definitions already in the table (constants are shared).
    table: HashMap<IntDef, IntId>,
    /// The block just read ended with `} else {`, not `}`.
    else_follows: bool,
    /// The block just closed was a pipeline's body, and its turns' `after`
    /// block follows (`} after {`).
    after_follows: bool,
    ir: KernelIr,
}

type Result<T> = std::result::Result<T, String>;

impl Parser<'_> {
    fn line_no(&self) -> usize {
        self.lines.get(self.at).map_or(0, |(n, _)| *n)
    }

    fn fail<T>(&self, what: impl std::fmt::Display) -> Result<T> {
        Err(format!("line {}: {what}", self.line_no()))
    }

    /// Values and instructions up to the end of the text or a `}`, which
    /// closes a loop or an if (`nested`); values belong to loop `scope`.
    fn block(&mut self, scope: Option<usize>, nested: bool) -> Result<Vec<Inst>> {
        let mut out = Vec::new();
        while let Some(&(_, l)) = self.lines.get(self.at) {
            if l == "}" || l == "} else {" || l == "} after {" {
                if !nested {
                    return self.fail("`}` outside a loop or an if");
                }
                self.else_follows = l == "} else {";
                self.after_follows = l == "} after {";
                self.at += 1;
                return Ok(out);
            }
            if let Some(rest) = l.strip_prefix('%') {
                self.value(rest, scope)?;
                self.at += 1;
                continue;
            }
            if let Some(rest) = l.strip_prefix("tensor_map ") {
                let m = self.tensor_map(rest)?;
                self.ir.tensor_maps.push(m);
                self.at += 1;
                continue;
            }
            let mut inst = self.inst(l)?;
            self.at += 1;
            // A loop's header line opens its body, which runs to its `}`.
            match &mut inst.kind {
                InstKind::Loop { id, body, .. } => *body = self.closed_block(Some(*id))?,
                InstKind::If {
                    then, otherwise, ..
                } => {
                    *then = self.block(scope, true)?;
                    if std::mem::take(&mut self.after_follows) {
                        return self.fail("`after` after a block that is not a pipeline's body");
                    }
                    if std::mem::take(&mut self.else_follows) {
                        *otherwise = self.closed_block(scope)?;
                    }
                }
                InstKind::ReduceBlocks { body, .. } => *body = self.closed_block(scope)?,
                InstKind::TmaStores { stores: boxes, .. }
                | InstKind::TmaLoads { loads: boxes, .. } => *boxes = self.closed_block(scope)?,
                InstKind::Pipeline {
                    id,
                    load,
                    prefetch,
                    body,
                    turn,
                    after,
                    ..
                } => {
                    // Perhaps `turn {`, the turn's values, `}`; its values,
                    // `load {`, the loads, `}`, perhaps `prefetch {`, the
                    // boxes, `}`, the body, `}` (or `} after {`, the turn's
                    // end, `}`).
                    if let Some(t) = turn {
                        if self.lines.get(self.at).map(|(_, l)| *l) != Some("turn {") {
                            return self.fail("expected `turn {` after a pipeline with turns");
                        }
                        self.at += 1;
                        if !self.closed_block(Some(t.id))?.is_empty() {
                            return self.fail("a pipeline's `turn { }` holds values only");
                        }
                    }
                    while let Some(rest) = self
                        .lines
                        .get(self.at)
                        .and_then(|(_, l)| l.strip_prefix('%'))
                    {
                        self.value(rest, Some(*id))?;
                        self.at += 1;
                    }
                    if self.lines.get(self.at).map(|(_, l)| *l) != Some("load {") {
                        return self.fail("expected `load {` after a pipeline's values");
                    }
                    self.at += 1;
                    *load = self.closed_block(Some(*id))?;
                    if self.lines.get(self.at).map(|(_, l)| *l) == Some("prefetch {") {
                        self.at += 1;
                        *prefetch = self.closed_block(None)?;
                    }
                    *body = self.block(Some(*id), true)?;
                    if std::mem::take(&mut self.else_follows) {
                        return self.fail("`else` after a block that is not an if's");
                    }
                    if std::mem::take(&mut self.after_follows) {
                        let Some(t) = turn else {
                            return self
                                .fail("`} after {` closes the body of a pipeline with turns");
                        };
                        *after = self.closed_block(Some(t.id))?;
                    }
                }
                _ => {}
            }
            out.push(inst);
        }
        if nested {
            return self.fail("a block has no closing `}`");
        }
        Ok(out)
    }

    /// `rN across block.D group %a count %b index %c {`, or `across parts
    /// groups %g most %m` (the body follows).
    fn reduce_blocks(&mut self, rest: &str) -> Result<InstKind> {
        let words: Vec<&str> = rest.split_whitespace().collect();
        let usage = "expected `reduce_blocks rN across block.D [atomic] group %a count %b index %c {` or `... across parts groups %g most %m [atomic] group ...`";
        let (r, across, tail) = match words.as_slice() {
            [r, "across", "parts", "groups", g, "most", m, tail @ ..] => {
                let across = Groups::Parts {
                    groups: self.operand(g)?,
                    most: self.operand(m)?,
                };
                (r, Some(across), tail)
            }
            [r, "across", d, tail @ ..] => {
                let dim = ["block.x", "block.y", "block.z"]
                    .iter()
                    .position(|b| b == d);
                (r, dim.map(|d| Groups::Dim(d as u8)), tail)
            }
            _ => return self.fail(usage),
        };
        let (atomic, tail) = match tail {
            ["atomic", tail @ ..] => (true, tail),
            _ => (false, tail),
        };
        let ["group", g, "count", c, "index", i, "{"] = tail else {
            return self.fail(usage);
        };
        let registers = r.strip_prefix('r').and_then(|n| n.parse().ok());
        let (Some(registers), Some(across)) = (registers, across) else {
            return self.fail(
                "expected a register array `rN` and `block.x`, `block.y`, `block.z` or `parts ...`",
            );
        };
        Ok(InstKind::ReduceBlocks {
            registers,
            across,
            atomic,
            group: self.operand(g)?,
            count: self.operand(c)?,
            index: self.operand(i)?,
            body: Vec::new(),
        })
    }

    /// A block that a plain `}` closes (not `} else {`).
    fn closed_block(&mut self, scope: Option<usize>) -> Result<Vec<Inst>> {
        let body = self.block(scope, true)?;
        if std::mem::take(&mut self.else_follows) {
            return self.fail("`else` after a block that is not an if's");
        }
        if std::mem::take(&mut self.after_follows) {
            return self.fail("`after` after a block that is not a pipeline's body");
        }
        Ok(body)
    }

    /// `N = DEF` (the `%` already read).
    fn value(&mut self, text: &str, scope: Option<usize>) -> Result<()> {
        let (n, def) = text
            .split_once('=')
            .ok_or(format!("line {}: expected `=`", self.line_no()))?;
        let n: usize = n
            .trim()
            .parse()
            .map_err(|_| format!("line {}: bad value number", self.line_no()))?;
        let def = def.trim();
        let mut narrow = false;
        let def = match Builtin::parse(def) {
            Some(b) => IntDef::from(b),
            None => {
                let (op, args) = def.split_once(' ').unwrap_or((def, ""));
                match op {
                    "extent" => IntDef::Extent(
                        self.ir
                            .extents
                            .iter()
                            .position(|e| e == args.trim())
                            .ok_or(format!(
                                "line {}: no extent `{}`",
                                self.line_no(),
                                args.trim()
                            ))?,
                    ),
                    "counter" => IntDef::LoopVar(
                        args.strip_prefix("of loop ")
                            .and_then(|l| l.trim().parse().ok())
                            .ok_or(format!(
                                "line {}: expected `counter of loop N`",
                                self.line_no()
                            ))?,
                    ),
                    "swizzle" => {
                        let (a, sw) = args.split_once(',').ok_or(format!(
                            "line {}: expected `swizzle %N, Sw<B,M,S>`",
                            self.line_no()
                        ))?;
                        IntDef::Swizzle(self.operand(a)?, self.swizzle(sw.trim())?)
                    }
                    _ => {
                        let (a, b) = args
                            .split_once(',')
                            .ok_or(format!("line {}: expected two operands", self.line_no()))?;
                        let (a, b) = (self.operand(a)?, self.operand(b)?);
                        match op {
                            "below" => IntDef::Below(a, b),
                            _ if let Some(c) = Binary::ALL
                                .into_iter()
                                .find(|c| c.is_comparison() && c.name() == op) =>
                            {
                                IntDef::Compare(c, a, b)
                            }
                            _ => {
                                let (op, n) = match op.strip_suffix(NARROW_SUFFIX) {
                                    Some(op) => (op, true),
                                    None => (op, false),
                                };
                                narrow = n;
                                IntDef::Bin(
                                    int_op(op).ok_or(format!(
                                        "line {}: unknown operation `{op}`",
                                        self.line_no()
                                    ))?,
                                    a,
                                    b,
                                )
                            }
                        }
                    }
                }
            }
        };
        let id = self.ir.ints.len();
        self.ir.ints.push(IntValue { def, scope, narrow });
        if self.names.insert(n, id).is_some() {
            return self.fail(format!("%{n} is defined twice"));
        }
        Ok(())
    }

    /// `%N` or a literal integer.
    fn operand(&mut self, text: &str) -> Result<IntId> {
        let text = text.trim();
        if let Some(n) = text.strip_prefix('%') {
            let n: usize = n
                .parse()
                .map_err(|_| format!("line {}: bad operand `{text}`", self.line_no()))?;
            return self.names.get(&n).copied().ok_or(format!(
                "line {}: %{n} is used before it is defined",
                self.line_no()
            ));
        }
        let c: i64 = text
            .parse()
            .map_err(|_| format!("line {}: bad operand `{text}`", self.line_no()))?;
        let def = IntDef::Const(c);
        if let Some(&id) = self.table.get(&def) {
            return Ok(id);
        }
        self.ir.ints.push(IntValue {
            def: def.clone(),
            scope: None,
            narrow: false,
        });
        let id = self.ir.ints.len() - 1;
        self.table.insert(def, id);
        Ok(id)
    }

    /// `BASE[INDEX]` or `BASE[INDEX if GUARD > 0]`.
    fn addr(&mut self, text: &str) -> Result<Addr> {
        let text = text.trim();
        let (base, inner) = text
            .strip_suffix(']')
            .and_then(|t| t.split_once('['))
            .ok_or(format!(
                "line {}: `{text}` is not BASE[INDEX]",
                self.line_no()
            ))?;
        let space = self.space(base)?;
        let (index, guard) = match inner.split_once(" if ") {
            Some((i, g)) => {
                let g = g.strip_suffix("> 0").ok_or(format!(
                    "line {}: a guard reads `if %N > 0`",
                    self.line_no()
                ))?;
                (self.operand(i)?, Some(self.operand(g)?))
            }
            None => (self.operand(inner)?, None),
        };
        Ok(Addr {
            space,
            index,
            guard,
        })
    }

    fn space(&self, base: &str) -> Result<Space> {
        let numbered = |p: &str| base.strip_prefix(p).and_then(|n| n.parse::<usize>().ok());
        if let Some(p) = self.ir.params.iter().position(|p| match p {
            Param::Tensor { name, .. } | Param::Scalar { name, .. } => name == base,
        }) {
            return Ok(Space::Global(p));
        }
        match (numbered("s"), numbered("r")) {
            (Some(s), _) => Ok(Space::Shared(s)),
            (_, Some(r)) => Ok(Space::Registers(r)),
            _ => self.fail(format!(
                "`{base}` is no parameter, shared buffer or register array"
            )),
        }
    }

    fn inst(&mut self, l: &str) -> Result<Inst> {
        let (op, rest) = l.split_once(' ').unwrap_or((l, ""));
        let elem_of = |suffix: &str| elem(suffix);
        let kind = match op {
            "barrier" => InstKind::Barrier,
            "tma_store_wait" => InstKind::TmaStoreWait {
                keep: match rest.trim() {
                    "" => 0,
                    r => r
                        .strip_prefix("keep ")
                        .and_then(|n| n.trim().parse().ok())
                        .ok_or_else(|| format!("line {}: expected `keep N`", self.line_no()))?,
                },
            },
            "cp.async.fence" => InstKind::AsyncFence,
            "wgmma.fence" => InstKind::WgmmaFence,
            "fence.proxy.async" => InstKind::ProxyFence,
            "wgmma.commit" => InstKind::WgmmaCommit,
            "wgmma.wait" => InstKind::WgmmaWait(
                rest.trim()
                    .parse()
                    .map_err(|_| format!("line {}: bad group count", self.line_no()))?,
            ),
            "wgmma" => {
                // `wgmma ATOM rC[..] += desc(..) * desc(..)`, A `rA[..]`
                // for an `_RS` atom.
                let (atom, [c, a, b]) = self.product(rest, true)?;
                InstKind::Wgmma {
                    a: match atom.shared_a {
                        true => crate::ir::WgmmaA::Shared(self.smem_operand(a)?),
                        false => crate::ir::WgmmaA::Registers(self.fragment(a)?),
                    },
                    atom,
                    b: self.smem_operand(b)?,
                    c: self.fragment(c)?,
                }
            }
            "cp.async.wait" => InstKind::AsyncWait(
                rest.trim()
                    .parse()
                    .map_err(|_| format!("line {}: bad group count", self.line_no()))?,
            ),
            "assert" => {
                let (cond, rest) = rest
                    .split_once(' ')
                    .ok_or(format!("line {}: expected a message", self.line_no()))?;
                let (message, at) = rest
                    .strip_prefix('"')
                    .and_then(|r| r.rsplit_once("\" at "))
                    .ok_or(format!(
                        "line {}: expected \"MESSAGE\" at FILE:LINE",
                        self.line_no()
                    ))?;
                let (file, line) = at
                    .rsplit_once(':')
                    .ok_or(format!("line {}: expected FILE:LINE", self.line_no()))?;
                InstKind::Assert {
                    cond: self.operand(cond)?,
                    message: message.to_string(),
                    file: file.to_string(),
                    line: line
                        .parse()
                        .map_err(|_| format!("line {}: bad line number", self.line_no()))?,
                }
            }
            "loop" => {
                // `loop ID NAME in START..END {`
                let words: Vec<&str> = rest.split_whitespace().collect();
                let [id, name, "in", range, "{"] = words[..] else {
                    return self.fail("expected `loop ID NAME in START..END {`");
                };
                let (start, end) = self.range(range)?;
                InstKind::Loop {
                    id: id
                        .parse()
                        .map_err(|_| format!("line {}: bad loop number", self.line_no()))?,
                    name: name.to_string(),
                    start,
                    end,
                    body: Vec::new(),
                }
            }
            "pipeline" => self.pipeline(rest)?,
            "reduce_blocks" => self.reduce_blocks(rest)?,
            "if" => {
                // `if %N {`
                let Some(cond) = rest.strip_suffix('{') else {
                    return self.fail("expected `if %N {`");
                };
                InstKind::If {
                    cond: self.operand(cond)?,
                    then: Vec::new(),
                    otherwise: Vec::new(),
                }
            }
            "tma" => self.tma(rest)?,
            "tma_store" if rest == "{" || rest == "unordered {" => InstKind::TmaStores {
                stores: Vec::new(),
                ordered: rest == "{",
            },
            "tma_wait" if rest.is_empty() => InstKind::TmaWait,
            "tma_load" => {
                // `tma_load [after_stores] bytes B {`
                let words: Vec<&str> = rest.split_whitespace().collect();
                let (after_stores, b) = match words[..] {
                    ["bytes", b, "{"] => (false, b),
                    ["after_stores", "bytes", b, "{"] => (true, b),
                    _ => return self.fail("expected `tma_load [after_stores] bytes B {`"),
                };
                match b.parse() {
                    Ok(bytes) => InstKind::TmaLoads {
                        bytes,
                        after_stores,
                        loads: Vec::new(),
                    },
                    _ => return self.fail("bad byte count"),
                }
            }
            _ if op.starts_with("ldmatrix.x") || op.starts_with("stmatrix.x") => {
                // `ldmatrix.x4[.trans].bf16 s0[%12] -> r0[0,1,...]`, and
                // `stmatrix` the other way: `r0[0,1,...] -> s0[%12]`.
                let store = op.starts_with("st");
                let mut parts = op["ldmatrix.x".len()..].split('.');
                let count = parts.next().and_then(|c| c.parse().ok());
                let (trans, elem_name) = match (parts.next(), parts.next()) {
                    (Some("trans"), Some(e)) => (true, e),
                    (Some(e), None) => (false, e),
                    _ => return self.fail(format!("unknown instruction `{op}`")),
                };
                let (from, to) = rest
                    .split_once("->")
                    .ok_or(format!("line {}: expected `->`", self.line_no()))?;
                let (shared, regs) = if store { (to, from) } else { (from, to) };
                InstKind::Matrix {
                    store,
                    elem: elem(elem_name)
                        .ok_or(format!("line {}: unknown element type", self.line_no()))?,
                    count: count.filter(|c| matches!(c, 1 | 2 | 4)).ok_or(format!(
                        "line {}: {} takes x1, x2 or x4",
                        self.line_no(),
                        &op[..8]
                    ))?,
                    trans,
                    shared: self.addr(shared)?,
                    regs: self.fragment(regs)?,
                }
            }
            "mma.sync" => {
                // `mma.sync ATOM rC[..] += rA[..] * rB[..]`
                let (atom, [c, a, b]) = self.product(rest, false)?;
                InstKind::MmaSync {
                    atom,
                    a: self.fragment(a)?,
                    b: self.fragment(b)?,
                    c: self.fragment(c)?,
                }
            }
            _ => {
                let (what, suffix) = op.split_once('.').ok_or(format!(
                    "line {}: unknown instruction `{op}`",
                    self.line_no()
                ))?;
                match what {
                    "copy" => {
                        let (src, dst) = rest
                            .split_once("->")
                            .ok_or(format!("line {}: expected `->`", self.line_no()))?;
                        let atom = copy_atom(suffix)
                            .ok_or(format!("line {}: unknown copy `{op}`", self.line_no()))?;
                        InstKind::Copy {
                            atom,
                            src: self.addr(src)?,
                            dst: self.addr(dst)?,
                        }
                    }
                    "fma" => {
                        let (c, ab) = rest
                            .split_once("+=")
                            .ok_or(format!("line {}: expected `+=`", self.line_no()))?;
                        let (a, b) = ab
                            .split_once(" * ")
                            .ok_or(format!("line {}: expected `*`", self.line_no()))?;
                        let (ab_elem, c_elem) = self.elem_pair(suffix)?;
                        InstKind::Mma {
                            atom: MmaAtom::Fma {
                                ab: ab_elem,
                                c: c_elem,
                            },
                            a: self.addr(a)?,
                            b: self.addr(b)?,
                            c: self.addr(c)?,
                        }
                    }
                    "compute" => {
                        // `DST = VALUE`
                        let (dst, value) = rest
                            .split_once(" = ")
                            .ok_or(format!("line {}: expected `=`", self.line_no()))?;
                        InstKind::Compute {
                            elem: elem_of(suffix)
                                .ok_or(format!("line {}: unknown element type", self.line_no()))?,
                            value: self.arith(value.trim())?,
                            dst: self.addr(dst)?,
                        }
                    }
                    "fill" => {
                        let (dst, v) = rest
                            .split_once(" = ")
                            .ok_or(format!("line {}: expected `=`", self.line_no()))?;
                        InstKind::Fill {
                            elem: elem_of(suffix)
                                .ok_or(format!("line {}: unknown element type", self.line_no()))?,
                            dst: self.addr(dst)?,
                            value: self.float(v.trim())?,
                        }
                    }
                    _ => return self.fail(format!("unknown instruction `{op}`")),
                }
            }
        };
        Ok(Inst::at(Span { start: 0, end: 0 }, kind))
    }
}

fn elem(s: &str) -> Option<Elem> {
    Elem::parse(s.trim())
}

/// `f32`, `f32x4`, `async.f32x4`.
fn copy_atom(suffix: &str) -> Option<CopyAtom> {
    let (asynchronous, rest) = match suffix.strip_prefix("async.") {
        Some(r) => (true, r),
        None => (false, suffix),
    };
    if let Some((from, to)) = rest.split_once('.') {
        if asynchronous {
            return None;
        }
        return Some(CopyAtom::Convert(elem(from)?, elem(to)?));
    }
    match rest.split_once('x') {
        Some((e, w)) => {
            let (e, w) = (elem(e)?, w.parse().ok()?);
            Some(if asynchronous {
                CopyAtom::Async(e, w)
            } else {
                CopyAtom::Vector(e, w)
            })
        }
        None if !asynchronous => Some(CopyAtom::Scalar(elem(rest)?)),
        None => None,
    }
}

/// The operation `op_name` writes as `name`.
fn int_op(name: &str) -> Option<IntOp> {
    IntOp::ALL.into_iter().find(|&op| op_name(op) == name)
}
