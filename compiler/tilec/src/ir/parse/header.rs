//! The kernel's header read back: `kernel NAME(PARAMS) block N ...` and
//! the `shared` and `registers` buffers that follow it.

use super::{Parser, Result, elem};
use crate::ir::{Buffer, Param};

impl Parser<'_> {
    /// `kernel NAME(PARAMS) block N [min_blocks M] [cluster XxYxZ [pads]]`, then
    /// the buffers.
    pub(super) fn header(&mut self) -> Result<()> {
        let Some(&(_, line)) = self.lines.first() else {
            return self.fail("no kernel");
        };
        let rest = line
            .strip_prefix("kernel ")
            .ok_or_else(|| format!("line {}: expected `kernel NAME(...)`", self.line_no()))?;
        let (name, rest) = rest.split_once('(').ok_or("line 1: expected `(`")?;
        let (params, rest) = rest.rsplit_once(')').ok_or("line 1: expected `)`")?;
        self.ir.name = name.trim().to_string();
        for p in params.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (n, ty) = p
                .split_once(':')
                .ok_or(format!("line 1: `{p}` is not NAME: TYPE"))?;
            let (n, ty) = (n.trim().to_string(), ty.trim());
            match ty {
                "i64" => self.ir.extents.push(n),
                "u32x3" if n == "block_offset" => self.ir.block_offset = true,
                _ => match ty.strip_prefix("global ").and_then(|t| t.strip_suffix('*')) {
                    Some(e) => self.ir.params.push(Param::Tensor {
                        name: n,
                        elem: elem(e).ok_or(format!("line 1: unknown element type `{e}`"))?,
                    }),
                    None => self.ir.params.push(Param::Scalar {
                        name: n,
                        elem: elem(ty).ok_or(format!("line 1: unknown type `{ty}`"))?,
                    }),
                },
            }
        }
        let mut words = rest.split_whitespace();
        while let Some(w) = words.next() {
            if w == "pads" {
                if self.ir.cluster == [1; 3] {
                    return self.fail("`pads` follows `cluster XxYxZ` in the kernel's header");
                }
                self.ir.pads = true;
                continue;
            }
            let text = words.next();
            if w == "cluster" {
                let dims: Vec<u32> = text
                    .unwrap_or("")
                    .split('x')
                    .map_while(|d| d.parse().ok())
                    .collect();
                match dims[..] {
                    [x, y, z] => self.ir.cluster = [x, y, z],
                    _ => return self.fail("expected `cluster XxYxZ` in the kernel's header"),
                }
                continue;
            }
            let v = text.and_then(|v| v.parse::<i64>().ok());
            match (w, v) {
                ("block", Some(v)) => self.ir.block_threads = v,
                ("min_blocks", Some(v)) => self.ir.min_blocks = Some(v),
                _ => return self.fail(format!("unexpected `{w}` in the kernel's header")),
            }
        }
        self.at = 1;
        let mut placed = Vec::new();
        while let Some(&(_, l)) = self.lines.get(self.at) {
            let (kind, rest) = match l.split_once(' ') {
                Some(("shared", r)) => (true, r),
                Some(("registers", r)) => (false, r),
                _ => break,
            };
            let (b, at) = self.buffer(rest)?;
            if kind {
                placed.push(at);
                self.ir.shared.push(b);
            } else if at.is_some() {
                return self.fail("a register array has no offset");
            } else {
                self.ir.registers.push(b);
            }
            self.at += 1;
        }
        // Offsets given for all shared buffers or for none (one after the other).
        let in_order = crate::ir::shared::in_order(&self.ir.shared);
        for (i, (b, at)) in self.ir.shared.iter_mut().zip(placed.iter()).enumerate() {
            b.at = match (at, placed.iter().all(Option::is_none)) {
                (Some(at), _) => *at,
                (None, true) => in_order[i],
                (None, false) => {
                    return Err(format!(
                        "shared buffer s{i} has no `at`: give every buffer's offset or none"
                    ));
                }
            };
        }
        Ok(())
    }

    /// `s0: f32[71]`, `s1 smA: bf16[8192] align 1024 at 0` or `r0 acc:
    /// f32[8] = 0.0` (a `.tile` name after the label, if any), and the
    /// offset after `at`, if any.
    fn buffer(&self, text: &str) -> Result<(Buffer, Option<i64>)> {
        let (label, ty) = text
            .split_once(':')
            .ok_or(format!("line {}: expected `:`", self.line_no()))?;
        let name = label
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_string();
        let (ty, at) = match ty.split_once(" at ") {
            Some((t, a)) => (
                t,
                Some(
                    a.trim()
                        .parse::<i64>()
                        .ok()
                        .filter(|a| *a >= 0)
                        .ok_or(format!(
                            "line {}: an offset is a byte count",
                            self.line_no()
                        ))?,
                ),
            ),
            None => (ty, None),
        };
        let (ty, init) = match ty.split_once('=') {
            Some((t, v)) => (t.trim(), Some(self.float(v.trim())?)),
            None => (ty.trim(), None),
        };
        let (ty, align) = match ty.split_once(" align ") {
            Some((t, a)) => (
                t.trim(),
                a.trim()
                    .parse::<i64>()
                    .ok()
                    .filter(|a| (16..=1 << 17).contains(a) && (*a as u64).is_power_of_two())
                    .ok_or(format!(
                        "line {}: an alignment is a power of two from 16 to 2^17",
                        self.line_no()
                    ))?,
            ),
            None => (ty, 16),
        };
        let (e, len) = ty
            .strip_suffix(']')
            .and_then(|t| t.split_once('['))
            .ok_or(format!("line {}: expected ELEM[LEN]", self.line_no()))?;
        let buffer = Buffer {
            elem: elem(e).ok_or(format!(
                "line {}: unknown element type `{e}`",
                self.line_no()
            ))?,
            len: len
                .parse()
                .map_err(|_| format!("line {}: bad length `{len}`", self.line_no()))?,
            init,
            align,
            at: 0,
            name,
        };
        Ok((buffer, at))
    }
}
