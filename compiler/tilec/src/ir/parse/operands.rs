//! The tensor-core operands and scalars of the text form read back:
//! element pairs (`bf16.f32`), shape products, wgmma's shared-memory
//! descriptors (`desc(s0[%3], sw128, k, 16, 1024)`), register fragments
//! (`r0[0,1,2,3]`), swizzles and floats.

use super::{Parser, Result, elem};
use crate::ir::{Fragment, SmemOperand};
use tilec_layout::{Elem, Swizzle};

impl Parser<'_> {
    /// `f32` (input and output alike) or `bf16.f32` (input, output).
    pub(super) fn elem_pair(&self, suffix: &str) -> Result<(Elem, Elem)> {
        let (input, output) = suffix.split_once('.').unwrap_or((suffix, suffix));
        let unknown = || format!("line {}: unknown element type", self.line_no());
        Ok((
            elem(input).ok_or_else(unknown)?,
            elem(output).ok_or_else(unknown)?,
        ))
    }

    /// `ATOM C += A * B` of an MMA instruction: the atom (a wgmma one, or a
    /// warp one, as `warpgroup` says) and the texts of C, A and B.
    pub(super) fn product<'t>(
        &self,
        rest: &'t str,
        warpgroup: bool,
    ) -> Result<(tilec_layout::MmaAtom, [&'t str; 3])> {
        let (name, operands) = rest.trim().split_once(' ').unwrap_or((rest, ""));
        let atom = tilec_layout::MmaAtom::named(name)
            .filter(|a| a.warpgroup == warpgroup)
            .ok_or(format!(
                "line {}: unknown MMA atom `{name}`",
                self.line_no()
            ))?;
        let (c, ab) = operands
            .split_once("+=")
            .ok_or(format!("line {}: expected `+=`", self.line_no()))?;
        let (a, b) = ab
            .split_once(" * ")
            .ok_or(format!("line {}: expected `*`", self.line_no()))?;
        Ok((atom, [c, a, b]))
    }

    /// `desc(s0[%5], sw128, k, 16, 1024)`.
    pub(super) fn smem_operand(&mut self, text: &str) -> Result<SmemOperand> {
        let bad = format!(
            "line {}: expected desc(sN[I], LAYOUT, k|mn, LBO, SBO), not `{}`",
            self.line_no(),
            text.trim()
        );
        let inner = text
            .trim()
            .strip_prefix("desc(")
            .and_then(|t| t.strip_suffix(')'))
            .ok_or(bad.clone())?;
        let parts: Vec<&str> = inner.split(", ").collect();
        let [start, layout, major, lbo, sbo] = parts[..] else {
            return Err(bad);
        };
        let offset = |v: &str| v.parse::<i64>().ok().filter(|v| (0..1 << 18).contains(v));
        let desc = tilec_layout::SmemDescriptor {
            swizzle: tilec_layout::DescSwizzle::named(layout).ok_or(bad.clone())?,
            major: match major {
                "k" => tilec_layout::Major::K,
                "mn" => tilec_layout::Major::Mn,
                _ => return Err(bad),
            },
            lbo: offset(lbo).ok_or(bad.clone())?,
            sbo: offset(sbo).ok_or(bad.clone())?,
        };
        Ok(SmemOperand {
            start: self.addr(start)?,
            desc,
        })
    }

    /// `r0[0,1,2,3]`.
    pub(super) fn fragment(&self, text: &str) -> Result<Fragment> {
        let bad = || {
            format!(
                "line {}: expected rN[I,J,...], not `{}`",
                self.line_no(),
                text.trim()
            )
        };
        let (array, index) = text
            .trim()
            .strip_prefix('r')
            .and_then(|t| t.strip_suffix(']'))
            .and_then(|t| t.split_once('['))
            .ok_or_else(bad)?;
        Ok(Fragment {
            array: array.parse().map_err(|_| bad())?,
            index: index
                .split(',')
                .map(|x| x.trim().parse().map_err(|_| bad()))
                .collect::<Result<_>>()?,
        })
    }

    /// `Sw<3,3,3>`.
    pub(super) fn swizzle(&self, s: &str) -> Result<Swizzle> {
        let bad = || format!("line {}: expected Sw<B,M,S>, not `{s}`", self.line_no());
        let inner = s
            .strip_prefix("Sw<")
            .and_then(|t| t.strip_suffix('>'))
            .ok_or_else(bad)?;
        let p: Vec<i64> = inner
            .split(',')
            .map(|x| x.trim().parse().map_err(|_| bad()))
            .collect::<Result<_>>()?;
        match p[..] {
            [b, m, sh] => {
                Swizzle::new(b, m, sh).map_err(|e| format!("line {}: {e}", self.line_no()))
            }
            _ => Err(bad()),
        }
    }

    pub(super) fn float(&self, s: &str) -> Result<f64> {
        s.parse()
            .map_err(|_| format!("line {}: `{s}` is not a number", self.line_no()))
    }
}
