//! A tensor parameter's stride symbols as the checker makes them: which
//! strides become run-time names (`A.stride.0`), which row mode gets a
//! padded extent (`A.padded.1`), and which tensors a launch may copy
//! (docs/design/strides.md; their uses: `check::strides`).

use super::KernelChecker;
use crate::check::program::{Base, CoordFn, Launch, Op, Stmt, StrideSymbol, View};
use tilec_layout::{Int, Layout};

impl KernelChecker {
    /// Parameter `name`'s declared layout `l` with each stride leaf that is
    /// not a constant replaced by a symbol of its own (recorded in
    /// `strides`): `(M, K):(K, 1)` becomes `(M, K):(A.stride.0, 1)`. Where
    /// the layout can be copied into rows of its own pitch (one mode of
    /// stride 1, every other stride a symbol), that mode's guard in
    /// `coords` compares with `A.padded.1` instead of K: on a copy whose
    /// rows are zero past K, a load up to the pitch reads what a guarded
    /// one would.
    pub(super) fn stride_symbols(
        &mut self,
        name: &str,
        l: &Layout,
        coords: &mut [CoordFn],
    ) -> Layout {
        let param = self.params.len();
        let first = self.strides.len();
        let mut leaves = l
            .stride()
            .leaves()
            .into_iter()
            .enumerate()
            .map(|(leaf, s)| {
                if s.is_static() {
                    return s;
                }
                let symbol = format!("{name}.stride.{leaf}");
                self.strides.push(StrideSymbol {
                    name: symbol.clone(),
                    param,
                    leaf,
                    declared: s,
                    padded: false,
                    in_place: true,
                });
                Int::var(&symbol)
            });
        let stride = l.stride().unflatten_like(&mut leaves);
        let strides = l.stride().leaves();
        let symbols = self.strides.len() - first;
        let unit: Vec<usize> = (0..strides.len())
            .filter(|&i| strides[i].is_const(1))
            .collect();
        if symbols == 0 || symbols + 1 != strides.len() || unit.len() != 1 || !compact(l) {
            return Layout::new(l.shape().clone(), stride).expect("the declared layout's profile");
        }
        // The mode whose only leaf is the unit-stride one, if it is a mode.
        let mut at = 0;
        for (i, m) in l.shape().modes().iter().enumerate() {
            let n = m.leaves().len();
            if n == 1 && at == unit[0] {
                let symbol = format!("{name}.padded.{at}");
                self.strides.push(StrideSymbol {
                    name: symbol.clone(),
                    param,
                    leaf: at,
                    declared: coords[i].extent.clone(),
                    padded: true,
                    in_place: true,
                });
                coords[i].extent = Int::var(&symbol);
            }
            at += n;
        }
        Layout::new(l.shape().clone(), stride).expect("the declared layout's profile")
    }

    /// The tensor parameters a launch may read through a copy: those the
    /// kernel only reads, some of whose views leave out a block index the
    /// grid spans, or follow the counter of a loop whose bounds depend on
    /// one, so that several blocks read their elements (a GEMM's A and B;
    /// a stream-K GEMM's, whose blocks walk overlapping runs of tiles; not
    /// `add`'s operands, which a copy would read once more).
    /// Not one the kernel asks `inside()` of (inside the tensor is not
    /// inside the copy's padded rows), nor one whose strides it computes
    /// with outside an index (`launch grid(cosize(A) / 256)`: a copy would
    /// change the grid).
    pub(super) fn copied_params(&self, body: &[Stmt], launch: &Launch) -> Vec<usize> {
        let spanned: Vec<&str> = ["block.x", "block.y", "block.z"]
            .into_iter()
            .zip(&launch.grid)
            .filter(|(_, g)| !g.is_const(1))
            .map(|(b, _)| b)
            .collect();
        // Counters of loops whose bounds depend on a spanned block index
        // (directly, or through such a counter): a block's run of tiles.
        let mut walking: Vec<String> = Vec::new();
        crate::check::program::walk(body, &mut |s| {
            if let Op::For {
                var, start, end, ..
            } = &s.op
            {
                let mut names = Vec::new();
                start.names(&mut names);
                end.names(&mut names);
                if names
                    .iter()
                    .any(|n| spanned.contains(&n.as_str()) || walking.contains(n))
                {
                    walking.push(var.clone());
                }
            }
        });
        let (mut written, mut shared) = (Vec::new(), Vec::new());
        // Names used outside a view's index, and tensors asked `inside()` of.
        let (mut outside, mut inside) = (Vec::new(), Vec::new());
        // The names each view's index uses, by the parameter it views (a
        // stride of A in an index into X reads the copy's pitch or A's
        // stride as the runtime chooses: A then is not copied).
        let mut indices: Vec<(Option<usize>, Vec<String>)> = Vec::new();
        for x in launch.grid.iter().chain(&launch.block) {
            x.names(&mut outside);
        }
        crate::check::program::walk(body, &mut |s| {
            if let Some(View {
                base: Base::Param(p),
                ..
            }) = s.op.written()
            {
                written.push(*p);
            }
            let read = s.op.read();
            let reads = read.len();
            for (i, v) in read.into_iter().chain(s.op.written()).enumerate() {
                let names = index_names(&v.offset, &v.layout);
                let base = match v.base {
                    Base::Param(p) => Some(p),
                    _ => None,
                };
                // A read whose index misses a spanned block index, or walks
                // a block's run of tiles, is shared between blocks.
                if let Some(p) = base.filter(|_| i < reads)
                    && (spanned.iter().any(|b| !names.iter().any(|n| n == b))
                        || names.iter().any(|n| walking.contains(n)))
                {
                    shared.push(p);
                }
                indices.push((base, names));
            }
            match &s.op {
                Op::For { start, end, .. } | Op::Pipeline { start, end, .. } => {
                    start.names(&mut outside);
                    end.names(&mut outside);
                    if let Op::Pipeline { turn: Some(t), .. } = &s.op {
                        t.start.names(&mut outside);
                        t.end.names(&mut outside);
                    }
                }
                Op::If { cond, .. } => cond.names(&mut outside),
                Op::Assign { value, .. } => {
                    value.integers_and_insides(&mut outside, &mut inside);
                    // `coord(t, m)` and `inside(t)` read their views' indices too.
                    value.for_each_view(&mut |v| {
                        let base = match v.base {
                            Base::Param(p) => Some(p),
                            _ => None,
                        };
                        let mut names = index_names(&v.offset, &v.layout);
                        for c in &v.coords {
                            names.extend(index_names(&c.offset, &c.layout));
                            c.extent.names(&mut names);
                        }
                        indices.push((base, names));
                    });
                }
                _ => {}
            }
        });
        let computed = |p: &usize| {
            self.strides.iter().any(|s| {
                s.param == *p
                    && (outside.contains(&s.name)
                        || indices
                            .iter()
                            .any(|(base, names)| *base != Some(*p) && names.contains(&s.name)))
            })
        };
        shared.retain(|p| !written.contains(p) && !inside.contains(p) && !computed(p));
        shared
    }
}

/// The names an index (a view's, or a coordinate's) uses: its offset and
/// layout.
fn index_names(offset: &Int, layout: &Layout) -> Vec<String> {
    let mut names = Vec::new();
    offset.names(&mut names);
    for x in layout
        .shape()
        .leaves()
        .iter()
        .chain(&layout.stride().leaves())
    {
        x.names(&mut names);
    }
    names
}

/// Whether layout `l` maps its coordinates onto `0..size` one to one (no
/// gaps between its rows or batches), as far as two assignments of its
/// extents show: the runtime copies such a tensor into rows in one pitched
/// copy. A layout this misjudges is refused a copy at launch
/// (`staging::whole`), never given a wrong one.
fn compact(l: &Layout) -> bool {
    let mut names = Vec::new();
    for x in l.shape().leaves().iter().chain(&l.stride().leaves()) {
        x.names(&mut names);
    }
    [(3, 2), (7, 4)].iter().all(|&(first, step)| {
        let at = |n: &str| {
            let i = names.iter().position(|m| m == n)? as i64;
            Some(first + step * i)
        };
        let (cosize, size) = (l.cosize().eval(&at), l.size().eval(&at));
        cosize.is_some() && cosize == size
    })
}
