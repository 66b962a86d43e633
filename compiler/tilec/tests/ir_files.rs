//! The kernel IR's text form as a stage boundary: every kernel's IR reads
//! back to the same IR (value numbers aside) and runs on the executor to
//! the same bits; the verifier's refusals are file tests written as IR
//! (`tests/ir/verify/*.ir`, each with a `// expect:` first line).

use std::path::{Path, PathBuf};
use tilec::exec::{Launch, Part, Tensor, execute};
use tilec::ir::parse::parse;
use tilec::ir::verify::verify;
use tilec::ir::{KernelIr, Param};
use tilec::lower::{lower_variant, lower_variant_checked, lower_variants, variants};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn files(dir: &str, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    v.sort();
    v
}

/// The text with value numbers renamed in order of first appearance, so
/// that two numberings of one IR compare equal.
fn canonical(text: &str) -> String {
    let mut names: Vec<String> = Vec::new();
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut n = String::new();
        while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
            n.push(*d);
            chars.next();
        }
        let i = names.iter().position(|x| *x == n).unwrap_or_else(|| {
            names.push(n.clone());
            names.len() - 1
        });
        out.push_str(&format!("%{i}"));
    }
    out
}

fn every_ir() -> Vec<(String, KernelIr)> {
    let mut out = Vec::new();
    for dir in ["examples", "tests/codegen", "tests/run"] {
        for f in files(dir, "tile") {
            let src = std::fs::read_to_string(&f).unwrap();
            let lines = tilec::diagnostic::SourceLines::new("k.tile", &src);
            for k in tilec::check::kernel::check_source(&src).unwrap() {
                // The variants each kernel compiles to (an optional one that
                // cannot be made is not).
                for l in lower_variants(&k, |v| lower_variant(&k, v)).unwrap() {
                    out.push((f.display().to_string(), l.ir));
                }
                for l in lower_variants(&k, |v| lower_variant_checked(&k, v, &lines)).unwrap() {
                    out.push((format!("{} --checked", f.display()), l.ir));
                }
            }
        }
    }
    out
}

#[test]
fn every_kernels_ir_reads_back_to_itself() {
    let all = every_ir();
    assert!(all.len() >= 40, "{} kernels", all.len());
    for (what, ir) in all {
        let text = ir.to_text();
        let back = parse(&text).unwrap_or_else(|e| panic!("{what}: {e}"));
        verify(&back).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(canonical(&back.to_text()), canonical(&text), "{what}");
        assert_eq!(
            (
                back.block_offset,
                back.block_threads,
                back.min_blocks,
                back.cluster
            ),
            (ir.block_offset, ir.block_threads, ir.min_blocks, ir.cluster),
            "{what}"
        );
    }
}

/// Runs `ir` alone on a `grid`, with seeded inputs; returns every tensor.
fn run(ir: &KernelIr, grid: [u32; 3], extents: &[i64], lens: &[usize]) -> Vec<Option<Tensor>> {
    let mut tensors: Vec<Option<Tensor>> = ir
        .params
        .iter()
        .zip(lens)
        .map(|(p, &n)| match p {
            Param::Tensor { elem, .. } => Some(Tensor {
                elem: *elem,
                data: (0..n)
                    .map(|i| ((i * 7919) % 1000) as f64 / 1000.0 - 0.5)
                    .collect(),
            }),
            Param::Scalar { .. } => None,
        })
        .collect();
    let launch = Launch {
        parts: vec![Part {
            ir,
            grid,
            offset: [0; 3],
        }],
        extents: extents.to_vec(),
        scalars: vec![1.5; ir.params.len()],
        blocks_done: None,
        stop: None,
        exact: false,
    };
    execute(&launch, &mut tensors).unwrap();
    tensors
}

/// A run the caller asks to stop (its time limit) fails at the next block
/// or loop trip, whatever the kernel would do.
#[test]
fn a_run_stops_when_asked() {
    let ir = parse(
        "kernel k(A: global f32*, M: i64) block 1
  %1 = thread.x
",
    )
    .unwrap();
    verify(&ir).unwrap();
    let stop = std::sync::atomic::AtomicBool::new(true);
    let mut tensors = vec![
        Some(Tensor {
            elem: tilec::check::program::Elem::F32,
            data: vec![0.0; 4],
        }),
        None,
    ];
    let launch = Launch {
        parts: vec![Part {
            ir: &ir,
            grid: [4, 1, 1],
            offset: [0; 3],
        }],
        extents: vec![4],
        scalars: vec![1.0; 2],
        blocks_done: None,
        stop: Some(&stop),
        exact: false,
    };
    let err = execute(&launch, &mut tensors).unwrap_err();
    assert_eq!(err.message, "the run was stopped");
}

/// A vector copy whose first element is not a multiple of its width (thread
/// 1 starts at element 2 of four): the GPU would fault on the access, so
/// the executor stops at it, naming the tensor, instead of copying.
#[test]
fn a_misaligned_vector_is_an_error_on_the_cpu() {
    let ir = parse(
        "kernel k(A: global f32*, B: global f32*, M: i64) block 4
  %1 = thread.x
  %2 = mul 2, %1
  copy.f32x4 A[%2] -> B[%2]
",
    )
    .unwrap();
    verify(&ir).unwrap();
    let mut tensors: Vec<Option<Tensor>> = (0..2)
        .map(|_| {
            Some(Tensor {
                elem: tilec::check::program::Elem::F32,
                data: vec![0.5; 16],
            })
        })
        .chain([None])
        .collect();
    let launch = Launch {
        parts: vec![Part {
            ir: &ir,
            grid: [1, 1, 1],
            offset: [0; 3],
        }],
        extents: vec![16],
        scalars: vec![1.0; 3],
        blocks_done: None,
        stop: None,
        exact: false,
    };
    let err = execute(&launch, &mut tensors).unwrap_err();
    assert!(
        err.message.contains("thread 1 ")
            && err.message.contains("from element 2 of `A`")
            && err.message.contains("misaligned vector access"),
        "{}",
        err.message
    );
}

#[test]
fn a_kernel_read_back_runs_to_the_same_bits() {
    let src = std::fs::read_to_string(root().join("examples/sgemm_nt_sm80.tile")).unwrap();
    let k = tilec::check::kernel::check_source(&src).unwrap().remove(0);
    for v in variants(&k) {
        let ir = lower_variant(&k, v).unwrap().ir;
        let back = parse(&ir.to_text()).unwrap();
        // M = N = 256, K = 32: a 2x2 grid of full tiles; the stride
        // symbols and padded extents (A's M, B's N) their declared values.
        let extents: Vec<i64> = k
            .extents
            .iter()
            .map(|n| if n == "K" { 32 } else { 256 })
            .collect();
        assert_eq!(k.extents.len(), 7, "{:?}", k.extents);
        let lens = [256 * 32, 256 * 32, 256 * 256, 0, 0];
        let a = run(&ir, [2, 2, 1], &extents, &lens);
        let b = run(&back, [2, 2, 1], &extents, &lens);
        assert_eq!(a, b, "{}", ir.name);
    }
}

#[test]
fn the_verifier_refuses_each_wrong_ir_file() {
    let all = files("tests/ir/verify", "ir");
    assert!(all.len() >= 4);
    for f in all {
        let text = std::fs::read_to_string(&f).unwrap();
        let expect = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("// expect: "))
            .unwrap_or_else(|| panic!("{}: no `// expect:` line", f.display()));
        let err = parse(&text)
            .and_then(|ir| verify(&ir))
            .expect_err(&f.display().to_string());
        assert!(err.contains(expect), "{}: {err}", f.display());
    }
}

/// A `cp.async` target's bytes pass to another buffer once a top-level
/// `cp.async.wait 0` has retired every copy in flight and a barrier
/// follows (what a rolled epilogue's rows do with a GEMM's stages); the
/// same IR without the wait is `shared_bytes_of_a_cp_async_target.ir`.
#[test]
fn a_cp_async_target_is_handed_over_after_a_wait_for_all() {
    let text = "kernel k(A: global f32*, B: global f32*) block 32
  shared s0: f32[32] at 0
  shared s1: f32[32] at 0
  %1 = thread.x
  copy.async.f32x1 A[%1] -> s0[%1]
  cp.async.wait 0
  barrier
  copy.f32 A[%1] -> s1[%1]
  copy.f32 s1[%1] -> B[%1]
";
    verify(&parse(text).unwrap()).unwrap();
}

/// A block's TMA load left in flight at the end of an `if`'s branch is
/// waited for in the next `if` on the same condition (both take the same
/// branch), with nothing between touching its tile or loading; the same
/// load never waited for is refused.
#[test]
fn a_block_load_is_waited_for_in_the_next_if_on_its_condition() {
    let text = |wait: &str| {
        format!(
            "kernel k(A: global bf16*, B: global bf16*, M: i64, K: i64) block 128
  shared s0: bf16[4096] align 1024
  %0 = thread.x
  %1 = extent M
  %2 = extent K
  %3 = eq %1, %2
  tensor_map t0: A, box (64, 64), extent (%2, %1), stride (1, %2), swizzle 128
  if %3 {{
    tma_load bytes 8192 {{
      tma t0 (0, 0) -> s0[0]
    }}
  }}
  copy.bf16 A[%0] -> B[%0]
  if %3 {{
{wait}    copy.bf16 s0[%0] -> B[%0]
  }}
"
        )
    };
    verify(&parse(&text("    tma_wait\n")).unwrap()).unwrap();
    let err = verify(&parse(&text("")).unwrap()).unwrap_err();
    assert!(err.contains("before the load is waited for"), "{err}");
}

/// A reduce across more blocks than a run adds run by run, then the runs'
/// sums (`ir::REDUCE_RUN`, as the GPU's blocks do): with part 0 at 1.0 and
/// parts 8..15 at 2^-24, each run is exact and the sum is 1 + 2^-21; in
/// one pass from part 0 every 2^-24 would round away against 1.0.
#[test]
fn a_reduce_of_more_parts_than_a_run_adds_the_runs_sums() {
    assert_eq!(tilec::ir::REDUCE_RUN, 8);
    let ir = parse(
        "kernel k(A: global f32*, C: global f32*, M: i64) block 1
  registers r0: f32[1] = 0.0
  %0 = block.z
  %1 = block.x
  copy.f32 A[%0] -> r0[0]
  reduce_blocks r0 across block.z group %1 count 16 index %0 {
    copy.f32 r0[0] -> C[%1]
  }
",
    )
    .unwrap();
    verify(&ir).unwrap();
    let tiny = 2f64.powi(-24);
    let a: Vec<f64> = (0..16)
        .map(|z| match z {
            0 => 1.0,
            1..8 => 0.0,
            _ => tiny,
        })
        .collect();
    let elem = tilec::check::program::Elem::F32;
    let mut tensors = vec![
        Some(Tensor { elem, data: a }),
        Some(Tensor {
            elem,
            data: vec![0.0],
        }),
        None,
    ];
    let launch = Launch {
        parts: vec![Part {
            ir: &ir,
            grid: [1, 1, 16],
            offset: [0; 3],
        }],
        extents: vec![16],
        scalars: vec![1.0; 3],
        blocks_done: None,
        stop: None,
        exact: false,
    };
    execute(&launch, &mut tensors).unwrap();
    assert_eq!(tensors[1].as_ref().unwrap().data, vec![1.0 + 8.0 * tiny]);
}

/// On clusters whose grid the runtime may pad, a reduce across blocks
/// passes inside the top-level test that keeps the pad blocks out
/// (`block.x < extent`, x the cluster's dimension; every block of a group
/// across block.z passes it alike), and nowhere else: not under a test of
/// `block.x` against a value of another block index, and never across the
/// cluster's own dimension. (`cluster_with_a_reduce_across_blocks.ir` is
/// the same kernel with the reduce outside the test.)
#[test]
fn a_reduce_on_clusters_passes_where_pad_blocks_skip_it() {
    let text = std::fs::read_to_string(
        root().join("tests/ir/verify/cluster_with_a_reduce_across_blocks.ir"),
    )
    .unwrap();
    let (head, reduce) = text.split_at(text.find("  reduce_blocks").unwrap());
    let wrapped = |bound: &str, across: &str| {
        let inner: String = reduce.lines().map(|l| format!("  {l}\n")).collect();
        let inner = inner.replace("across block.z", across);
        format!("{head}  %9 = lt %0, {bound}\n  if %9 {{\n{inner}  }}\n")
    };
    let ok = parse(&wrapped("%1", "across block.z")).unwrap();
    verify(&ok).unwrap_or_else(|e| panic!("{e}\n{}", ok.to_text()));
    let err = verify(&parse(&wrapped("%8", "across block.z")).unwrap()).unwrap_err();
    assert!(
        err.contains("reduce across blocks inside a loop or an if"),
        "{err}"
    );
    let err = verify(&parse(&wrapped("%1", "across block.x")).unwrap()).unwrap_err();
    assert!(err.contains("the cluster's"), "{err}");
}
