//! Walking the IR's nested instruction lists: in, an instruction or a
//! list; out, its bodies, or every instruction (or every atom) in program
//! order, which the passes, the verifier, the executor and codegen share.

use super::{Inst, InstKind};

impl InstKind {
    /// The instruction lists nested in this one (a loop's body, an if's
    /// branches, a pipeline's load and body, a TMA store's boxes), in
    /// order; none for an atom.
    pub fn bodies(&self) -> Vec<&[Inst]> {
        match self {
            InstKind::Loop { body, .. } | InstKind::ReduceBlocks { body, .. } => vec![body],
            InstKind::If {
                then, otherwise, ..
            } => vec![then, otherwise],
            InstKind::Pipeline {
                load,
                prefetch,
                body,
                after,
                ..
            } => vec![load, prefetch, body, after],
            InstKind::TmaStores { stores, .. } => vec![stores],
            InstKind::TmaLoads { loads, .. } => vec![loads],
            _ => vec![],
        }
    }

    /// [`InstKind::bodies`], to change.
    pub fn bodies_mut(&mut self) -> Vec<&mut Vec<Inst>> {
        match self {
            InstKind::Loop { body, .. } | InstKind::ReduceBlocks { body, .. } => vec![body],
            InstKind::If {
                then, otherwise, ..
            } => vec![then, otherwise],
            InstKind::Pipeline {
                load,
                prefetch,
                body,
                after,
                ..
            } => vec![load, prefetch, body, after],
            InstKind::TmaStores { stores, .. } => vec![stores],
            InstKind::TmaLoads { loads, .. } => vec![loads],
            _ => vec![],
        }
    }
}

/// Calls `f` on every instruction, in program order: each before the
/// instructions nested in it.
pub fn for_each_inst(insts: &[Inst], f: &mut dyn FnMut(&Inst)) {
    for i in insts {
        f(i);
        for body in i.kind.bodies() {
            for_each_inst(body, f);
        }
    }
}

/// Calls `f` on every instruction of `insts` but loops and ifs, in order,
/// inside them too (each once, as written, not per iteration).
pub fn for_each_atom(insts: &[Inst], f: &mut dyn FnMut(&Inst)) {
    for i in insts {
        let bodies = i.kind.bodies();
        if bodies.is_empty() {
            f(i);
        }
        for body in bodies {
            for_each_atom(body, f);
        }
    }
}
