//! The CPU executor through `tilec run --cpu`, on kernels written here.

use std::process::Command;

fn run_cpu(name: &str, source: &str, dims: &str) -> (i32, String) {
    let dir = std::env::temp_dir().join(format!("tilec-cpu-runs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{name}.tile"));
    std::fs::write(&file, source).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tilec"))
        .args(["run", "--cpu", file.to_str().unwrap(), "--dims", dims])
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
