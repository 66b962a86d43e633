//! A kernel's parameters: tensors (their layouts bind the run-time
//! extents they name), scalars, and `W: extent` parameters, run-time
//! integers no tensor's layout holds.

use super::KernelChecker;
use super::names::collect_names;
use crate::check::algebra::Evaluator;
use crate::check::program::{Base, CoordFn, Elem, KernelParam, ParamKind, View};
use crate::check::value::Value;
use crate::diagnostic::Diagnostic;
use crate::syntax::ast::{self, Expr};
use tilec_layout::{Int, SM_COUNT};

impl KernelChecker {
    pub(super) fn param(&mut self, p: &ast::Param) {
        if self.extent_params.contains(&p.name.name) {
            let d = Diagnostic::new(
                format!("`{}` is a parameter already", p.name.name),
                p.name.span,
            )
            .with_label("an extent parameter before this one has this name")
            .with_help("give each parameter a name of its own");
            return self.broken_param(p, d);
        }
        let (kind, value) = match &p.ty {
            // `W: extent`: a run-time integer no tensor's layout binds (a
            // window's width), bound at launch like the tensors' extents
            // and taken, like them, from 1 to 2^40.
            ast::Type::Scalar(t) if t.name == EXTENT_TYPE => {
                let n = &p.name.name;
                let taken = match n == SM_COUNT {
                    true => Some("the device's multiprocessors, which the runtime binds"),
                    false
                        if self.params.iter().any(|q| &q.name == n)
                            || self.extent_params.contains(n) =>
                    {
                        Some("a parameter before this one has this name")
                    }
                    false => None,
                };
                if let Some(why) = taken {
                    let d = Diagnostic::new(
                        format!("`{n}` cannot be an extent parameter"),
                        p.name.span,
                    )
                    .with_label(why)
                    .with_help("name the extent otherwise");
                    return self.diags.push(d);
                }
                // A tensor before it may hold it already: the one extent.
                if !self.extents.contains(n) {
                    self.extents.push(n.clone());
                    self.extent_spans.insert(n.clone(), p.name.span);
                }
                self.extent_params.push(n.clone());
                return;
            }
            ast::Type::Scalar(t) => match Elem::parse(&t.name) {
                Some(e) => (
                    ParamKind::Scalar(e),
                    Value::Scalar {
                        index: self.params.len(),
                        elem: e,
                    },
                ),
                None => {
                    let d = Diagnostic::new(format!("unknown type `{}`", t.name), t.span)
                        .with_help("a scalar parameter's types are f32, f16, bf16 and i32; `W: extent` declares a run-time integer");
                    return self.broken_param(p, d);
                }
            },
            ast::Type::Tensor { elem, layout } => {
                let Some(e) = Elem::parse(&elem.name) else {
                    return self.broken_param(p, unknown_elem(elem));
                };
                // In a parameter's layout, unknown names are the run-time extents it binds.
                let mut extents = Vec::new();
                collect_names(layout, &mut extents);
                for n in &extents {
                    if !self.extents.contains(n) {
                        self.extents.push(n.clone());
                        self.extent_spans.insert(n.clone(), layout.span);
                    }
                }
                let l = match self.eval_with_extents(layout) {
                    Ok(v) => match v.as_layout() {
                        Some(l) => l,
                        None => {
                            let d =
                                Diagnostic::new("a tensor parameter needs a layout", layout.span)
                                    .with_label(format!("this is {}", v.kind()))
                                    .with_help("write e.g. tensor<f32, (M, K):(1, M)>");
                            return self.broken_param(p, d);
                        }
                    },
                    Err(d) => return self.broken_param(p, d),
                };
                let mut coords = CoordFn::of_param(&l);
                let layout = self.stride_symbols(&p.name.name, &l, &mut coords);
                let view = View {
                    base: Base::Param(self.params.len()),
                    elem: e,
                    layout,
                    offset: Int::Static(0),
                    coords,
                };
                (
                    ParamKind::Tensor { elem: e, layout: l },
                    Value::Tensor(view),
                )
            }
        };
        self.define(&p.name, Some(value));
        self.params.push(KernelParam {
            name: p.name.name.clone(),
            kind,
        });
    }

    fn broken_param(&mut self, p: &ast::Param, d: Diagnostic) {
        self.diags.push(d);
        self.define(&p.name, None);
    }

    pub(super) fn eval_with_extents(&mut self, e: &Expr) -> Result<Value, Diagnostic> {
        let extents = &self.extents;
        let lookup = |n: &str| {
            extents
                .iter()
                .any(|x| x == n)
                .then(|| Value::Int(Int::var(n)))
        };
        let mut none = crate::check::algebra::AlgebraOnly;
        let mut ev = Evaluator::new(&lookup, &mut none);
        let v = ev.eval(e)?;
        self.take_conditions(ev.conditions, e.span);
        Ok(v)
    }
}

/// The type of a parameter that is an extent: `W: extent`.
const EXTENT_TYPE: &str = "extent";

fn unknown_elem(t: &ast::Ident) -> Diagnostic {
    Diagnostic::new(format!("unknown element type `{}`", t.name), t.span)
        .with_help("element types are f32, f16, bf16 and i32")
}
