//! The `reference` statement: the computation a kernel states (gemm, copy,
//! transpose, or another kernel of the file) over its parameters, whose
//! extents must agree.

use super::KernelChecker;
use crate::check::program::{Kernel, ParamKind, Reference, ReferenceKind};
use crate::diagnostic::Diagnostic;
use crate::syntax::ast::{Expr, ExprKind};

impl KernelChecker {
    /// `reference gemm(A, B, C, alpha, beta)` and friends: the operands are
    /// parameters, with the shapes the computation needs.
    pub(super) fn reference_stmt(&mut self, e: &Expr) -> Result<Reference, Diagnostic> {
        let usage = "reference gemm(A, B, C, alpha, beta)  (A (M,K), B (N,K), C (M,N), or each with a batch mode L last) | gemv(A, x, y, alpha, beta) | reduce_sum(X, Y)  (Y: the sums of X's rows) | softmax(X, Y) | layernorm(X, gamma, beta, Y, eps)  (along rows) | copy(A, B) | transpose(A, B) | KERNEL(params...)  (a kernel of this file, run on the CPU executor in f64)";
        let (name, args) = match &e.kind {
            ExprKind::Call(f, args) => match &f.kind {
                ExprKind::Name(n) => (n.as_str(), args),
                _ => {
                    return Err(
                        Diagnostic::new("a reference names a computation", e.span).with_help(usage)
                    );
                }
            },
            _ => {
                return Err(
                    Diagnostic::new("a reference names a computation", e.span).with_help(usage)
                );
            }
        };
        // Each tensor operand's modes (tensors first, then scalars).
        let (kind, ranks, scalars): (_, &[usize], _) = match name {
            "gemm" => (ReferenceKind::Gemm, &[2, 2, 2], 2),
            "copy" => (ReferenceKind::Copy, &[2, 2], 0),
            "transpose" => (ReferenceKind::Transpose, &[2, 2], 0),
            "gemv" => (ReferenceKind::Gemv, &[2, 1, 1], 2),
            "reduce_sum" => (ReferenceKind::ReduceSum, &[2, 1], 0),
            "softmax" => (ReferenceKind::Softmax, &[2, 2], 0),
            "layernorm" => (ReferenceKind::LayerNorm, &[2, 2, 2, 2], 1),
            _ => return self.kernel_reference(name, args, e, usage),
        };
        let tensors = ranks.len();
        // From here on, the help names this computation's form alone.
        let usage = signature(kind);
        if args.len() != tensors + scalars {
            return Err(Diagnostic::new(
                format!("reference {name} takes {} operands", tensors + scalars),
                e.span,
            )
            .with_help(usage));
        }
        let mut operands = Vec::new();
        let mut shapes = Vec::new();
        for (i, a) in args.iter().enumerate() {
            let p = match &a.kind {
                ExprKind::Name(n) => self.params.iter().position(|p| &p.name == n),
                _ => None,
            };
            let Some(p) = p else {
                return Err(not_a_parameter(a, usage));
            };
            // A gemm's operands may carry a batch mode, all three alike;
            // a copy's are vectors or matrices, both alike.
            let batch = kind == ReferenceKind::Gemm;
            let vector = kind == ReferenceKind::Copy;
            let fits = |r: usize| r == ranks[i] || batch && r == 3 || vector && r == 1;
            match (&self.params[p].kind, i < tensors) {
                (ParamKind::Tensor { layout, .. }, true) if fits(layout.rank()) => {
                    let size = |m: usize| layout.mode(m).map(|m| m.size()).ok();
                    shapes.push(([size(0), size(1), size(2)], layout.rank(), a.span));
                }
                (ParamKind::Scalar(_), false) => {}
                _ => {
                    let want = if i >= tensors {
                        "a scalar parameter"
                    } else if batch {
                        "a matrix parameter (two modes, or three with a batch last)"
                    } else if vector {
                        "a vector or matrix parameter (one or two modes)"
                    } else if ranks[i] == 1 {
                        "a vector parameter (one mode)"
                    } else {
                        "a matrix parameter (two modes)"
                    };
                    return Err(Diagnostic::new(
                        format!("operand {} of reference {name} must be {want}", i + 1),
                        a.span,
                    )
                    .with_help(usage));
                }
            }
            operands.push(p);
        }
        // Which extents must agree: (operand, mode) pairs.
        type Mode = (usize, usize);
        let agree: &[(Mode, Mode)] = match kind {
            ReferenceKind::Gemm if shapes[0].1 == 3 => &[
                ((0, 0), (2, 0)),
                ((1, 0), (2, 1)),
                ((0, 1), (1, 1)),
                ((0, 2), (2, 2)),
                ((1, 2), (2, 2)),
            ],
            ReferenceKind::Gemm => &[((0, 0), (2, 0)), ((1, 0), (2, 1)), ((0, 1), (1, 1))],
            ReferenceKind::Copy | ReferenceKind::Softmax => &[((0, 0), (1, 0)), ((0, 1), (1, 1))],
            ReferenceKind::Gemv => &[((0, 1), (1, 0)), ((0, 0), (2, 0))],
            ReferenceKind::ReduceSum => &[((0, 0), (1, 0))],
            ReferenceKind::LayerNorm => &[
                ((0, 0), (1, 0)),
                ((0, 1), (1, 1)),
                ((0, 0), (2, 0)),
                ((0, 1), (2, 1)),
                ((0, 0), (3, 0)),
                ((0, 1), (3, 1)),
            ],
            ReferenceKind::Transpose => &[((0, 0), (1, 1)), ((0, 1), (1, 0))],
            ReferenceKind::Kernel => &[],
        };
        if let Some(o) = shapes
            .iter()
            .position(|s| ranks_differ(kind, s.1, shapes[0].1))
        {
            return Err(Diagnostic::new(
                format!(
                    "reference {name}: operand {} has {} modes, operand 1 {}",
                    o + 1,
                    shapes[o].1,
                    shapes[0].1
                ),
                shapes[o].2,
            )
            .with_related(shapes[0].2, "operand 1")
            .with_help(match kind {
                ReferenceKind::Copy => "a copy's two operands are both vectors or both matrices",
                _ => "a batched gemm's three operands each have the batch as their last mode",
            }));
        }
        // The extents agree with the operands in `order` (operand i of the
        // statement taken from `order[i]`).
        // Each operand of the rank its place takes, as written.
        let agrees = |order: &[usize]| {
            order
                .iter()
                .enumerate()
                .all(|(i, &o)| shapes[o].1 == shapes[i].1)
                && agree
                    .iter()
                    .all(|&((x, xm), (y, ym))| shapes[order[x]].0[xm] == shapes[order[y]].0[ym])
        };
        let written: Vec<usize> = (0..shapes.len()).collect();
        for &((x, xm), (y, ym)) in agree {
            if shapes[x].0[xm] != shapes[y].0[ym] {
                // Operands in another order that agree (gemm(B, A, C, ...)
                // for gemm(A, B, C, ...)): say which.
                let help = match orders(shapes.len())
                    .into_iter()
                    .find(|o| *o != written && agrees(o))
                {
                    Some(order) => {
                        let names: Vec<&str> = order
                            .iter()
                            .map(|&i| self.params[operands[i]].name.as_str())
                            .chain(
                                operands[shapes.len()..]
                                    .iter()
                                    .map(|&p| self.params[p].name.as_str()),
                            )
                            .collect();
                        format!(
                            "the operands look out of order: `reference {name}({})` agrees; {usage}",
                            names.join(", ")
                        )
                    }
                    None => usage.to_string(),
                };
                let param = |i: usize| &self.params[operands[i]].name;
                let extent = |i: usize, m: usize| match &shapes[i].0[m] {
                    Some(e) => format!("`{e}`"),
                    None => "missing".to_string(),
                };
                return Err(Diagnostic::new(
                    format!(
                        "reference {name}: mode {xm} of {} is {} but mode {ym} of {} is {}",
                        param(x),
                        extent(x, xm),
                        param(y),
                        extent(y, ym)
                    ),
                    shapes[x].2,
                )
                .with_label(format!("operand {}", x + 1))
                .with_related(shapes[y].2, format!("operand {}", y + 1))
                .with_help(help));
            }
        }
        Ok(Reference {
            kind,
            operands,
            kernel: None,
            span: e.span,
        })
    }

    /// `reference name(A, B, alpha)`: the operands are parameters, in the
    /// order of kernel `name`'s, which [`check_kernel_references`] matches
    /// once every kernel is checked.
    fn kernel_reference(
        &self,
        name: &str,
        args: &[Expr],
        e: &Expr,
        usage: &str,
    ) -> Result<Reference, Diagnostic> {
        let operands = args
            .iter()
            .map(|a| {
                match &a.kind {
                    ExprKind::Name(n) => self.params.iter().position(|p| &p.name == n),
                    _ => None,
                }
                .ok_or_else(|| match &a.kind {
                    // An extent goes to the reference by its name.
                    ExprKind::Name(n) if self.extent_params.contains(n) => Diagnostic::new(
                        format!("`{n}` is an extent: a reference is not passed extents"),
                        a.span,
                    )
                    .with_label("an extent parameter")
                    .with_help(format!(
                        "leave it out here and declare `{n}: extent` in the reference kernel: the run binds it there by its name"
                    )),
                    _ => not_a_parameter(a, usage),
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Reference {
            kind: ReferenceKind::Kernel,
            operands,
            kernel: Some(name.to_string()),
            span: e.span,
        })
    }
}

/// Every reference to a kernel names another kernel of the file whose
/// parameters the operands match: tensors of the same element type and
/// layout, scalars for scalars. `kernels` are those that checked, `names`
/// every kernel's of the file (one that failed has its own errors).
pub fn check_kernel_references(kernels: &[Kernel], names: &[&str]) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    for k in kernels {
        let Some(r) = &k.reference else { continue };
        let Some(name) = &r.kernel else { continue };
        if names.contains(&name.as_str()) && !kernels.iter().any(|t| &t.name == name) {
            continue;
        }
        let Some(target) = kernels.iter().find(|t| &t.name == name) else {
            let names: Vec<&str> = kernels.iter().map(|t| t.name.as_str()).collect();
            diags.push(
                Diagnostic::new(
                    format!("no reference computation or kernel `{name}`"),
                    r.span,
                )
                .with_help(
                    match names
                        .iter()
                        .find(|n| crate::check::algebra::edit_distance(n, name) <= 2)
                    {
                        Some(close) => format!("did you mean `{close}`? "),
                        None => String::new(),
                    } + &format!(
                        "built-in references are {BUILT_IN}; the kernels of this file are {}",
                        names.join(", ")
                    ),
                ),
            );
            continue;
        };
        if target.name == k.name {
            diags.push(
                Diagnostic::new("a kernel cannot be its own reference", r.span)
                    .with_help("write a plain kernel (one thread per output element) that computes the same, and name it here"),
            );
            continue;
        }
        // References that come back here: each kernel of the circle is
        // some other's reference, so `tilec run` would run none of them.
        let mut chain = vec![k.name.as_str(), name.as_str()];
        let mut at = target;
        while let Some(next) = at.reference.as_ref().and_then(|r| r.kernel.as_deref()) {
            if next == k.name {
                chain.push(next);
                diags.push(
                    Diagnostic::new(
                        format!("the references go round in a circle: {}", chain.join(" -> ")),
                        r.span,
                    )
                    .with_related(target.span, format!("`{name}` is defined here"))
                    .with_help("end the chain at a kernel with no `reference` of another kernel: a plain one that computes the result directly, one thread per output element"),
                );
                break;
            }
            if chain.contains(&next) {
                break;
            }
            chain.push(next);
            match kernels.iter().find(|t| t.name == next) {
                Some(t) => at = t,
                None => break,
            }
        }
        if r.operands.len() != target.params.len() {
            diags.push(
                Diagnostic::new(
                    format!(
                        "kernel `{name}` takes {} parameters, not {}",
                        target.params.len(),
                        r.operands.len()
                    ),
                    r.span,
                )
                .with_related(target.span, format!("`{name}` is defined here"))
                .with_help(
                    "pass this kernel's parameters in the order the reference kernel takes them",
                ),
            );
            continue;
        }
        for (i, (&o, want)) in r.operands.iter().zip(&target.params).enumerate() {
            let have = &k.params[o];
            let agree = match (&have.kind, &want.kind) {
                (
                    ParamKind::Tensor { elem, layout },
                    ParamKind::Tensor {
                        elem: e2,
                        layout: l2,
                    },
                ) => elem == e2 && layout == l2,
                (ParamKind::Scalar(_), ParamKind::Scalar(_)) => true,
                _ => false,
            };
            if !agree {
                let describe = |k: &ParamKind| match k {
                    ParamKind::Tensor { elem, layout } => format!("tensor<{elem}, {layout}>"),
                    ParamKind::Scalar(e) => format!("a scalar {e}"),
                };
                diags.push(
                    Diagnostic::new(
                        format!(
                            "operand {} (`{}`, {}) does not match parameter `{}` of `{name}` ({})",
                            i + 1,
                            have.name,
                            describe(&have.kind),
                            want.name,
                            describe(&want.kind)
                        ),
                        r.span,
                    )
                    .with_related(target.span, format!("`{name}` is defined here"))
                    .with_help("a reference kernel takes the same tensors, declared alike (element type and layout), and scalars for scalars"),
                );
            }
        }
        // The run gives the reference the extents by name: each of its own
        // (a `W: extent` it declares) must be one this kernel has. Its
        // tensors' are this kernel's (declared alike), and their stride
        // symbols (`K.stride.2`) the runtime binds each kernel itself.
        if let Some(missing) = target
            .extents
            .iter()
            .find(|e| *e != tilec_layout::SM_COUNT && !e.contains('.') && !k.extents.contains(e))
        {
            diags.push(
                Diagnostic::new(
                    format!(
                        "the reference `{name}` takes the extent `{missing}`, which `{}` has not",
                        k.name
                    ),
                    r.span,
                )
                .with_related(target.span, format!("`{name}` is defined here"))
                .with_help(format!(
                    "declare `{missing}: extent` in both kernels, or in neither"
                )),
            );
        }
    }
    diags
}

/// A gemm's operands have the batch mode all three or none; a copy's
/// are both vectors or both matrices.
fn ranks_differ(kind: ReferenceKind, rank: usize, first: usize) -> bool {
    matches!(kind, ReferenceKind::Gemm | ReferenceKind::Copy) && rank != first
}

/// The built-in references' names, for help lines.
const BUILT_IN: &str = "gemm, copy, transpose, gemv, reduce_sum, softmax and layernorm";

/// A built-in reference's form, for help lines.
fn signature(kind: ReferenceKind) -> &'static str {
    match kind {
        ReferenceKind::Gemm => {
            "reference gemm(A, B, C, alpha, beta): C = alpha * A * B^T + beta * C, A (M,K), B (N,K), C (M,N), or each with a batch mode L last"
        }
        ReferenceKind::Gemv => {
            "reference gemv(A, x, y, alpha, beta): y = alpha * A x + beta * y, A (M,N), x (N), y (M)"
        }
        ReferenceKind::ReduceSum => {
            "reference reduce_sum(X, Y): Y (M) the sums of the rows of X (M,N)"
        }
        ReferenceKind::Softmax => "reference softmax(X, Y): each row's softmax, X and Y (M,N)",
        ReferenceKind::LayerNorm => {
            "reference layernorm(X, gamma, beta, Y, eps): (x - mean) / sqrt(var + eps) * gamma + beta along each row, all (M,N)"
        }
        ReferenceKind::Copy => "reference copy(A, B): B = A, both (M,N) or both (N)",
        ReferenceKind::Transpose => "reference transpose(A, B): B = A^T, A (M,N), B (N,M)",
        ReferenceKind::Kernel => "reference KERNEL(params...): a kernel of this file",
    }
}

/// A reference's operand that is not one of the kernel's parameters (a
/// number, an expression): the reference runs on the launch's own tensors
/// and scalars.
fn not_a_parameter(a: &Expr, usage: &str) -> Diagnostic {
    let what = match &a.kind {
        ExprKind::Int(_) | ExprKind::Float(_) => "a number",
        ExprKind::Name(_) => "a name that is no parameter",
        _ => "an expression",
    };
    Diagnostic::new("a reference's operands must be the kernel's parameters", a.span)
        .with_label(format!("this is {what}"))
        .with_help(format!("{usage}; a reference runs on the launch's own tensors and scalars: declare a scalar parameter (`alpha: f32`) and pass it, and `tilec run` fills it with a random value"))
}

/// Every order of `n` operands (n is at most 4: 24 orders).
fn orders(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![vec![]];
    }
    let mut out = Vec::new();
    for rest in orders(n - 1) {
        for at in 0..=rest.len() {
            let mut o = rest.clone();
            o.insert(at, n - 1);
            out.push(o);
        }
    }
    out
}
