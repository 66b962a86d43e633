//! The tilec compiler as a library: each stage is a module with one job.
//!
//! - [`syntax`]: source -> tokens -> syntax tree;
//! - [`check`]: syntax tree -> values and shapes, with diagnostics;
//! - [`lower`]: typed program -> kernel IR (base + index accesses, atoms);
//! - [`ir`]: the kernel IR itself, its text form's printer and parser, its verifier;
//! - [`pipeline`]: source -> typed programs and their lowered variants (check, then lower);
//! - [`arith`]: element-wise operations and the math functions, once for the executor and codegen;
//! - [`exec`]: kernel IR run on the CPU with the GPU's semantics, and its checks;
//! - [`perf`]: kernel IR -> what a warp's accesses cost (coalescing, bank conflicts);
//! - [`picture`]: layouts -> terminal grids and SVG pictures;
//! - [`diagnostic`]: the diagnostics every stage reports.
//!
//! The layout algebra itself is the `tilec-layout` crate.

#![allow(clippy::result_large_err)]

pub mod arith;
pub mod check;
pub mod diagnostic;
pub mod exec;
pub mod ir;
pub mod lower;
pub mod perf;
pub mod picture;
pub mod pipeline;
pub mod span;
pub mod syntax;
