//! Check: the front end's meaning of source.
//!
//! In: a syntax tree. Out: values of algebra expressions (`algebra`), and
//! for `.tile` files a typed program (`program`) built by `kernel`, or the
//! diagnostics of everything wrong with it.

pub mod algebra;
pub mod elementwise_tree;
pub mod kernel;
pub mod placement;
pub mod program;
pub mod report;
pub mod strides;
pub mod value;
