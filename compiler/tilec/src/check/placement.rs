//! Where each shared buffer lies in a block's shared memory. Buffers whose
//! lifetimes do not meet share bytes: a GEMM's tile of C, used only after
//! the main loop, takes the memory of the stages the main loop is done
//! with (CUTLASS's union of mainloop and epilogue storage), so an epilogue
//! through shared memory costs no pipeline stage. A lifetime is counted in
//! positions of the kernel's top level, a statement each: the checker
//! counts them over statements, lowering over the instructions each
//! statement becomes (in order, so the same buffers meet, or fewer where a
//! variant drops an access), and the IR verifier requires a barrier
//! wherever memory changes hands (`ir::shared`).

use super::program::{Base, Op, Stmt};

/// The positions of the top level that touch a buffer, first and last.
/// Its bytes may go to a later buffer after the last unless an
/// asynchronous write may still land in them: `pinned` for a buffer that
/// `cp.async` writes (a copy may be in flight past any position) until a
/// top-level wait for every copy at position `released` (lowering's
/// instructions only: `ir::shared`), after which its bytes may go to a
/// buffer first used later; `pending` when its last access is a TMA load
/// waited for later.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Lifetime {
    pub first: usize,
    pub last: usize,
    pub pinned: bool,
    pub pending: bool,
    pub released: usize,
}

impl Lifetime {
    pub fn releasable(self) -> bool {
        !self.pinned && !self.pending
    }

    /// The last position at which the buffer's bytes are still its own.
    pub fn held_until(self) -> usize {
        self.last.max(self.released)
    }

    /// Whether the two buffers may not share bytes; a buffer nothing
    /// touches (`None`) conflicts with none.
    pub fn conflict(a: Option<Lifetime>, b: Option<Lifetime>) -> bool {
        match (a, b) {
            (Some(a), Some(b)) => {
                let (early, late) = if a.first <= b.first { (a, b) } else { (b, a) };
                early.held_until() >= late.first || !early.releasable()
            }
            _ => false,
        }
    }

    /// Moves the lifetime's start to the kernel's: a pipeline's producer
    /// warpgroup splits off at the kernel's start and loads its stages from
    /// then on, whatever the other threads do before the pipeline.
    pub fn from_start(life: &mut Option<Lifetime>) {
        if let Some(l) = life {
            l.first = 0;
        }
    }

    /// Records an access at `position` (positions come in order):
    /// `asynchronous` for a `cp.async` into the buffer, `pending` for a
    /// TMA load waited for at a later position.
    pub fn touch(life: &mut Option<Lifetime>, position: usize, asynchronous: bool, pending: bool) {
        let l = life.get_or_insert(Lifetime {
            first: position,
            last: position,
            pinned: false,
            pending: false,
            released: 0,
        });
        if position != l.last {
            // The later access waited for what was in flight.
            l.pending = false;
        }
        l.last = position;
        l.pinned |= asynchronous;
        l.pending |= pending;
    }
}

/// Each buffer's byte offset, at its alignment, and the bytes all of them
/// take (each buffer rounded up to 16 bytes); `None` past 2^63. A buffer
/// goes after every earlier buffer its lifetime conflicts with, so without
/// shared lifetimes the buffers lie one after the other, in order.
/// `buffers` holds (bytes, alignment) and `lives` a lifetime per buffer.
pub fn place(buffers: &[(i64, i64)], lives: &[Option<Lifetime>]) -> Option<(Vec<i64>, i64)> {
    let mut ends: Vec<i64> = Vec::with_capacity(buffers.len());
    let mut offsets = Vec::with_capacity(buffers.len());
    let mut total = 0;
    for (i, &(bytes, align)) in buffers.iter().enumerate() {
        let after = (0..i)
            .filter(|&j| Lifetime::conflict(lives[i], lives[j]))
            .map(|j| ends[j])
            .max()
            .unwrap_or(0);
        let start = after.checked_add(align - 1)? / align * align;
        let end = start.checked_add(bytes.checked_add(15)? / 16 * 16)?;
        offsets.push(start);
        ends.push(end);
        total = total.max(end);
    }
    Some((offsets, total))
}

/// The lifetimes of `count` buffers in a checked kernel's body.
pub fn lifetimes(body: &[Stmt], count: usize) -> Vec<Option<Lifetime>> {
    let mut lives = vec![None; count];
    let mut position = 0;
    visit(body, &mut position, &mut lives);
    lives
}

fn visit(list: &[Stmt], position: &mut usize, lives: &mut [Option<Lifetime>]) {
    for s in list {
        let mut touched = Vec::new();
        super::program::walk(std::slice::from_ref(s), &mut |s| {
            let asynchronous = matches!(
                s.op,
                Op::Copy {
                    asynchronous: true,
                    ..
                }
            );
            touched.extend(s.op.read().into_iter().chain(s.op.written()).filter_map(
                |v| match v.base {
                    Base::Shared(b) => Some((b, asynchronous)),
                    _ => None,
                },
            ));
        });
        // A block's own TMA load, waited for at a later position.
        let pending = matches!(&s.op, Op::CopyTma { stage: false, tma, .. } if !tma.map.store);
        for &(b, asynchronous) in &touched {
            Lifetime::touch(&mut lives[b], *position, asynchronous, pending);
        }
        if let Op::Pipeline { load, .. } = &s.op {
            super::program::walk(load, &mut |s| {
                if let Op::CopyTma { dst, .. } = &s.op
                    && let Base::Shared(b) = dst.base
                {
                    Lifetime::from_start(&mut lives[b]);
                }
            });
        }
        *position += 1;
    }
}
