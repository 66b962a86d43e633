//! The worked examples of the seed documents, as unit tests.

use tilec_layout::*;

fn l(shape: IntTuple, stride: IntTuple) -> Layout {
    Layout::new(shape, stride).unwrap()
}

fn offsets(x: &Layout) -> Vec<i64> {
    let n = x.size().as_static().unwrap();
    (0..n).map(|i| x.at_static(i).unwrap()).collect()
}

#[test]
fn row_and_column_major_4x3() {
    let row = l(tup!(4, 3), tup!(3, 1));
    let at = |x: &Layout, i, j| {
        x.eval(&Coord::Tuple(vec![Coord::from(i), Coord::from(j)]))
            .unwrap()
    };
    assert_eq!(at(&row, 2, 1), Int::from(7));
    // 6 unravels to (2,1), first mode fastest.
    assert_eq!(row.at_static(6), Some(7));
    assert_eq!(Layout::row_major(&tup!(4, 3)), row);
    assert_eq!(Layout::col_major(&tup!(4, 3)), l(tup!(4, 3), tup!(1, 4)));
}

#[test]
fn composition_of_the_documentation() {
    let a = l(tup!(6, 2), tup!(8, 2));
    let b = l(tup!(4, 3), tup!(3, 1));
    assert_eq!(offsets(&b), [0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11]);
    assert_eq!(offsets(&a), [0, 8, 16, 24, 32, 40, 2, 10, 18, 26, 34, 42]);
    let r = composition(&a, &b, &mut Conditions::new()).unwrap();
    assert_eq!(r.to_string(), "((2,2),3):((24,2),8)");
    assert_eq!(offsets(&r), [0, 24, 2, 26, 8, 32, 10, 34, 16, 40, 18, 42]);
}

#[test]
fn coalesce_of_a_costume() {
    let x = l(tup!((2, 3), 4), tup!((1, 2), 6));
    assert_eq!(x.coalesce().to_string(), "24:1");
}

#[test]
fn tiled_panel_and_its_values() {
    let x = l(tup!((2, 2), (2, 2)), tup!((1, 2), (4, 8)));
    // The seed's picture: row a + 2c, column b + 2d holds x(((a,b),(c,d))).
    let expected = [[0, 2, 8, 10], [1, 3, 9, 11], [4, 6, 12, 14], [5, 7, 13, 15]];
    for (a, b, c, d) in (0..16).map(|k| (k & 1, (k >> 1) & 1, (k >> 2) & 1, (k >> 3) & 1)) {
        let coord = Coord::Tuple(vec![
            Coord::Tuple(vec![Coord::from(a), Coord::from(b)]),
            Coord::Tuple(vec![Coord::from(c), Coord::from(d)]),
        ]);
        let v = x.eval(&coord).unwrap().as_static().unwrap();
        assert_eq!(v, expected[(a + 2 * c) as usize][(b + 2 * d) as usize]);
    }
    assert_eq!(x.coalesce().to_string(), "16:1");
}

#[test]
fn logical_divide_of_the_seed() {
    // A 6x4 column-major matrix cut into 3x2 tiles.
    let a = l(tup!(6, 4), tup!(1, 6));
    let tiler = Tiler::from_shape(&tup!(3, 2));
    let r = divide(&a, &tiler, Grouping::Logical, &mut Conditions::new()).unwrap();
    // Inside a tile: 1 down, 6 across; between tiles: 3 down, 12 across.
    assert_eq!(r.to_string(), "((3,2),(2,2)):((1,3),(6,12))");
}

#[test]
fn thread_value_layouts_of_the_seed() {
    let good = l(tup!(8, 4), tup!(1, 8));
    let bad = l(tup!(8, 4), tup!(4, 1));
    let step = |x: &Layout, v: i64| -> Vec<i64> {
        (0..8)
            .map(|t| {
                x.eval(&Coord::Tuple(vec![Coord::from(t), Coord::from(v)]))
                    .unwrap()
                    .as_static()
                    .unwrap()
            })
            .collect()
    };
    assert_eq!(step(&good, 0), [0, 1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(step(&bad, 0), [0, 4, 8, 12, 16, 20, 24, 28]);
}

#[test]
fn local_tile_of_sgemm_is_a_divide_then_a_slice() {
    // gA = local_tile(A, (128,128,8), (bx,by,_), step(1,X,1)) on A = (M,K):(1,M).
    let (m, k) = (Int::var("M"), Int::var("K"));
    let a = Layout::new(
        IntTuple::Tuple(vec![m.clone().into(), k.clone().into()]),
        IntTuple::Tuple(vec![1.into(), m.clone().into()]),
    )
    .unwrap();
    let mut conds = Conditions::new();
    let tiled = divide(
        &a,
        &Tiler::from_shape(&tup!(128, 8)),
        Grouping::Zipped,
        &mut conds,
    )
    .unwrap();
    assert_eq!(
        tiled.to_string(),
        "((128,8),(ceil_div(M,128),ceil_div(K,8))):((1,M),(128,(8*M)))"
    );
    let env = |n: &str| match n {
        "M" => Some(4096),
        "K" => Some(4096),
        _ => None,
    };
    let g_a = tiled
        .slice(&Coord::Tuple(vec![
            Coord::Under,
            Coord::Tuple(vec![Coord::from(2), Coord::Under]),
        ]))
        .unwrap();
    assert_eq!(g_a.to_string(), "((128,8),ceil_div(K,8)):((1,M),(8*M))");
    assert_eq!(g_a.size().eval(&env), Some(128 * 8 * 512));
}

/// `(3, 5):(K, 1)` (static shape, run-time row stride) under a 2x2
/// row-major tile: each mode of the tile walks the rows apart and the
/// results are added, giving `(2, 2):(2K, K)`, whose last element is 3K;
/// but the tile's element 3 is `a(3) = 1` (row 3 is row 0 of the next
/// column). The walk facts alone held here, and the wrong layout was
/// returned; the no-carry fact refuses it. With four rows it is right.
#[test]
fn a_composition_whose_modes_would_carry_is_refused() {
    let k = || IntTuple::Int(Int::var("K"));
    let b = l(tup!(2, 2), tup!(2, 1));
    let a3 = l(tup!(3, 5), IntTuple::Tuple(vec![k(), IntTuple::from(1)]));
    assert!(composition(&a3, &b, &mut Conditions::new()).is_err());
    let a4 = l(tup!(4, 5), IntTuple::Tuple(vec![k(), IntTuple::from(1)]));
    let r = composition(&a4, &b, &mut Conditions::new()).unwrap();
    assert_eq!(r.to_string(), "(2,2):((2*K),K)");
}
