//! The launch proof under `if`s: indices and loop bounds capped by the
//! comparisons around them, and accesses under an if that no block,
//! thread or trip of a region passes left out of it; one element past
//! what the if allows is still refused.

use super::*;

/// `tilec check FILE --dims` of `file` with `from` replaced by `to` (the
/// file itself where they are equal): the exit status and stderr.
fn checked(file: &str, from: &str, to: &str, dims: &str) -> (i32, String) {
    let src = std::fs::read_to_string(root().join(file))
        .unwrap()
        .replace(from, to);
    let f = std::env::temp_dir().join(format!(
        "tilec-ifs-{}-{}.tile",
        std::process::id(),
        file.replace('/', "_")
    ));
    std::fs::write(&f, src).unwrap();
    let (code, out, err) = tilec(&["check", f.to_str().unwrap(), "--dims", dims]);
    std::fs::remove_file(&f).ok();
    assert!(code != 0 || out.contains("every access in bounds"), "{out}");
    (code, err)
}

/// Shared zeros past a row under `c >= N` and the else of `c < N`, where
/// the if bounds the index from below by a run-time value, and a read
/// under `j == 0`: checked in bounds at every N (they were refused); one
/// element past the buffer under `j == 0` is still refused, by the slice
/// check at a point where the if holds (`c < N && j == 0`, evaluated at N
/// = 16384; the shared bound check refused it later before).
#[test]
fn a_shared_access_under_a_lower_bound_or_an_equality_is_bounded_by_it() {
    let file = "tests/run/padded_row.tile";
    for n in ["M=3,N=1", "M=3,N=100", "M=3,N=256"] {
        let (code, err) = checked(file, "", "", n);
        assert_eq!(code, 0, "{n}: {err}");
    }
    let (code, err) = checked(file, "b[c] + a[c + 1]", "b[c + 1] + a[c + 1]", "M=3,N=100");
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("reaches 64, outside its mode's")
            && err.contains("64 where j = 0, thread.x = 63"),
        "{err}"
    );
}

/// `for j in 0..i + 1` inside `if i < M`: the counter bounded by the if
/// (the proof refused every M but multiples of 64); one trip more is
/// refused.
#[test]
fn a_loop_under_an_if_is_bounded_by_it() {
    let file = "tests/run/guarded_loop_bound.tile";
    for m in ["M=37", "M=1", "M=1000"] {
        let (code, err) = checked(file, "", "", m);
        assert_eq!(code, 0, "{m}: {err}");
    }
    let (code, err) = checked(file, "0..i + 1", "0..i + 2", "M=37");
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("refusing to launch: line 13: L would be accessed at"),
        "{err}"
    );
}

/// A stencil's interior at M = 1 and 2, where `i >= 1 && i < M - 1` holds
/// nowhere, launches (its capped index was -1, refused); one element past
/// the interior is refused where the interior exists.
#[test]
fn an_access_under_an_if_nothing_passes_is_no_access() {
    let file = "tests/run/guarded_from_both_sides.tile";
    for m in ["M=1", "M=2", "M=37"] {
        let (code, err) = checked(file, "", "", m);
        assert_eq!(code, 0, "{m}: {err}");
    }
    let (code, _) = checked(file, "A[i + 1]", "A[i + 2]", "M=1");
    assert_eq!(code, 0);
    let (code, err) = checked(file, "A[i + 1]", "A[i + 2]", "M=37");
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("refusing to launch: line 12: A would be accessed at"),
        "{err}"
    );
}

/// A guard of two sides joined by `||` bounds what both sides bound, by
/// the looser of the two: the rows before the last or the last row, each
/// within the columns, is proved in bounds at every size (it was refused);
/// a side that leaves the column unbounded (`|| i == M - 1`), or bounds
/// the rows past the tensor (`i < M + 3 && j < N || ...`), is refused.
#[test]
fn a_guard_of_either_side_bounds_by_the_looser() {
    let file = "tests/run/guarded_by_either_side.tile";
    for dims in ["M=5,N=37", "M=1,N=1", "M=130,N=7"] {
        let (code, err) = checked(file, "", "", dims);
        assert_eq!(code, 0, "{dims}: {err}");
    }
    let guard = "i < M - 1 && j < N || i == M - 1 && j < N";
    for wrong in [
        "i < M - 1 && j < N || i == M - 1",
        "i < M + 3 && j < N || i == M - 1 && j < N",
    ] {
        let (code, err) = checked(file, guard, wrong, "M=5,N=37");
        assert_eq!(code, 1, "{wrong}: {err}");
        assert!(err.contains("refusing to launch"), "{wrong}: {err}");
    }
}
