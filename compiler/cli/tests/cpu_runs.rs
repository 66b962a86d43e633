//! The CPU executor through `tilec run --cpu`, on kernels written here.

use std::process::Command;

fn run_cpu(name: &str, source: &str, dims: &str) -> (i32, String) {
    run_cpu_with(name, source, dims, &[])
}

/// `source` in a file of its own, `NAME.tile` in a directory of this run.
fn write_source(name: &str, source: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("tilec-cpu-runs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{name}.tile"));
    std::fs::write(&file, source).unwrap();
    file
}

fn run_cpu_with(name: &str, source: &str, dims: &str, extra: &[&str]) -> (i32, String) {
    let file = write_source(name, source);
    let out = Command::new(env!("CARGO_BIN_EXE_tilec"))
        .args(["run", "--cpu", file.to_str().unwrap(), "--dims", dims])
        .args(extra)
        .output()
        .expect("tilec runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Two blocks writing one element of a tensor: the executor names both
/// blocks and the statement, whatever order they ran in.
#[test]
fn two_blocks_writing_one_element_are_caught() {
    let source = "
kernel both(A: tensor<f32, (M, N):(1, M)>, B: tensor<f32, (M, N):(1, M)>)
{
    tiler  tile = (128, 32);
    layout tv   = ((32, 8), (4, 4)):((1, 128), (32, 1024));
    reference copy(A, B);
    launch grid(2, 1), block(size(get(tv, 0)));
    let gA = local_tile(A, tile, (0, 0));
    let gB = local_tile(B, tile, (0, 0));
    let tA = composition(gA, tv)[thread.x, _];
    let tB = composition(gB, tv)[thread.x, _];
    let r  = registers<f32>(shape(tA));
    copy(tA, r);
    copy(r, tB);
}
";
    let (code, err) = run_cpu("both", source, "M=128,N=32");
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("blocks [0, 0, 0] and [1, 0, 0] both write element 0 of `B`"),
        "{err}"
    );
    assert!(
        err.contains("copy(r, tB)") && err.contains("the other block's write"),
        "{err}"
    );
}

/// `--scalars` gives scalar parameters their values (the others are
/// random): a kernel scaling by `s` matches a reference that doubles only
/// where s = 2 reaches it; a name the kernel lacks, an i32 that is not
/// whole, and a scalar given as an extent are refused by name.
#[test]
fn scalars_take_the_values_given() {
    let source = "
kernel scale(X: tensor<f32, (M):(1)>, Y: tensor<f32, (M):(1)>, s: f32, n: i32)
{
    reference twice(X, Y, s, n);
    launch grid(ceil_div(M, 32)), block(32);
    let tX = local_partition(local_tile(X, (32), (block.x)), (32):(1), thread.x);
    let tY = local_partition(local_tile(Y, (32), (block.x)), (32):(1), thread.x);
    tY = s * tX + n;
}
kernel twice(X: tensor<f32, (M):(1)>, Y: tensor<f32, (M):(1)>, s: f32, n: i32)
{
    launch grid(M), block(1);
    Y[block.x] = 2.0 * X[block.x] + 7;
}
";
    let (code, err) = run_cpu_with("scalars", source, "M=100", &["--scalars", "s=2,n=7"]);
    assert_eq!(code, 0, "{err}");
    let (code, _) = run_cpu_with("scalars", source, "M=100", &["--scalars", "n=7"]);
    assert_ne!(
        code, 0,
        "a random s should not match the doubling reference"
    );
    for (dims, scalars, said) in [
        (
            "M=100",
            "t=2",
            "the kernel has no scalar parameter t; its scalars are s, n",
        ),
        ("M=100", "n=1.5", "n is an i32, and 1.5 is not one"),
        (
            "M=100",
            "s=1e39",
            "s is f32, and 1000000000000000000000000000000000000000 is past its largest value (it would be inf); pass `s=inf` for an infinity",
        ),
        (
            "M=100,s=2",
            "",
            "s is a scalar parameter, not an extent: its value goes in --scalars s=VALUE",
        ),
        // Past f64's range or below it, the number parsed is not the one
        // written; below f32's, it would be passed as 0.
        (
            "M=100",
            "s=1e400",
            "`1e400` is past f64's range (in s=1e400); write `inf` for an infinity",
        ),
        (
            "M=100",
            "n=1e-400",
            "`1e-400` is below f64's smallest value (in n=1e-400): it would be 0",
        ),
        (
            "M=100",
            "s=1e-50",
            "s is f32, and 1e-50 is below its smallest value (it would be 0)",
        ),
    ] {
        let (code, err) = run_cpu_with("scalars", source, dims, &["--scalars", scalars]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(said), "{err}");
    }
}

/// A mismatch names its element by its coordinate in the tensor (here a
/// row-major one: offset 5 * 40 + 3), and an i32 tensor's values as
/// integers.
#[test]
fn a_mismatch_names_the_element_by_its_coordinate() {
    let source = "
kernel off(X: tensor<f32, (M, N):(N, 1)>, Y: tensor<f32, (M, N):(N, 1)>,
           I: tensor<i32, (M, N):(N, 1)>, J: tensor<i32, (M, N):(N, 1)>)
{
    reference exact(X, Y, I, J);
    launch grid(M, N), block(1);
    Y[block.x, block.y] = X[block.x, block.y] + select(block.x == 5 && block.y == 3, 1.0, 0.0);
    J[block.x, block.y] = I[block.x, block.y];
}
kernel exact(X: tensor<f32, (M, N):(N, 1)>, Y: tensor<f32, (M, N):(N, 1)>,
             I: tensor<i32, (M, N):(N, 1)>, J: tensor<i32, (M, N):(N, 1)>)
{
    launch grid(M, N), block(1);
    Y[block.x, block.y] = X[block.x, block.y];
    J[block.x, block.y] = I[block.x, block.y] + select(block.x == 7 && block.y == 0, 100, 0);
}
";
    let out = Command::new(env!("CARGO_BIN_EXE_tilec"))
        .args(["run", "--cpu", "--kernel", "off"])
        .arg(write_source("off", source))
        .args(["--dims", "M=9,N=40"])
        .output()
        .expect("tilec runs");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{shown}");
    // The worst of the two is J's: 100 off, against Y's 1.
    assert!(
        shown.contains("MISMATCH: element (7, 0) of J is "),
        "{shown}"
    );
    assert!(shown.contains(" where the reference has "), "{shown}");
    assert!(
        !shown.contains("e0 where"),
        "integers print as integers: {shown}"
    );
}

/// A launch condition that fails is said in the caller's terms: a stride
/// symbol of `X: (M, N):(N, 1)` is `N` there.
#[test]
fn a_passed_over_entry_names_its_condition_in_the_callers_terms() {
    let out = Command::new(env!("CARGO_BIN_EXE_tilec"))
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .args([
            "run",
            "--cpu",
            "tests/run/column_sums_split.tile",
            "--dims",
            "M=77,N=1001",
        ])
        .output()
        .expect("tilec runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("colsum_split_guarded_vec does not run: N % 4 == 0 does not hold"),
        "{err}"
    );
    assert!(!err.contains("stride"), "{err}");
}

/// A tensor the kernel writes whose layout puts two elements in one place
/// at the extents given (batch entries SC = 100 elements apart, each of
/// M * N = 800) is refused at launch: two blocks would write one element.
#[test]
fn a_written_tensor_whose_elements_overlap_is_refused() {
    let source = "
kernel batched_copy(X: tensor<f32, (M, N, L):(1, M, M * N)>, Y: tensor<f32, (M, N, L):(1, M, SC)>)
{
    reference each(X, Y);
    launch grid(ceil_div(M, 32), N, L), block(32);
    let tX = local_tile(X[_, _, block.z], (32, 1), (block.x, block.y))[thread.x, 0];
    let tY = local_tile(Y[_, _, block.z], (32, 1), (block.x, block.y))[thread.x, 0];
    tY = tX;
}
kernel each(X: tensor<f32, (M, N, L):(1, M, M * N)>, Y: tensor<f32, (M, N, L):(1, M, SC)>)
{
    launch grid(M, N, L), block(1);
    Y[block.x, block.y, block.z] = X[block.x, block.y, block.z];
}
";
    let (code, err) = run_cpu("batched_copy", source, "M=40,N=20,L=3,SC=800");
    assert_eq!(code, 0, "{err}");
    let (code, err) = run_cpu("batched_copy", source, "M=40,N=20,L=3,SC=100");
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("Y (M,N,L):(1,M,SC) puts two of its elements in one place")
            && err.contains("two writers of one element race"),
        "{err}"
    );
    // Past 2^20 elements, strides that do not nest were let through.
    let (code, err) = run_cpu("batched_copy", source, "M=1024,N=1024,L=2,SC=1000000");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("2097152 elements in 2048576 places"), "{err}");
}

/// An element-wise quotient by a product of extents: the product passes 64
/// bits at extents of 2^32 (0 there, wrapped), and the launch is refused
/// by a condition the checker records; at small extents it runs.
#[test]
fn a_divisor_of_extents_past_64_bits_is_refused() {
    let source = "
kernel quotient(S: tensor<f32, (P, Q):(0, 0)>, X: tensor<f32, (M):(1)>, Y: tensor<f32, (M):(1)>)
{
    launch grid(ceil_div(M, 32)), block(32);
    let tX = local_partition(local_tile(X, (32), (block.x)), (32):(1), thread.x);
    let tY = local_partition(local_tile(Y, (32), (block.x)), (32):(1), thread.x);
    tY = tX + coord(tX, 0) / (P * Q);
}
";
    let (code, err) = run_cpu("quotient", source, "M=10,P=4,Q=5");
    assert_eq!(code, 0, "{err}");
    let (code, err) = run_cpu("quotient", source, "M=10,P=4294967296,Q=4294967296");
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("1 <= (P*Q) does not hold (a divisor, which must fit 64 bits)"),
        "{err}"
    );
}

/// A tensor's extent that cannot be computed at the launch's extents (a
/// quotient by zero, or a product past 64 bits) is refused by name: with a
/// stride of 0 it folded out of the tensor's span, and the launch was
/// accepted while the GPU's guard compared against an undefined extent
/// and every block wrote the same elements (a review's finding).
#[test]
fn an_extent_that_cannot_be_computed_is_refused() {
    let source = "
kernel broadcast(C: tensor<f32, (M / (N - 1), P):(0, 1)>)
{
    launch grid(2), block(32);
    C[block.x, thread.x] = 1.0;
}
";
    let (code, err) = run_cpu("broadcast", source, "M=4,N=1,P=32");
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("the extent (M/(N-1)) cannot be computed for M=4,N=1,P=32"),
        "{err}"
    );
}

/// examples/sgemm_tn_streamk.tile without its barrier after a piece's main
/// loop: one block holds both tiles whole, so each reduce is a group of one
/// part, which has no barrier of its own, and the second tile's first
/// k-tile goes into stage 0 while warps may still read stage 0 for the
/// first tile's last k-tile. Derived from the example, so that it follows it.
#[test]
fn stream_k_without_its_barrier_after_a_piece_races() {
    let example = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/sgemm_tn_streamk.tile"
    ))
    .unwrap();
    let barrier = "        sync();\n        // The blocks holding tile t's first and last k-tiles";
    assert!(example.contains(barrier), "the example's barrier moved");
    let planted = example.replace(
        barrier,
        "        // The blocks holding tile t's first and last k-tiles",
    );
    let (code, err) = run_cpu_with(
        "piece_overwrites_a_stage_in_use",
        &planted,
        "M=64,N=128,K=48,sm_count=1",
        &["--set", "bm=64,bn=64,blocks_per_sm=1"],
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("shared-memory race on smA[0]")
            && err.contains("writes it here")
            && err.contains("reads it here")
            && err.contains("put a sync() between the two accesses"),
        "{err}"
    );
}

/// A value rounded to bf16 inside an expression (`bf16(A * B)` into an f32
/// C): the reference rounds its exact product once, the kernel its f32
/// product, and where the two straddle a bf16 rounding boundary they are a
/// whole bf16 unit apart (element 310027 at this size, a walk's kernel).
/// The check holds C to bf16's tolerance, not f32's.
#[test]
fn a_rounding_to_bf16_inside_an_expression_is_checked_at_bf16() {
    let source =
        "kernel rounds(A: tensor<f32, (M):(1)>, B: tensor<f32, (M):(1)>, C: tensor<f32, (M):(1)>)
{
    reference rounds_reference(A, B, C);
    launch grid(ceil_div(M, 128)), block(128);
    let tA = local_tile(A, (128), (block.x));
    let tB = local_tile(B, (128), (block.x));
    let tC = local_tile(C, (128), (block.x));
    tC[thread.x] = bf16(tA[thread.x] * tB[thread.x]);
}
kernel rounds_reference(A: tensor<f32, (M):(1)>, B: tensor<f32, (M):(1)>, C: tensor<f32, (M):(1)>)
{
    launch grid(M), block(1);
    C[block.x] = bf16(A[block.x] * B[block.x]);
}
";
    // Exit 1 with a MISMATCH where f32's tolerance held it.
    let (code, shown) = run_cpu("rounds", source, "M=320000");
    assert_eq!(code, 0, "{shown}");
}

/// A thread layout of 128 threads partitions for the first 128 threads of
/// a block of 256 under `if thread.x < 128` (warp specialization by
/// hand): those alone run it, and each owns its elements. Under `if
/// thread.x >= 128` the same layout would take threads past its size.
#[test]
fn a_thread_layout_of_the_threads_an_if_lets_through_partitions() {
    let src = |cond: &str| {
        format!(
            "kernel half_block(A: tensor<f32, (M, N):(1, M)>, C: tensor<f32, (M, N):(1, M)>)
{{
    reference copy(A, C);
    layout th = (32, 4):(1, 32);
    launch grid(ceil_div(M, 32), ceil_div(N, 4)), block(256);
    let gA = local_tile(A, (32, 4), (block.x, block.y));
    let gC = local_tile(C, (32, 4), (block.x, block.y));
    if {cond} {{
        copy(local_partition(gA, th, thread.x), local_partition(gC, th, thread.x));
    }}
}}"
        )
    };
    for dims in ["M=64,N=8", "M=37,N=5"] {
        let (code, err) = run_cpu("half_block", &src("thread.x < 128"), dims);
        assert_eq!(code, 0, "{dims}: {err}");
    }
    let (code, err) = run_cpu("half_block_high", &src("thread.x >= 128"), "M=64,N=8");
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("`th` has 128 threads but the block has 256"),
        "{err}"
    );
}

/// A grid with one block past its tiles: the spare block's tile lies past
/// the tensor, which the full-tile entry's conditions cannot say. Where
/// the extents are multiples of the tile, that entry's launch is not
/// proved, and it steps aside for the entry that tests each copy (it had
/// been refused there, and run at every other size).
#[test]
fn an_entry_the_proof_refuses_steps_aside_for_a_later_one() {
    let src = "kernel spare(A: tensor<f32, (M, N):(1, M)>, C: tensor<f32, (M, N):(1, M)>)
{
    reference copy(A, C);
    layout th = (32, 4):(1, 32);
    launch grid(ceil_div(M, 32) * ceil_div(N, 4) + 1), block(128);
    let bm = block.x % ceil_div(M, 32);
    let bn = block.x / ceil_div(M, 32);
    let gA = local_tile(A, (32, 4), (bm, bn));
    let gC = local_tile(C, (32, 4), (bm, bn));
    copy(local_partition(gA, th, thread.x), local_partition(gC, th, thread.x));
}";
    for dims in ["M=32,N=4", "M=64,N=8", "M=33,N=5"] {
        let (code, err) = run_cpu("spare", src, dims);
        assert_eq!(code, 0, "{dims}: {err}");
    }
    let (_, err) = run_cpu("spare", src, "M=64,N=8");
    assert!(
        err.contains("spare does not run: its accesses are not proved in bounds here (line 10: A would be accessed"),
        "{err}"
    );
}

/// An f32 input copied into bf16 registers on its way (a mixed-input
/// GEMM's A, converted for the tensor cores) reaches an f32 output
/// rounded: the run holds it to bf16's tolerance, as a rounding inside an
/// expression is, where f32's failed it.
#[test]
fn a_value_stored_narrower_on_its_way_is_checked_at_that_type() {
    let src = "kernel through_bf16(A: tensor<f32, (M):(1)>, C: tensor<f32, (M):(1)>)
{
    reference copy(A, C);
    launch grid(ceil_div(M, 128)), block(128);
    let tA = local_tile(A, (128), (block.x));
    let tC = local_tile(C, (128), (block.x));
    let r = registers<bf16>(1);
    copy(tA[thread.x], r[0]);
    copy(r[0], tC[thread.x]);
}";
    let (code, err) = run_cpu("through_bf16", src, "M=1000");
    assert_eq!(code, 0, "{err}");
}

/// A grid sized by `sm_count` that launches fewer blocks than it gives each
/// block one tile of its walk: the run says so, and how to walk several.
#[test]
fn a_walk_of_one_tile_a_block_is_noted() {
    let src = "kernel walk(A: tensor<f32, (M):(1)>, C: tensor<f32, (M):(1)>)
{
    reference copy(A, C);
    let tiles = ceil_div(M, 128);
    launch grid(min(tiles, sm_count)), block(128);
    for t in block.x..tiles {
        if t % min(tiles, sm_count) == block.x {
            let tA = local_tile(A, (128), (t));
            let tC = local_tile(C, (128), (t));
            copy(tA[thread.x], tC[thread.x]);
        }
    }
}";
    let (code, err) = run_cpu("walk", src, "M=1000");
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("walk launches 8 block(s), fewer than sm_count = 132")
            && err.contains("`--dims M=1000,sm_count=2` gives each several"),
        "{err}"
    );
    let (code, err) = run_cpu("walk", src, "M=1000,sm_count=2");
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("fewer than sm_count"), "{err}");
}
