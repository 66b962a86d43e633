//! The text form of pipelines read back: `tensor_map` declarations, the
//! `pipeline ... {` header and `tma` loads, prefetches and stores.

use super::{Parser, Result};
use crate::ir::{InstKind, IntId, Param, TensorMapIr, Turn};

impl Parser<'_> {
    /// `tN: A, box (64, 128), extent (%1, %2), stride (1, %1), swizzle 128`.
    pub(super) fn tensor_map(&mut self, text: &str) -> Result<TensorMapIr> {
        let line = self.line_no();
        let bad = || {
            format!(
                "line {line}: expected `tN: TENSOR, box (..), extent (..), stride (..), swizzle B`"
            )
        };
        let (_, rest) = text.split_once(": ").ok_or_else(bad)?;
        let (tensor, rest) = rest.split_once(", box (").ok_or_else(bad)?;
        let (boxes, rest) = rest.split_once("), extent (").ok_or_else(bad)?;
        let (extents, rest) = rest.split_once("), stride (").ok_or_else(bad)?;
        let (strides, swizzle) = rest.split_once("), swizzle ").ok_or_else(bad)?;
        let param = self
            .ir
            .params
            .iter()
            .position(|p| matches!(p, Param::Tensor { name, .. } if name == tensor.trim()))
            .ok_or(format!("line {}: no tensor `{tensor}`", self.line_no()))?;
        let boxes: Vec<i64> = boxes
            .split(',')
            .map(|b| b.trim().parse().map_err(|_| bad()))
            .collect::<Result<_>>()?;
        let extents: Vec<IntId> = extents
            .split(',')
            .map(|o| self.operand(o))
            .collect::<Result<_>>()?;
        let strides: Vec<IntId> = strides
            .split(',')
            .map(|o| self.operand(o))
            .collect::<Result<_>>()?;
        if boxes.len() != extents.len() || boxes.len() != strides.len() {
            return self.fail("a tensor map's box, extents and strides differ in length");
        }
        Ok(TensorMapIr {
            param,
            dims: extents
                .into_iter()
                .zip(strides)
                .zip(boxes)
                .map(|((e, s), b)| (e, s, b))
                .collect(),
            swizzle_bytes: swizzle.trim().parse().map_err(|_| bad())?,
        })
    }

    /// `pipeline ID NAME in START..END stages S bytes B [lag L] [turn ID
    /// NAME in START..END groups G] {` (the rest of the line).
    pub(super) fn pipeline(&mut self, rest: &str) -> Result<InstKind> {
        let words: Vec<&str> = rest.split_whitespace().collect();
        let expected = "expected `pipeline ID NAME in START..END stages S bytes B [lag L] [turn ID NAME in START..END groups G] {`";
        let [
            id,
            name,
            "in",
            range,
            "stages",
            stages,
            "bytes",
            bytes,
            ref rest @ ..,
        ] = words[..]
        else {
            return self.fail(expected);
        };
        let (lag, rest) = match rest {
            ["lag", lag, rest @ ..] => (*lag, rest),
            rest => ("0", rest),
        };
        let line = self.line_no();
        let number = |w: &str| {
            w.parse::<i64>()
                .map_err(|_| format!("line {line}: bad number `{w}`"))
        };
        let turn = match rest {
            ["{"] => None,
            ["turn", id, name, "in", range, "groups", groups, "{"] => {
                let (start, end) = self.range(range)?;
                Some(Turn {
                    id: number(id)? as usize,
                    name: name.to_string(),
                    start,
                    end,
                    groups: u32::try_from(number(groups)?)
                        .ok()
                        .filter(|g| *g > 0)
                        .ok_or(format!("line {line}: bad group count `{groups}`"))?,
                })
            }
            _ => return self.fail(expected),
        };
        let (start, end) = self.range(range)?;
        Ok(InstKind::Pipeline {
            id: number(id)? as usize,
            name: name.to_string(),
            start,
            end,
            stages: number(stages)? as u32,
            bytes: number(bytes)?,
            lag: u32::try_from(number(lag)?)
                .map_err(|_| format!("line {line}: bad lag `{lag}`"))?,
            turn,
            load: Vec::new(),
            prefetch: Vec::new(),
            body: Vec::new(),
            after: Vec::new(),
        })
    }

    /// `START..END`, two operands (a loop's or a pipeline's range).
    pub(super) fn range(&mut self, range: &str) -> Result<(IntId, IntId)> {
        let (start, end) = range
            .split_once("..")
            .ok_or(format!("line {}: expected START..END", self.line_no()))?;
        Ok((self.operand(start)?, self.operand(end)?))
    }

    /// `tma tN (ORIGIN, ...) -> s0[INDEX] [multicast PARTS]`, a load,
    /// `tma tN (ORIGIN, ...) -> L2`, a prefetch, or
    /// `tma tN (ORIGIN, ...) <- s0[INDEX]`, a store (after `tma `).
    pub(super) fn tma(&mut self, rest: &str) -> Result<InstKind> {
        let (rest, parts) = match rest.rsplit_once(" multicast ") {
            Some((r, n)) => (
                r,
                n.trim()
                    .parse()
                    .map_err(|_| format!("line {}: bad multicast `{n}`", self.line_no()))?,
            ),
            None => (rest, 1),
        };
        let (map, rest) = rest.split_once(" (").ok_or(format!(
            "line {}: expected `tma tN (...) -> DST` or `tma tN (...) <- SRC`",
            self.line_no()
        ))?;
        let map = map
            .strip_prefix('t')
            .and_then(|m| m.parse().ok())
            .ok_or(format!("line {}: bad tensor map `{map}`", self.line_no()))?;
        let (origin, store, place) = match (rest.split_once(") ->"), rest.split_once(") <-")) {
            (Some((o, d)), None) => (o, false, d),
            (None, Some((o, s))) if parts == 1 => (o, true, s),
            _ => {
                return Err(format!(
                    "line {}: expected `) -> DST` or `) <- SRC` (a store is not multicast)",
                    self.line_no()
                ));
            }
        };
        let origin = origin
            .split(',')
            .map(|o| self.operand(o))
            .collect::<Result<_>>()?;
        if !store && parts == 1 && place.trim() == "L2" {
            return Ok(InstKind::TmaPrefetch { map, origin });
        }
        let place = self.addr(place)?;
        Ok(match store {
            false => InstKind::TmaLoad {
                map,
                origin,
                dst: place,
                parts,
            },
            true => InstKind::TmaStore {
                map,
                origin,
                src: place,
            },
        })
    }
}
