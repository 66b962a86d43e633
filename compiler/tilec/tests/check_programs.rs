//! The front end on files: the inferred shapes of every example, and the
//! rendered diagnostics of every wrong program in `tests/check/errors/`
//! (checked and lowered, as `tilec check` does).

use std::path::{Path, PathBuf};
use tilec::check::kernel::check_source;
use tilec::check::report::shapes_report;

fn tile_files(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "tile"))
        .collect();
    files.sort();
    files
}

fn stem(p: &Path) -> String {
    p.file_stem().unwrap().to_string_lossy().into_owned()
}

#[test]
fn every_example_checks_and_its_shapes_are_as_recorded() {
    let files = tile_files("examples");
    assert!(files.len() >= 4);
    for f in files {
        let src = std::fs::read_to_string(&f).unwrap();
        let kernels = check_source(&src)
            .unwrap_or_else(|d| panic!("{}: {}", f.display(), d[0].render("x", &src)));
        insta::assert_snapshot!(format!("shapes_{}", stem(&f)), shapes_report(&kernels));
    }
}

/// `X` in a step is the mode left out even in a kernel with a tensor named
/// X (it was the tensor, and the step "a tuple").
#[test]
fn a_step_s_x_is_not_a_tensor_named_x() {
    let src = "kernel k(X: tensor<f32, (M, N):(1, M)>, Y: tensor<f32, (M):(1)>)
{
    launch grid(ceil_div(M, 128)), block(128);
    let gX = local_tile(X, (128, 8), (block.x, _));
    let gY = local_tile(Y, (128, 8), (block.x, _), step(1, X));
    gY[thread.x] = gX[thread.x, 0, 0];
}";
    let kernels = check_source(src).unwrap_or_else(|d| panic!("{}", d[0].render("x", src)));
    let shapes = shapes_report(&kernels);
    assert!(
        shapes.contains("gY") && shapes.contains("(128)"),
        "{shapes}"
    );
}

/// A shared buffer of a shape alone is its compact column-major layout, as
/// registers of a shape are.
#[test]
fn a_shared_buffer_takes_a_shape() {
    let src = "kernel k(Y: tensor<f32, (M):(1)>)
{
    launch grid(ceil_div(M, 256)), block(256);
    let s = shared<f32>(256);
    let t = shared<f32>((16, 16));
    s[thread.x] = 1.0;
    t[thread.x % 16, thread.x / 16] = 2.0;
    sync();
    local_tile(Y, (256), (block.x))[thread.x] = s[255 - thread.x] + t[thread.x / 16, thread.x % 16];
}";
    let kernels = check_source(src).unwrap_or_else(|d| panic!("{}", d[0].render("x", src)));
    let shapes = shapes_report(&kernels);
    assert!(shapes.contains("(16,16):(1,16)"), "{shapes}");
}

/// Parentheses group an `if`'s conditions (they were taken for a tuple).
#[test]
fn an_if_s_conditions_group_in_parentheses() {
    let src = "kernel k(Y: tensor<f32, (M):(1)>)
{
    launch grid(1), block(64);
    if thread.x < 32 && (M > 5 || thread.x < 16) {
        if thread.x < M { Y[thread.x] = 1.0; }
    }
}";
    check_source(src).unwrap_or_else(|d| panic!("{}", d[0].render("x", src)));
}

/// A mode sliced by `thread.x` under a condition that lets fewer threads
/// through than it has coordinates is the program's choice; the block's
/// threads cover it. With more coordinates than the block, it is refused.
#[test]
fn a_thread_condition_does_not_shrink_the_threads_that_cover_a_mode() {
    let src = |block: u32| {
        format!(
            "kernel k(C: tensor<f32, (M):(1)>)
{{
    launch grid(M), block({block});
    let s = shared<f32>((128, 2));
    s[thread.x % 128, 0] = 1.0;
    sync();
    if thread.x < 32 {{
        C[block.x] = s[thread.x, 0];
    }}
}}"
        )
    };
    let ok = src(128);
    check_source(&ok).unwrap_or_else(|d| panic!("{}", d[0].render("x", &ok)));
    let narrow = src(64);
    let d = check_source(&narrow).expect_err("128 coordinates on a block of 64 threads");
    assert!(
        d[0].message == "mode 0 has 128 coordinates but the block only 64 threads",
        "{}",
        d[0].render("x", &narrow)
    );
}

#[test]
fn every_wrong_program_gets_its_diagnostics() {
    let files = tile_files("tests/check/errors");
    assert!(files.len() >= 30, "{} wrong programs", files.len());
    for f in files {
        let src = std::fs::read_to_string(&f).unwrap();
        let name = format!("{}.tile", stem(&f));
        // Through lowering too: `tilec check` refuses what lowering would.
        let diags = match tilec::pipeline::lower_source(&src) {
            Ok(_) => panic!("{name} should not check"),
            Err(d) => d,
        };
        let rendered: String = diags
            .iter()
            .map(|d| d.render(&name, &src))
            .collect::<Vec<_>>()
            .join("\n");
        insta::assert_snapshot!(format!("error_{}", stem(&f)), rendered);
    }
}

#[test]
fn perf_analysis_of_the_gemms() {
    for name in [
        "sgemm_nt",
        "sgemm_tn",
        "sgemm_nt_tv",
        "sgemm_tn_tv",
        "sgemm_nt_sm80",
        "sgemm_tn_sm80",
        "transpose",
        "bgemm_tn_sm80",
        "bgemm_nt_sm80",
        "bgemm_nt_sm90_tma",
    ] {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../examples/{name}.tile"));
        let src = std::fs::read_to_string(&path).unwrap();
        let kernels = check_source(&src).unwrap_or_else(|d| panic!("{}", d[0].render(name, &src)));
        let lowered = tilec::lower::lower(&kernels[0]).unwrap();
        let report = tilec::perf::report(
            &lowered,
            &kernels[0].strides,
            &[],
            &src,
            &format!("{name}.tile"),
        );
        insta::assert_snapshot!(format!("perf_{name}"), report);
    }
    // A 16-bit copy into registers that is not ldmatrix says why.
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/run/swizzled_transpose.tile");
    let src = std::fs::read_to_string(&path).unwrap();
    let k = &check_source(&src).unwrap()[0];
    let lowered = tilec::lower::lower(k).unwrap();
    let report = tilec::perf::report(&lowered, &k.strides, &[], &src, "swizzled_transpose.tile");
    assert!(
        report.contains("swizzled_transpose.tile:27:5  note: element by element, not ldmatrix: the lanes' elements are not where ldmatrix puts them"),
        "{report}"
    );
    // The claims that explain the measured speeds (docs/performance.md).
    let tn = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sgemm_tn.tile"),
    )
    .unwrap();
    let l = tilec::lower::lower(&check_source(&tn).unwrap()[0]).unwrap();
    // M = N = K = 4096, and so is each stride symbol (K or M).
    let costs = tilec::perf::analyze(&l.ir, &vec![4096; l.ir.extents.len()]);
    let gemm_a = costs
        .iter()
        .find(|c| c.op == "gemm" && c.target == "smA")
        .unwrap();
    assert_eq!(
        (gemm_a.bytes, gemm_a.worst, gemm_a.ideal),
        (16, 8, 4),
        "TN's gemm reads sA as 128-bit vectors (LDS.128 in the SASS) with 2-way bank conflicts"
    );
    assert!(
        costs
            .iter()
            .filter(|c| !c.shared)
            .all(|c| c.worst == c.ideal),
        "TN's global accesses are coalesced"
    );
    // sgemm_tn_sm80 transposes in registers on the way into its padded
    // shared tiles: its 128-bit loads read whole sectors and its 4-byte
    // stores write 32 different banks.
    let tn = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sgemm_tn_sm80.tile"),
    )
    .unwrap();
    let l = tilec::lower::lower(&check_source(&tn).unwrap()[0]).unwrap();
    let copies: Vec<_> = tilec::perf::analyze(&l.ir, &vec![4096; l.ir.extents.len()])
        .into_iter()
        .filter(|c| c.op == "copy" && c.target != "C")
        .collect();
    assert_eq!(
        copies
            .iter()
            .map(|c| (c.shared, c.bytes))
            .collect::<Vec<_>>(),
        [
            (false, 16),
            (false, 16),
            (true, 4),
            (true, 4),
            (false, 16),
            (false, 16)
        ],
        "A and B: loads before the loop, stores and loads in it"
    );
    assert!(copies.iter().all(|c| c.worst == c.ideal), "{copies:?}");
}

/// The small GEMMs' claim (examples/sgemm_{nt,tn}_small.tile): at every tile
/// and k-tile the tuner may pick, shared memory is read and written without
/// bank conflicts and A and B are read in whole sectors.
#[test]
fn the_small_gemms_meet_no_bank_conflict_at_any_tile_or_k_tile() {
    for name in ["sgemm_nt_small", "sgemm_tn_small"] {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../examples/{name}.tile"));
        let src = std::fs::read_to_string(&path).unwrap();
        for bm in [32, 64] {
            for bn in [32, 64] {
                for bk in [8, 16, 32] {
                    let set = tilec::check::program::Settings::from([
                        ("bm".to_string(), bm),
                        ("bn".to_string(), bn),
                        ("bk".to_string(), bk),
                    ]);
                    let k = &tilec::check::kernel::check_source_with(&src, &set).unwrap()[0];
                    let l = tilec::lower::lower(k).unwrap();
                    let costs = tilec::perf::analyze(&l.ir, &vec![4096; l.ir.extents.len()]);
                    let bad: Vec<_> = costs
                        .iter()
                        .filter(|c| c.shared || c.target != "C")
                        .filter(|c| c.worst != c.ideal)
                        .collect();
                    assert!(bad.is_empty(), "{name} {bm}x{bn}x{bk}: {bad:?}");
                }
            }
        }
    }
}

/// tests/check/errors/NAME.tile with `from` replaced by `to` lowers
/// without an error: the wrong program's twin that is right.
fn twin_lowers(name: &str, from: &str, to: &str) {
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../tests/check/errors/{name}.tile"));
    let src = std::fs::read_to_string(file).unwrap().replace(from, to);
    if let Err(d) = tilec::pipeline::lower_source(&src) {
        panic!("{}", d[0].render("x", &src));
    }
}

/// A shared index may name extents: the runtime takes them from 1 to
/// 2^40, so `(thread.x + M) % 256` stays within a buffer of 256 (and
/// `% 512` does not: tests/check/errors/shared_index_through_an_extent.tile).
#[test]
fn a_shared_index_through_an_extent_is_bounded_as_the_runtime_takes_extents() {
    twin_lowers("shared_index_through_an_extent", "% 512", "% 256");
}

/// A reduction's operands of one shape fold: the error's twin without
/// the (4, 2) operand lowers.
#[test]
fn a_reduction_of_operands_of_one_shape_lowers() {
    twin_lowers("reduced_operands_of_two_shapes", " + q, 0)", ", 0)");
}

/// A reduce's body on the group's own tile of C lowers.
#[test]
fn a_reduce_body_on_the_group_s_tile_lowers() {
    twin_lowers(
        "reduce_body_moves_with_block_z",
        "axpby(alpha, r, beta, tCgZ)",
        "axpby(alpha, r, beta, tCgC)",
    );
}

/// An inner loop whose end follows a guarded outer counter stays inside
/// its mode where the guard keeps the end there: `b < a + 2` with
/// `a < 30` reaches 30 of 32 (and `a < 32` reaches 32:
/// tests/check/errors/shared_past_its_mode_by_an_inner_loop_s_end.tile).
#[test]
fn an_inner_loop_s_end_bounded_by_a_guard_stays_in_its_mode() {
    twin_lowers(
        "shared_past_its_mode_by_an_inner_loop_s_end",
        "if a < 32",
        "if a < 30",
    );
}

/// `min_blocks(n)` stands where n blocks' shared memory fits a
/// multiprocessor: one block of 120 KB does
/// (tests/check/errors/min_blocks_past_shared_memory.tile asks for two).
#[test]
fn min_blocks_stands_where_the_blocks_fit_shared_memory() {
    twin_lowers(
        "min_blocks_past_shared_memory",
        "min_blocks(2)",
        "min_blocks(1)",
    );
}

/// A loop whose end follows the thread is bounded by the launch's threads
/// (and the ifs around it): `0..min(thread.x + 1, 32)`, `0..thread.x` and
/// `0..thread.x % 32` in a block of 32 stay in a row of 32, where
/// `0..thread.x + 2` reaches 32
/// (tests/check/errors/shared_past_its_mode_by_a_loop_to_the_thread.tile).
#[test]
fn a_loop_to_the_thread_is_bounded_by_the_launch_s_threads() {
    for end in [
        "min(thread.x + 1, 32)",
        "thread.x",
        "thread.x % 32",
        "31 - thread.x",
    ] {
        twin_lowers(
            "shared_past_its_mode_by_a_loop_to_the_thread",
            "0..thread.x + 2",
            &format!("0..{end}"),
        );
    }
}

/// A guard on a quotient, a product or a sum of the counter bounds the
/// counter where the lowering reads it (`j / 32 < 1` is `j < 32`), and
/// `j / 32 < 2` does not keep it in a row of 32:
/// tests/check/errors/shared_row_under_a_quotient_guard.tile.
#[test]
fn a_guard_on_a_quotient_product_or_sum_bounds_its_counter() {
    for guard in [
        "j / 32 < 1",
        "j / 32 == 0",
        "2 * j < 64",
        "j - 32 < 0",
        "j + 1 <= 32",
    ] {
        twin_lowers("shared_row_under_a_quotient_guard", "j / 32 < 2", guard);
    }
}
