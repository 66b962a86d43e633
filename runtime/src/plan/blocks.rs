//! Which entry point runs on which box of blocks: the full-tile entry on
//! the box from block 0 where its block conditions provably hold, the next
//! variant that runs any block on the edge boxes around it. In: the
//! manifest's variants whose launch conditions hold, the grid, the
//! extents. Out: the launches, each a variant, a box and its offset.

use super::Launch;
use crate::RuntimeError;
use crate::manifest::{LaunchCondition, Manifest};
use tilec_layout::Builtin;

/// The dimension `name` indexes, if it is `block.x`, `block.y` or `block.z`.
fn block_dim(name: &str) -> Option<usize> {
    match Builtin::parse(name) {
        Some(Builtin::Block(d)) => Some(d as usize),
        _ => None,
    }
}

/// Which entry points run on which blocks (see [`LaunchPlan::launches`]);
/// `usable`: the variants whose launch conditions hold, in order.
pub(super) fn launches(
    m: &Manifest,
    usable: &[usize],
    grid: [u32; 3],
    extent: &dyn Fn(&str) -> Option<i64>,
) -> Result<Vec<Launch>, RuntimeError> {
    let mut out = Vec::new();
    let mut rest = vec![(grid, [0; 3])];
    for &i in usable {
        let v = &m.variants[i];
        if v.block_conditions.is_empty() {
            for (g, offset) in rest {
                if offset != [0; 3] && !v.block_offset {
                    return Err(RuntimeError::Manifest(format!(
                        "{} cannot run part of the grid (no block offset)",
                        v.entry
                    )));
                }
                out.push(Launch {
                    variant: i,
                    grid: g,
                    offset,
                });
            }
            return Ok(out);
        }
        if out.is_empty() {
            // Whole clusters of full blocks; the rest go to the edges.
            let mut full = full_blocks(&v.block_conditions, grid, extent);
            for (f, c) in full.iter_mut().zip(v.cluster) {
                *f -= *f % c;
            }
            if !full.contains(&0) {
                out.push(Launch {
                    variant: i,
                    grid: full,
                    offset: [0; 3],
                });
                rest = edges(grid, full);
                if rest.is_empty() {
                    return Ok(out);
                }
            }
        }
    }
    let blocks: u64 = rest
        .iter()
        .map(|(g, _)| g.iter().map(|&n| n as u64).product::<u64>())
        .sum();
    Err(RuntimeError::Condition(format!(
        "{blocks} blocks have partial tiles, and no variant whose conditions hold runs them"
    )))
}

/// The box of blocks from block 0 on where every fact holds for every
/// block: per dimension, the most blocks on which the facts about it hold
/// (a fact that holds on more blocks holds on fewer), found by bisection
/// and proved by interval arithmetic. A zero somewhere: no such block.
fn full_blocks(
    facts: &[LaunchCondition],
    grid: [u32; 3],
    extent: &dyn Fn(&str) -> Option<i64>,
) -> [u32; 3] {
    let mut full = grid;
    for d in 0..3 {
        // The facts about this dimension, and earlier ones only.
        let last_dim = |c: &&LaunchCondition| {
            let mut names = Vec::new();
            c.fact.names(&mut names);
            names.iter().filter_map(|n| block_dim(n)).max()
        };
        let here: Vec<&LaunchCondition> = facts.iter().filter(|c| last_dim(c) == Some(d)).collect();
        let holds = |n: u32| {
            let range = |name: &str| match block_dim(name) {
                Some(e) if e == d => Some((0, n as i64 - 1)),
                Some(e) => Some((0, full[e] as i64 - 1)),
                None => extent(name).map(|v| (v, v)),
            };
            n == 0 || here.iter().all(|c| c.fact.holds_throughout(&range))
        };
        let (mut lo, mut hi) = (0, grid[d]);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if holds(mid) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        full[d] = lo;
        if lo == 0 {
            return [0; 3];
        }
    }
    full
}

/// The blocks of `grid` outside the box `full` (from block 0), as disjoint
/// boxes (size, offset): past it in x; then, within its x range, past it
/// in y; then within both, past it in z.
fn edges(grid: [u32; 3], full: [u32; 3]) -> Vec<([u32; 3], [u32; 3])> {
    (0..3)
        .map(|d| {
            let mut size = grid;
            let mut offset = [0; 3];
            size[..d].copy_from_slice(&full[..d]);
            size[d] = grid[d] - full[d];
            offset[d] = full[d];
            (size, offset)
        })
        .filter(|(size, _)| !size.contains(&0))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilec_layout::{Fact, Int};

    #[test]
    fn the_full_box_and_the_edges_cover_the_grid_once() {
        for gx in 1..5u32 {
            for gy in 1..4u32 {
                for gz in 1..3u32 {
                    let grid = [gx, gy, gz];
                    for full in (1..=gx)
                        .flat_map(|x| (1..=gy).flat_map(move |y| (1..=gz).map(move |z| [x, y, z])))
                    {
                        let mut count = vec![0; (gx * gy * gz) as usize];
                        let boxes = std::iter::once((full, [0; 3])).chain(edges(grid, full));
                        for (size, offset) in boxes {
                            for z in offset[2]..offset[2] + size[2] {
                                for y in offset[1]..offset[1] + size[1] {
                                    for x in offset[0]..offset[0] + size[0] {
                                        count[(x + gx * (y + gy * z)) as usize] += 1;
                                    }
                                }
                            }
                        }
                        assert!(count.iter().all(|&c| c == 1), "{grid:?} {full:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn full_blocks_are_the_most_the_facts_allow_in_each_dimension() {
        // (64*(block.x+1)) <= M and (32*(block.z+1)) <= P, nothing about y.
        let fact = |b: &str, tile: i64, e: &str| LaunchCondition {
            fact: Fact::Le(
                Int::var(b).add(&Int::from(1)).mul(&Int::from(tile)),
                Int::var(e),
            ),
            needed_by: "full tiles".into(),
        };
        let facts = [fact("block.x", 64, "M"), fact("block.z", 32, "P")];
        let extent = |n: &str| match n {
            "M" => Some(200),
            "P" => Some(96),
            _ => None,
        };
        assert_eq!(full_blocks(&facts, [4, 5, 4], &extent), [3, 5, 3]);
        // No full block in x: no box at all.
        let small = |n: &str| if n == "M" { Some(63) } else { extent(n) };
        assert_eq!(full_blocks(&facts, [1, 5, 4], &small), [0; 3]);
    }
}
