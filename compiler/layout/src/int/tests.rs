//! The integers' folding, ranges and text form, by example.

use super::*;

/// A loop counter less its start is the iteration again, which the
/// lowering's bounds on `(k - k0) % stages` rely on.
#[test]
fn a_sum_less_one_of_its_terms_is_the_other() {
    let (s, i) = (Int::var("z").mul(&Int::var("per")), Int::var("i"));
    assert_eq!(s.add(&i).sub(&s), i);
    assert_eq!(i.add(&s).sub(&s), i);
    assert_eq!(
        s.add(&i)
            .sub(&i)
            .eval(&|n: &str| Some(if n == "z" { 3 } else { 5 })),
        Some(15)
    );
}

/// A value shared by both operands is counted at each use, as a walk
/// over it visits it; the count stops at the limit, so a doubling chain
/// of 60 steps (2^60 nodes) answers at once.
#[test]
fn the_size_of_a_shared_expression_counts_every_use() {
    let mut n = Int::var("M");
    for _ in 0..60 {
        n = n.add(&n);
    }
    assert!(n.larger_than(4096));
    let small = Int::var("M").mul(&Int::var("N")).add(&Int::var("K"));
    assert!(!small.larger_than(5));
    assert!(small.larger_than(4));
    assert!(!Int::from(7).larger_than(1));
    let twice = Int::var("M").mul(&Int::var("M")).add(&Int::var("N"));
    assert_eq!(twice.uses_within("M", 5), Some(2));
    assert_eq!(twice.uses_within("M", 4), None);
}

#[test]
fn static_values_fold() {
    let a = Int::from(12);
    assert_eq!(a.mul(&Int::from(3)), Int::from(36));
    assert_eq!(a.ceil_div(&Int::from(5)), Int::from(3));
    assert_eq!(Int::from(-7).div(&Int::from(2)), Int::from(-3));
    assert_eq!(Int::from(-7).rem(&Int::from(2)), Int::from(-1));
}

#[test]
fn multiples_are_shown_or_conditioned() {
    let t = Int::var("thread.x");
    let m = Int::var("M");
    let extents = |n: &str| n == "M";
    // 4*(t%32) + 128*(t/32)*M is a multiple of 4 whatever t and M are.
    let off = Int::from(4)
        .mul(&t.rem(&Int::from(32)))
        .add(&t.div(&Int::from(32)).mul(&Int::from(128)).mul(&m));
    assert_eq!(off.multiple_of(4, &extents), Some(vec![]));
    // t + 4 is not, for every thread.
    assert_eq!(t.add(&Int::from(4)).multiple_of(4, &extents), None);
    // 8*bx + 2*M needs M even for a multiple of 4.
    let x = Int::from(8)
        .mul(&Int::var("block.x"))
        .add(&Int::from(2).mul(&m));
    assert_eq!(
        x.multiple_of(4, &extents),
        Some(vec![crate::Fact::divides(&Int::from(2), &m)])
    );
}

/// A thread's row in a block of one row, `t / 256` for t < 256, is 0:
/// folded by the thread's range, the offset is a multiple of 4 again.
#[test]
fn a_quotient_of_a_value_below_its_divisor_folds_to_zero() {
    let t = Int::var("thread.x");
    let env = |n: &str| (n == "thread.x").then_some((0, 255));
    let off = Int::from(4)
        .mul(&t.rem(&Int::from(256)))
        .add(&t.div(&Int::from(256)));
    assert_eq!(off.multiple_of(4, &|_: &str| false), None);
    let folded = off.fold_in_range(&env);
    assert_eq!(folded, Int::from(4).mul(&t));
    assert_eq!(folded.multiple_of(4, &|_: &str| false), Some(vec![]));
    // Not where the value may reach the divisor, nor be negative, nor
    // where the divisor is not a number.
    let wide = |n: &str| (n == "thread.x").then_some((0, 256));
    assert_eq!(off.fold_in_range(&wide), off);
    let negative = |n: &str| (n == "thread.x").then_some((-1, 3));
    assert_eq!(off.fold_in_range(&negative), off);
    let by_m = t.div(&Int::var("M")).add(&t.rem(&Int::var("M")));
    assert_eq!(by_m.fold_in_range(&env), by_m);
    // A remainder alone: t % 256 is t.
    assert_eq!(t.rem(&Int::from(256)).fold_in_range(&env), t);
}

#[test]
fn text_form_reads_back() {
    let m = Int::var("M");
    let x = m
        .ceil_div(&Int::from(128))
        .mul(&Int::var("block.x"))
        .add(&m.rem(&Int::from(7)))
        .sub(&Int::from(-3));
    let y = x.min(&Int::var("K")).max(&Int::from(2));
    for v in [x, y, Int::from(-12), Int::var("thread.x")] {
        assert_eq!(v.to_string().parse::<Int>(), Ok(v.clone()), "{v}");
        let deep = format!("{}M{}", "(".repeat(5000), "+1)".repeat(5000));
        assert!(deep.parse::<Int>().unwrap_err().contains("nested deeper"));
    }
    assert!("(M+".parse::<Int>().is_err());
}

#[test]
fn ranges_bound_every_value() {
    // The row of a thread in a 32x8 thread layout, and a tile offset.
    let t = Int::var("t");
    let row = t.rem(&Int::from(32));
    let col = t.div(&Int::from(32));
    let off = row.add(&col.mul(&Int::var("M")));
    let env = |n: &str| match n {
        "t" => Some((0, 255)),
        "M" => Some((100, 100)),
        _ => None,
    };
    assert_eq!(row.range(&env), Some((0, 31)));
    assert_eq!(col.range(&env), Some((0, 7)));
    assert_eq!(off.range(&env), Some((0, 31 + 700)));
    assert_eq!(Int::var("x").range(&env), None);
}

#[test]
fn a_value_less_its_quotient_times_the_divisor_is_a_remainder() {
    // The column in a group of tiles, `t - t / (2 * n) * 2 * n`:
    // intervals of `t` and of the product apart go below zero.
    let (t, n) = (Int::var("t"), Int::var("n"));
    let group = Int::from(2).mul(&n);
    let col = t.sub(&Int::from(2).mul(&t.div(&group)).mul(&n));
    let env = |v: &str| match v {
        "t" => Some((0, 1000)),
        "n" => Some((3, 4)),
        _ => None,
    };
    assert_eq!(col.range(&env), Some((0, 7)));
    let point = |v: &str| {
        if v == "t" {
            Some((11, 13))
        } else {
            Some((4, 4))
        }
    };
    assert_eq!(col.range(&point), Some((3, 5)));
    // A product of other factors is not a multiple of the quotient.
    let off = t.sub(&Int::from(3).mul(&t.div(&group)).mul(&n));
    assert_eq!(off.range(&env), Some((-1992, 1000)));
    let other = t.sub(&Int::from(2).mul(&Int::var("u").div(&group)).mul(&n));
    assert_eq!(
        other.range(&|v| env(v).or(Some((0, 1000)))),
        Some((-1328, 1000))
    );
    // Constants grouped otherwise: x / (6 n) * 2 * 3 * n is a multiple.
    let six = Int::from(6).mul(&n);
    let col6 = t.sub(&Int::from(2).mul(&t.div(&six)).mul(&Int::from(3).mul(&n)));
    assert_eq!(col6.range(&env), Some((0, 23)));
    // One factor too many: x / n * n * n is not.
    let square = t.sub(&t.div(&n).mul(&n).mul(&n));
    assert_ne!(square.range(&env).map(|r| r.0), Some(0));
    // A dividend that may be negative: the remainder truncates, taking
    // its sign; a divisor that may be zero: no range.
    let negative = |v: &str| if v == "t" { Some((-1, 5)) } else { env(v) };
    assert_eq!(col.range(&negative), Some((-1, 5)));
    let zero = |v: &str| if v == "n" { Some((0, 4)) } else { env(v) };
    assert_eq!(col.range(&zero), None);
}

#[test]
fn symbolic_values_simplify_and_evaluate() {
    let m = Int::var("M");
    let x = m.mul(&Int::from(128));
    assert_eq!(x.to_string(), "(128*M)");
    assert_eq!(x.div(&Int::from(128)), m);
    assert_eq!(x.rem(&Int::from(64)), Int::from(0));
    assert_eq!(Int::from(1).ceil_div(&m), Int::from(1));
    let t = m.ceil_div(&Int::from(128));
    assert_eq!(t.to_string(), "ceil_div(M,128)");
    let env = |n: &str| (n == "M").then_some(1000);
    assert_eq!(t.eval(&env), Some(8));
    assert_eq!(m.min(&Int::from(128)).eval(&env), Some(128));
}

#[test]
fn substitution_folds_what_becomes_static() {
    let k = Int::var("k");
    let x = k.mul(&Int::from(8)).add(&Int::var("thread.x"));
    assert_eq!(x.substitute("k", 3).to_string(), "(24+thread.x)");
    assert_eq!(
        k.mul(&Int::from(8)).rem(&Int::from(5)).substitute("k", 2),
        Int::from(1)
    );
    assert_eq!(x.substitute("j", 3), x);
}

/// A guard's cap replaces each part it names once, the first pair
/// that matches winning, nothing inside a replacement replaced again:
/// `i + j * M` under `i < M && j < N` is bounded by the guards.
#[test]
fn parts_are_replaced_once_each() {
    let (m, n) = (Int::var("M"), Int::var("N"));
    let i = Int::var("block.x")
        .mul(&Int::from(32))
        .add(&Int::var("thread.x"));
    let j = Int::var("block.y");
    let index = i.add(&j.mul(&m));
    let one = Int::from(1);
    let caps = [
        (i.clone(), i.min(&m.sub(&one))),
        (j.clone(), j.min(&n.sub(&one))),
        (m.clone(), m.max(&i.add(&one))),
    ];
    let capped = index.replace_parts(&caps[..2]);
    let env = |v: &str| match v {
        "M" => Some((40, 40)),
        "N" => Some((33, 33)),
        "block.x" => Some((0, 1)),
        "block.y" => Some((0, 40)),
        "thread.x" => Some((0, 31)),
        _ => None,
    };
    assert_eq!(capped.range(&env), Some((0, 40 * 33 - 1)));
    // Where a part is replaced, the replacement's own parts are not.
    assert_eq!(i.replace_parts(&caps), caps[0].1);
    assert_eq!(index.replace_parts(&[]), index);
    // A guard written with its terms in another order caps the index.
    let swapped = Int::var("thread.x").add(&Int::var("block.x").mul(&Int::from(32)));
    let cap = [(swapped.clone(), swapped.min(&m.sub(&one)))];
    assert_eq!(i.replace_parts(&cap), cap[0].1);
}
