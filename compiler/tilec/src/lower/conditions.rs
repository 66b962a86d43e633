//! Which of the checker's conditions an entry needs: its full-tile facts
//! where the entry touches the tiles' elements, as they hold on the
//! caller's buffers; facts of the block apart from those the runtime
//! checks at launch. In: a kernel and what lowering an entry found. Out:
//! (facts of the block, launch conditions).

use super::Variant;
use crate::check::kernel::FULL_TILES;
use crate::check::program::Kernel;
use tilec_layout::{Builtin, Condition, Fact, Int};

/// The conditions of `k` that the `variant` entry needs (`by_element`: the
/// tensors it touches element by element; `untested`: those it touches
/// outside a test of the thread's whole copy), split into the facts of the
/// block and the launch conditions.
pub(super) fn needed(
    k: &Kernel,
    variant: Variant,
    by_element: &[usize],
    untested: &[usize],
) -> (Vec<Condition>, Vec<Condition>) {
    // The full-tile entry needs a tensor's tiles full only where it touches
    // their elements: TMA fills zeros past a tensor's edge, so a partial
    // k-tile read by TMA alone costs the fast entry nothing.
    // Nor a tensor's k-tiles full where each of its copies tests the
    // thread's whole copy ([`super::residue`]): only the facts about its blocks
    // then remain, the tiles of C and the rows and columns of A and B.
    let needed = |c: &&Condition| {
        c.needed_by != FULL_TILES
            || match variant {
                Variant::Full => c.tensor.is_none_or(|p| by_element.contains(&p)),
                Variant::KResidue | Variant::Unaligned => c.tensor.is_none_or(|p| {
                    by_element.contains(&p) && (is_block_fact(c) || untested.contains(&p))
                }),
                Variant::GuardedVectors | Variant::Guarded => false,
            }
    };
    let mut kept: Vec<Condition> = Vec::new();
    for c in k.conditions.iter().filter(needed) {
        let c = Condition {
            tensor: None,
            fact: k.in_place(&c.fact),
            ..c.clone()
        };
        if !kept.contains(&c) {
            kept.push(c);
        }
    }
    // `x <= A.padded.0` follows from `x <= M` where A declares M there: a
    // padded extent is at least its declared one at every launch.
    let implied = |c: &Condition| match &c.fact {
        Fact::Le(a, b) => k.strides.iter().any(|s| {
            s.padded
                && *b == Int::var(&s.name)
                && kept
                    .iter()
                    .any(|d| d.fact == Fact::Le(a.clone(), s.declared.clone()))
        }),
        _ => false,
    };
    let kept: Vec<Condition> = kept.iter().filter(|c| !implied(c)).cloned().collect();
    kept.into_iter().partition(is_block_fact)
}

/// Whether a full-tile fact is about a block's tile (it names `block.*`),
/// not about every block alike (a k-tile).
pub(super) fn is_block_fact(c: &Condition) -> bool {
    let mut names = Vec::new();
    c.fact.names(&mut names);
    c.needed_by == FULL_TILES && names.iter().any(|n| Builtin::is_block(n))
}

/// `conditions` less each divisibility that another implies (`N % 2 == 0`
/// beside `N % 4 == 0`): the same launches, one reason fewer to read.
pub(super) fn without_implied(conditions: Vec<Condition>) -> Vec<Condition> {
    let divides = |f: &Fact| match f {
        Fact::Divides { divisor, dividend } => divisor.as_static().map(|d| (d, dividend.clone())),
        _ => None,
    };
    let implied = |c: &Condition| {
        divides(&c.fact).is_some_and(|(d, x)| {
            conditions.iter().any(|o| {
                divides(&o.fact).is_some_and(|(e, y)| y == x && e != d && d != 0 && e % d == 0)
            })
        })
    };
    let keep: Vec<bool> = conditions.iter().map(|c| !implied(c)).collect();
    conditions
        .into_iter()
        .zip(keep)
        .filter_map(|(c, k)| k.then_some(c))
        .collect()
}
