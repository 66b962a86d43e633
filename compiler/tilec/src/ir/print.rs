//! The IR's text form (`tilec build --emit ir`), which [`super::parse`] reads back.

use super::*;

impl KernelIr {
    /// The text form (`tilec build --emit ir`).
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let params: Vec<String> = self
            .params
            .iter()
            .map(|p| match p {
                Param::Tensor { name, elem } => format!("{name}: global {elem}*"),
                Param::Scalar { name, elem } => format!("{name}: {elem}"),
            })
            .chain(self.extents.iter().map(|e| format!("{e}: i64")))
            .chain(self.block_offset.then(|| "block_offset: u32x3".to_string()))
            .collect();
        let min_blocks = self
            .min_blocks
            .map_or(String::new(), |m| format!(" min_blocks {m}"));
        let cluster = match self.cluster {
            [1, 1, 1] => String::new(),
            [x, y, z] => format!(
                " cluster {x}x{y}x{z}{}",
                if self.pads { " pads" } else { "" }
            ),
        };
        let _ = writeln!(
            out,
            "kernel {}({}) block {}{min_blocks}{cluster}",
            self.name,
            params.join(", "),
            self.block_threads
        );
        // Offsets are printed where buffers share bytes; without them, the
        // buffers lie one after the other.
        let placed = self.shared_aliases();
        for (i, b) in self.shared.iter().enumerate() {
            let align = match b.align {
                16 => String::new(),
                a => format!(" align {a}"),
            };
            let at = match placed {
                true => format!(" at {}", b.at),
                false => String::new(),
            };
            let _ = writeln!(out, "{}{align}{at}", buffer_line("shared s", i, b));
        }
        for (i, b) in self.registers.iter().enumerate() {
            let init = b.init.map_or(String::new(), |v| format!(" = {v:?}"));
            let _ = writeln!(out, "{}{init}", buffer_line("registers r", i, b));
        }
        self.write_ints(&mut out, None, 1);
        for (i, m) in self.tensor_maps.iter().enumerate() {
            let list = |f: &dyn Fn(&(IntId, IntId, i64)) -> String| {
                m.dims.iter().map(f).collect::<Vec<_>>().join(", ")
            };
            let _ = writeln!(
                out,
                "  tensor_map t{i}: {}, box ({}), extent ({}), stride ({}), swizzle {}",
                param_name(&self.params[m.param]),
                list(&|d| d.2.to_string()),
                list(&|d| self.operand(d.0)),
                list(&|d| self.operand(d.1)),
                m.swizzle_bytes
            );
        }
        self.write_insts(&mut out, &self.body, 1);
        out
    }

    fn write_ints(&self, out: &mut String, scope: Option<usize>, depth: usize) {
        let pad = "  ".repeat(depth);
        for (i, v) in self.ints.iter().enumerate() {
            if v.scope != scope || matches!(v.def, IntDef::Const(_)) {
                continue;
            }
            let rhs = match &v.def {
                IntDef::Const(c) => c.to_string(),
                IntDef::ThreadIdx => Builtin::Thread.name().into(),
                IntDef::BlockIdx(d) => Builtin::Block(*d).name().into(),
                IntDef::Extent(e) => format!("extent {}", self.extents[*e]),
                IntDef::LoopVar(l) => format!("counter of loop {l}"),
                IntDef::Bin(op, a, b) => format!(
                    "{}{} {}, {}",
                    op_name(*op),
                    if v.narrow { NARROW_SUFFIX } else { "" },
                    self.operand(*a),
                    self.operand(*b)
                ),
                IntDef::Below(a, b) => {
                    format!("below {}, {}", self.operand(*a), self.operand(*b))
                }
                IntDef::Swizzle(a, sw) => format!("swizzle {}, {sw}", self.operand(*a)),
                IntDef::Compare(op, a, b) => {
                    format!("{op} {}, {}", self.operand(*a), self.operand(*b))
                }
            };
            let _ = writeln!(out, "{pad}%{i} = {rhs}");
        }
    }

    /// A value as an operand: constants inline, others by number.
    pub fn operand(&self, id: IntId) -> String {
        match self.ints[id].def {
            IntDef::Const(c) => c.to_string(),
            _ => format!("%{id}"),
        }
    }

    /// `desc(s0[%5], sw128, k, 16, 1024)`: start, layout type, major, LBO, SBO.
    fn smem_operand(&self, o: &SmemOperand) -> String {
        let d = &o.desc;
        let major = match d.major {
            tilec_layout::Major::K => "k",
            tilec_layout::Major::Mn => "mn",
        };
        format!(
            "desc({}, {}, {major}, {}, {})",
            self.addr(&o.start),
            d.swizzle.name(),
            d.lbo,
            d.sbo
        )
    }

    fn addr(&self, a: &Addr) -> String {
        let base = match a.space {
            Space::Global(p) => match &self.params[p] {
                Param::Tensor { name, .. } | Param::Scalar { name, .. } => name.clone(),
            },
            Space::Shared(s) => format!("s{s}"),
            Space::Registers(r) => format!("r{r}"),
        };
        match a.guard {
            Some(g) => format!(
                "{base}[{} if {} > 0]",
                self.operand(a.index),
                self.operand(g)
            ),
            None => format!("{base}[{}]", self.operand(a.index)),
        }
    }

    fn scalar(&self, s: &ScalarRef) -> String {
        match s {
            ScalarRef::Param(p) => match &self.params[*p] {
                Param::Tensor { name, .. } | Param::Scalar { name, .. } => name.clone(),
            },
            ScalarRef::Literal(v) => format!("{v:?}"),
        }
    }

    /// `f32:A[%3]` loads, scalars, `exp(x)`, `bf16(x)`, `add(a, b)`,
    /// `fma(a, b, c)`, `select(c, a, b)`.
    fn arith(&self, a: &Arith) -> String {
        match a {
            Arith::Load(at, elem) => format!("{elem}:{}", self.addr(at)),
            Arith::Scalar(s) => self.scalar(s),
            Arith::Unary(op, x) => format!("{op}({})", self.arith(x)),
            Arith::Convert(elem, x) => format!("{elem}({})", self.arith(x)),
            Arith::Binary(op, x, y) => format!("{op}({}, {})", self.arith(x), self.arith(y)),
            Arith::Fma(x, y, z) => format!(
                "fma({}, {}, {})",
                self.arith(x),
                self.arith(y),
                self.arith(z)
            ),
            Arith::Select(x, y, z) => format!(
                "select({}, {}, {})",
                self.arith(x),
                self.arith(y),
                self.arith(z)
            ),
            Arith::Shuffle(x, mask) => format!("shfl_xor({}, {mask})", self.arith(x)),
            Arith::Inside(g) => format!("inside({})", self.operand(*g)),
            Arith::Int(g) => format!("int({})", self.operand(*g)),
        }
    }

    fn write_insts(&self, out: &mut String, insts: &[Inst], depth: usize) {
        let pad = "  ".repeat(depth);
        for inst in insts {
            let _ = match &inst.kind {
                InstKind::Copy { atom, src, dst } => {
                    let suffix = match atom {
                        CopyAtom::Scalar(e) => e.to_string(),
                        CopyAtom::Vector(e, w) => format!("{e}x{w}"),
                        CopyAtom::Async(e, w) => format!("async.{e}x{w}"),
                        CopyAtom::Convert(from, to) => format!("{from}.{to}"),
                    };
                    writeln!(
                        out,
                        "{pad}copy.{suffix} {} -> {}",
                        self.addr(src),
                        self.addr(dst)
                    )
                }
                InstKind::Mma {
                    atom: MmaAtom::Fma { ab, c: ce },
                    a,
                    b,
                    c,
                } => {
                    writeln!(
                        out,
                        "{pad}fma.{} {} += {} * {}",
                        elem_pair(*ab, *ce),
                        self.addr(c),
                        self.addr(a),
                        self.addr(b)
                    )
                }
                InstKind::Matrix {
                    store,
                    elem,
                    count,
                    trans,
                    shared,
                    regs,
                } => {
                    let (shared, regs) = (self.addr(shared), fragment(regs));
                    let (op, from, to) = match store {
                        false => ("ld", &shared, &regs),
                        true => ("st", &regs, &shared),
                    };
                    let trans = if *trans { ".trans" } else { "" };
                    writeln!(out, "{pad}{op}matrix.x{count}{trans}.{elem} {from} -> {to}")
                }
                InstKind::MmaSync { atom, a, b, c } => writeln!(
                    out,
                    "{pad}mma.sync {} {} += {} * {}",
                    atom.full_name(),
                    fragment(c),
                    fragment(a),
                    fragment(b)
                ),
                InstKind::Compute { elem, value, dst } => writeln!(
                    out,
                    "{pad}compute.{elem} {} = {}",
                    self.addr(dst),
                    self.arith(value)
                ),
                InstKind::Fill { elem, dst, value } => {
                    writeln!(out, "{pad}fill.{elem} {} = {value:?}", self.addr(dst))
                }
                InstKind::Barrier => writeln!(out, "{pad}barrier"),
                InstKind::TmaStoreWait { keep: 0 } => writeln!(out, "{pad}tma_store_wait"),
                InstKind::TmaStoreWait { keep } => {
                    writeln!(out, "{pad}tma_store_wait keep {keep}")
                }
                InstKind::Assert {
                    cond,
                    message,
                    file,
                    line,
                } => writeln!(
                    out,
                    "{pad}assert {} \"{message}\" at {file}:{line}",
                    self.operand(*cond)
                ),
                InstKind::Wgmma { atom, a, b, c } => writeln!(
                    out,
                    "{pad}wgmma {} {} += {} * {}",
                    atom.full_name(),
                    fragment(c),
                    match a {
                        crate::ir::WgmmaA::Shared(a) => self.smem_operand(a),
                        crate::ir::WgmmaA::Registers(a) => fragment(a),
                    },
                    self.smem_operand(b)
                ),
                InstKind::WgmmaFence => writeln!(out, "{pad}wgmma.fence"),
                InstKind::ProxyFence => writeln!(out, "{pad}fence.proxy.async"),
                InstKind::WgmmaCommit => writeln!(out, "{pad}wgmma.commit"),
                InstKind::WgmmaWait(n) => writeln!(out, "{pad}wgmma.wait {n}"),
                InstKind::AsyncFence => writeln!(out, "{pad}cp.async.fence"),
                InstKind::AsyncWait(n) => writeln!(out, "{pad}cp.async.wait {n}"),
                InstKind::Loop {
                    id,
                    name,
                    start,
                    end,
                    body,
                } => {
                    let _ = writeln!(
                        out,
                        "{pad}loop {id} {name} in {}..{} {{",
                        self.operand(*start),
                        self.operand(*end)
                    );
                    self.write_ints(out, Some(*id), depth + 1);
                    self.write_insts(out, body, depth + 1);
                    writeln!(out, "{pad}}}")
                }
                InstKind::If {
                    cond,
                    then,
                    otherwise,
                } => {
                    let _ = writeln!(out, "{pad}if {} {{", self.operand(*cond));
                    self.write_insts(out, then, depth + 1);
                    if !otherwise.is_empty() {
                        let _ = writeln!(out, "{pad}}} else {{");
                        self.write_insts(out, otherwise, depth + 1);
                    }
                    writeln!(out, "{pad}}}")
                }
                InstKind::ReduceBlocks {
                    registers,
                    across,
                    atomic,
                    group,
                    count,
                    index,
                    body,
                } => {
                    let across = match across {
                        Groups::Dim(d) => format!("block.{}", ["x", "y", "z"][*d as usize % 3]),
                        Groups::Parts { groups, most } => format!(
                            "parts groups {} most {}",
                            self.operand(*groups),
                            self.operand(*most)
                        ),
                    };
                    let _ = writeln!(
                        out,
                        "{pad}reduce_blocks r{registers} across {across}{} group {} count {} index {} {{",
                        if *atomic { " atomic" } else { "" },
                        self.operand(*group),
                        self.operand(*count),
                        self.operand(*index)
                    );
                    self.write_insts(out, body, depth + 1);
                    writeln!(out, "{pad}}}")
                }
                InstKind::Pipeline {
                    id,
                    name,
                    start,
                    end,
                    stages,
                    bytes,
                    lag,
                    turn,
                    load,
                    prefetch,
                    body,
                    after,
                } => {
                    let lag = match lag {
                        0 => String::new(),
                        l => format!(" lag {l}"),
                    };
                    let turns = match turn {
                        Some(t) => format!(
                            " turn {} {} in {}..{} groups {}",
                            t.id,
                            t.name,
                            self.operand(t.start),
                            self.operand(t.end),
                            t.groups
                        ),
                        None => String::new(),
                    };
                    let _ = writeln!(
                        out,
                        "{pad}pipeline {id} {name} in {}..{} stages {stages} bytes {bytes}{lag}{turns} {{",
                        self.operand(*start),
                        self.operand(*end)
                    );
                    // A turn's values, then a trip's.
                    if let Some(t) = turn {
                        let _ = writeln!(out, "{pad}  turn {{");
                        self.write_ints(out, Some(t.id), depth + 2);
                        let _ = writeln!(out, "{pad}  }}");
                    }
                    self.write_ints(out, Some(*id), depth + 1);
                    let _ = writeln!(out, "{pad}  load {{");
                    self.write_insts(out, load, depth + 2);
                    let _ = writeln!(out, "{pad}  }}");
                    if !prefetch.is_empty() {
                        let _ = writeln!(out, "{pad}  prefetch {{");
                        self.write_insts(out, prefetch, depth + 2);
                        let _ = writeln!(out, "{pad}  }}");
                    }
                    self.write_insts(out, body, depth + 1);
                    if turn.is_some() {
                        let _ = writeln!(out, "{pad}}} after {{");
                        self.write_insts(out, after, depth + 1);
                    }
                    writeln!(out, "{pad}}}")
                }
                InstKind::TmaLoads {
                    bytes,
                    after_stores,
                    loads,
                } => {
                    let after = if *after_stores { " after_stores" } else { "" };
                    let _ = writeln!(out, "{pad}tma_load{after} bytes {bytes} {{");
                    self.write_insts(out, loads, depth + 1);
                    writeln!(out, "{pad}}}")
                }
                InstKind::TmaWait => writeln!(out, "{pad}tma_wait"),
                InstKind::TmaStores { stores, ordered } => {
                    let unordered = if *ordered { "" } else { " unordered" };
                    let _ = writeln!(out, "{pad}tma_store{unordered} {{");
                    self.write_insts(out, stores, depth + 1);
                    writeln!(out, "{pad}}}")
                }
                InstKind::TmaStore { map, origin, src } => {
                    let o: Vec<String> = origin.iter().map(|&i| self.operand(i)).collect();
                    writeln!(
                        out,
                        "{pad}tma t{map} ({}) <- {}",
                        o.join(", "),
                        self.addr(src)
                    )
                }
                InstKind::TmaPrefetch { map, origin } => {
                    let o: Vec<String> = origin.iter().map(|&i| self.operand(i)).collect();
                    writeln!(out, "{pad}tma t{map} ({}) -> L2", o.join(", "))
                }
                InstKind::TmaLoad {
                    map,
                    origin,
                    dst,
                    parts,
                } => {
                    let o: Vec<String> = origin.iter().map(|&i| self.operand(i)).collect();
                    let multicast = match parts {
                        1 => String::new(),
                        n => format!(" multicast {n}"),
                    };
                    writeln!(
                        out,
                        "{pad}tma t{map} ({}) -> {}{multicast}",
                        o.join(", "),
                        self.addr(dst)
                    )
                }
            };
        }
    }
}

/// The element types of an instruction's inputs and output: `f32`, or
/// `bf16.f32` where they differ.
fn elem_pair(input: Elem, output: Elem) -> String {
    if input == output {
        output.to_string()
    } else {
        format!("{input}.{output}")
    }
}

/// `r0[0,1,2,3]`.
fn fragment(f: &Fragment) -> String {
    let index: Vec<String> = f.index.iter().map(i64::to_string).collect();
    format!("r{}[{}]", f.array, index.join(","))
}

fn param_name(p: &Param) -> &str {
    match p {
        Param::Tensor { name, .. } | Param::Scalar { name, .. } => name,
    }
}

/// What follows the name of a quotient computed in 32 bits
/// ([`super::IntValue::narrow`]): `div.i32`.
pub const NARROW_SUFFIX: &str = ".i32";

pub fn op_name(op: IntOp) -> &'static str {
    match op {
        IntOp::Add => "add",
        IntOp::Sub => "sub",
        IntOp::Mul => "mul",
        IntOp::Div => "div",
        IntOp::CeilDiv => "ceil_div",
        IntOp::Mod => "rem",
        IntOp::Min => "min",
        IntOp::Max => "max",
    }
}

impl fmt::Display for KernelIr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_text())
    }
}

/// `  shared s0 smA: f32[1024]`: a buffer's kind and label, its `.tile`
/// name where it has one, its element type and length.
fn buffer_line(label: &str, i: usize, b: &super::Buffer) -> String {
    let name = match b.name.is_empty() {
        true => String::new(),
        false => format!(" {}", b.name),
    };
    format!("  {label}{i}{name}: {}[{}]", b.elem, b.len)
}
