//! The syntax tree. Every node carries the byte span of its source text.

use crate::span::Span;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExprKind {
    /// `12`, `-3`, or the static spelling `_12` (the same value).
    Int(i64),
    /// `0.5`, as written.
    Float(String),
    /// `_`: a whole mode, in slices, steps and tilers.
    Under,
    /// `M`, `tA`, `block.x`, `shared<f32>` (a name with a type argument).
    Name(String),
    /// `(a, b, ...)`: an integer tuple, a coordinate, or grouping.
    Tuple(Vec<Expr>),
    /// `[L0, L1, ...]`: a by-mode tiler.
    Tiler(Vec<Expr>),
    /// `SHAPE:STRIDE`.
    Layout(Box<Expr>, Box<Expr>),
    /// `f(args)` for a named function, or `L(coord)` to evaluate a layout.
    Call(Box<Expr>, Vec<Expr>),
    /// `t[coord]`: a slice or an element of a tensor.
    Index(Box<Expr>, Vec<Expr>),
    /// `a + b`, `a - b`, `a * b`, `a % b` on integers; these, `a / b` and
    /// comparisons element by element in element-wise statements.
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `-a` (a literal's minus is part of the literal).
    Neg(Box<Expr>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    /// The remainder, for cycling through pipeline stages: `k % 3`.
    Rem,
    Div,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    /// `a && b`, `a || b`: in `if` conditions and selects.
    And,
    Or,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Rem => "%",
            BinOp::Div => "/",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::And => "&&",
            BinOp::Or => "||",
        }
    }
}

/// A `.tile` file: kernels.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    pub kernels: Vec<Kernel>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    pub name: Ident,
    pub params: Vec<Param>,
    pub body: Vec<Stmt>,
    pub span: Span,
}

impl Kernel {
    /// The names of its `tune` parameters (those at the top level, the
    /// only place the checker accepts them).
    pub fn tunables(&self) -> Vec<&str> {
        self.body
            .iter()
            .filter_map(|s| match &s.kind {
                StmtKind::Tune { name, .. } => Some(name.name.as_str()),
                _ => None,
            })
            .collect()
    }
}

/// A name with its span.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: Ident,
    pub ty: Type,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Type {
    /// `tensor<f32, (M,K):(1,M)>`: element type and layout over named extents.
    Tensor { elem: Ident, layout: Expr },
    /// `f32`, `i32`, ...
    Scalar(Ident),
}

/// A loop whose `load` block runs ahead on a producer warpgroup, `stages`
/// iterations at most, while the rest of the body consumes; `stage` names
/// the iteration's stage, `(var - start) % stages` (with turns, of the
/// trip counted across them).
#[derive(Clone, Debug, PartialEq)]
pub struct Pipeline {
    pub var: Ident,
    pub start: Expr,
    pub end: Expr,
    /// `turn j in a..b`: the loop runs once a turn, each turn on one
    /// consumer warpgroup in rotation, closed by the body's `after` block.
    pub turn: Option<Box<Turn>>,
    pub stage: Ident,
    /// The stage range's start, which must be 0.
    pub first: Expr,
    pub stages: Expr,
    pub body: Vec<Stmt>,
}

/// How a `reduce` across blocks adds its partials: `atomic` (every block
/// adds its partial into one sum by atomics, in the order the blocks
/// arrive, so the sum's last bits may differ between runs) or
/// `atomic(e)`, atomic where the static integer `e` is not 0 (a `tune`
/// parameter's choice). Without it, in index order.
#[derive(Clone, Debug, PartialEq)]
pub struct ReduceMode {
    pub name: Ident,
    pub when: Option<Expr>,
}

/// A pipeline's `turn j in start..end` clause.
#[derive(Clone, Debug, PartialEq)]
pub struct Turn {
    pub var: Ident,
    pub start: Expr,
    pub end: Expr,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// `tiler cta = (128,128,8);`
    Tiler(Ident, Expr),
    /// `layout sA = (128,8):(1,128);`
    Layout(Ident, Expr),
    /// `let gA = local_tile(...);`
    Let(Ident, Expr),
    /// `launch grid(...), block(...);`
    Launch(Vec<Expr>),
    /// `for k in 0..n { ... }`
    For {
        var: Ident,
        start: Expr,
        end: Expr,
        body: Vec<Stmt>,
    },
    /// `pipeline k in 0..kt, stage s in 0..4 { load { ... } ... }`.
    Pipeline(Pipeline),
    /// `if cond { ... } else { ... }` (`else if` nests another).
    If {
        cond: Expr,
        then: Vec<Stmt>,
        otherwise: Vec<Stmt>,
    },
    /// `load { copy_tma(...); ... }`: a pipeline's loads.
    Load(Vec<Stmt>),
    /// `after { ... }`: the last statement of a pipeline with turns, run by
    /// a turn's warpgroup once its trips are done (its epilogue).
    After(Vec<Stmt>),
    /// `reduce tCrC across block.z { ... }`: the register tensor summed
    /// over the blocks that differ only in `block.z`, the body run by the
    /// one block that holds the sum.
    /// `reduce tCrC across block.z atomic { ... }` adds the partials by
    /// atomics, in the order the blocks arrive ([`ReduceMode`]).
    ReduceBlocks {
        target: Expr,
        dim: Expr,
        mode: Option<ReduceMode>,
        body: Vec<Stmt>,
    },
    /// `tune splits = 8 in (1, 2, 4, 8, 16);`: an integer the tuner may
    /// set to any of the candidates; the default where nothing chose one.
    Tune {
        name: Ident,
        default: Expr,
        candidates: Vec<Expr>,
    },
    /// `copy(a, b);`, `sync();`, ...
    Expr(Expr),
    /// `reference gemm(A, B, C, alpha, beta);`: what the kernel computes,
    /// for checking its results.
    Reference(Expr),
    /// `tCgC = max(alpha * tCrC + bias, 0.0);`: an element-wise statement,
    /// the target's every element from the same elements of the operands.
    Assign(Expr, Expr),
}
