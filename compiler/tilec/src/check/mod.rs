//! Check: the front end's meaning of source. For now, evaluation of algebra
//! expressions to values (layouts, tilers, integers) with diagnostics.

pub mod algebra;
pub mod value;
