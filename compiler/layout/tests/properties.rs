//! Property tests: every operation against its post-condition, over random
//! static layouts; and the symbolic algebra against the static one.

use proptest::prelude::*;
use tilec_layout::*;

/// A random nested shape with small extents, and strides that are either
/// a permuted compact layout (injective) or arbitrary small values.
fn layout_strategy() -> impl Strategy<Value = Layout> {
    let leaf = prop_oneof![Just(1i64), Just(2), Just(3), Just(4), Just(6), Just(8)];
    let shape = prop::collection::vec(prop::collection::vec(leaf, 1..3), 1..4);
    (shape, any::<u64>(), any::<bool>()).prop_map(|(modes, seed, compact)| {
        let leaves: Vec<i64> = modes.iter().flatten().copied().collect();
        let mut order: Vec<usize> = (0..leaves.len()).collect();
        let mut s = seed;
        for i in (1..order.len()).rev() {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            order.swap(i, (s >> 33) as usize % (i + 1));
        }
        let mut strides = vec![0i64; leaves.len()];
        let mut cur = 1;
        for &i in &order {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            strides[i] = if compact {
                cur
            } else {
                [0, 1, 2, 3, 4, 8][(s >> 40) as usize % 6]
            };
            cur *= leaves[i];
        }
        let mut it = strides.into_iter();
        let shape = IntTuple::Tuple(
            modes
                .iter()
                .map(|m| IntTuple::Tuple(m.iter().map(|&x| x.into()).collect()))
                .collect(),
        );
        let stride = shape.unflatten_like(&mut it.by_ref().map(Int::Static));
        Layout::new(shape, stride).unwrap()
    })
}

/// A random integer expression over the names `a`, `b` and `c` and small
/// constants: every operation, the remainder in the form `x - x / d * d`
/// with its product in either order, and `x - x % d`.
fn int_strategy() -> impl Strategy<Value = Int> {
    let leaf = prop_oneof![
        (-3i64..10).prop_map(Int::from),
        prop::sample::select(vec!["a", "b", "c"]).prop_map(Int::var),
    ];
    leaf.prop_recursive(4, 32, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone(), 0..8u8).prop_map(|(x, y, op)| match op {
                0 => x.add(&y),
                1 => x.sub(&y),
                2 => x.mul(&y),
                3 => x.div(&y),
                4 => x.rem(&y),
                5 => x.min(&y),
                6 => x.max(&y),
                _ => x.ceil_div(&y),
            }),
            (inner.clone(), inner, 0..3u8).prop_map(|(x, d, form)| {
                let q = x.div(&d);
                match form {
                    0 => x.sub(&d.mul(&q)),
                    1 => x.sub(&q.mul(&d)),
                    _ => x.sub(&x.rem(&d)),
                }
            }),
        ]
    })
}

fn size(l: &Layout) -> i64 {
    l.size().as_static().unwrap()
}

/// Sorted by stride, every mode of `filter(l)` starts at a multiple of the
/// span the modes below it cover.
fn gaps_divide(l: &Layout) -> bool {
    let f = l.filter();
    let mut modes: Vec<(i64, i64)> = f
        .shape()
        .leaves()
        .iter()
        .zip(f.stride().leaves())
        .map(|(s, d)| (d.as_static().unwrap(), s.as_static().unwrap()))
        .collect();
    modes.sort();
    let mut covered = 1;
    modes.iter().all(|&(d, s)| {
        let ok = d % covered == 0;
        covered = d * s;
        ok
    })
}

fn injective(l: &Layout) -> bool {
    let mut seen = std::collections::HashSet::new();
    (0..size(l)).all(|i| seen.insert(l.at_static(i).unwrap()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn plain_integer_evaluation_is_the_layout_function(a in layout_strategy()) {
        // Inside the domain, past it and below it (negative strides send
        // compositions there): the same offsets as the symbolic evaluation.
        let s = a.to_static().unwrap();
        let n = size(&a);
        for i in -n..2 * n {
            prop_assert_eq!(s.at(i), a.at_static(i), "index {}", i);
        }
        // Stepping through the domain and past it gives the same offsets.
        for (i, o) in (0..2 * n).zip(s.offsets()) {
            prop_assert_eq!(o, s.at(i), "step {}", i);
        }
    }

    #[test]
    fn coalesce_keeps_the_function(a in layout_strategy()) {
        let c = a.coalesce();
        prop_assert!(c.depth() <= 1);
        prop_assert_eq!(size(&c), size(&a));
        for i in 0..size(&a) {
            prop_assert_eq!(c.at_static(i), a.at_static(i));
        }
        // Coalescing twice changes nothing.
        prop_assert_eq!(c.coalesce(), c);
    }

    #[test]
    fn filter_keeps_the_image(a in layout_strategy()) {
        let f = a.filter();
        let img = |l: &Layout| (0..size(l)).map(|i| l.at_static(i).unwrap()).collect::<std::collections::BTreeSet<_>>();
        prop_assert_eq!(img(&f), img(&a));
    }

    #[test]
    fn composition_is_function_composition(a in layout_strategy(), b in layout_strategy()) {
        if let Ok(r) = composition(&a, &b, &mut Conditions::new()) {
            prop_assert!(b.shape().compatible(r.shape()));
            for i in 0..size(&b) {
                prop_assert_eq!(r.at_static(i), a.at_static(b.at_static(i).unwrap()));
            }
        }
    }

    #[test]
    fn complement_is_disjoint_and_ordered(a in layout_strategy(), m in 1i64..200) {
        match complement(&a, &IntTuple::from(m), &mut Conditions::new()) {
            Ok(c) => {
                prop_assert!(injective(&a.filter()));
                let image: std::collections::HashSet<i64> = (0..size(&a)).map(|i| a.at_static(i).unwrap()).collect();
                for i in 1..size(&c) {
                    prop_assert!(!image.contains(&c.at_static(i).unwrap()));
                    prop_assert!(c.at_static(i) > c.at_static(i - 1));
                }
                // Together with A, it is a bijection onto its cotarget when the sizes
                // match and A's gaps are whole multiples of what lies below them (CuTe
                // divides strides by the span covered so far, rounding down: for
                // (8,3):(4,1) it finds no gap at 3 and returns 1:0, as CuTe does).
                let both = Layout::concat(&[a.clone(), c.clone()]);
                if size(&a.filter()) * size(&c) == m && injective(&both) && gaps_divide(&a) {
                    let all: std::collections::BTreeSet<i64> = (0..size(&both)).map(|i| both.at_static(i).unwrap()).collect();
                    prop_assert_eq!(all, (0..m).collect());
                }
            }
            Err(AlgebraError::NotInjective { .. }) => prop_assert!(!injective(&a.filter())),
            Err(_) => {}
        }
    }

    #[test]
    fn right_inverse_inverts_on_its_domain(a in layout_strategy()) {
        let r = right_inverse(&a);
        for i in 0..size(&r) {
            prop_assert_eq!(a.at_static(r.at_static(i).unwrap()), Some(i));
        }
    }

    #[test]
    fn left_inverse_inverts_injective_layouts(a in layout_strategy()) {
        match left_inverse(&a) {
            Ok(l) if injective(&a) => {
                for i in 0..size(&a) {
                    prop_assert_eq!(l.at_static(a.at_static(i).unwrap()), Some(i));
                }
            }
            // Two coordinates at one offset (stride-0 modes aside): no inverse.
            Err(AlgebraError::NotInjective { .. }) => prop_assert!(!injective(&a.filter())),
            _ => {}
        }
    }

    #[test]
    fn divide_tiles_then_lists_the_tiles(a in layout_strategy(), b in layout_strategy()) {
        let mut conds = Conditions::new();
        if let Ok(d) = divide(&a, &Tiler::Layout(b.clone()), Grouping::Logical, &mut conds) {
            // The first mode of A / B is A o B.
            let ab = composition(&a, &b, &mut conds).unwrap();
            prop_assert_eq!(d.mode(0).unwrap(), ab);
            // The second is A o B*, B* the complement of B in A's coalesced shape.
            let rest = complement(&b, a.coalesce().shape(), &mut conds).unwrap();
            prop_assert_eq!(d.mode(1).unwrap(), composition(&a, &rest, &mut conds).unwrap());
        }
    }

    #[test]
    fn product_repeats_the_block(a in layout_strategy(), b in layout_strategy()) {
        if let Ok(p) = product(&a, &Tiler::Layout(b.clone()), Grouping::Logical, &mut Conditions::new()) {
            prop_assert_eq!(p.mode(0).unwrap(), a.clone());
            prop_assert_eq!(size(&p), size(&a) * size(&b));
            prop_assert!(p.mode(1).unwrap().shape().compatible(b.shape()) || b.shape().compatible(p.mode(1).unwrap().shape()));
        }
    }

    #[test]
    fn symbolic_divide_agrees_with_static(m in 1i64..600, k in 1i64..300, bm in prop::sample::select(vec![1i64, 2, 4, 8, 16, 32, 128])) {
        // (M,K):(1,M) divided by (bm, 8) symbolically, then evaluated,
        // equals the same division done on static values.
        let sym = Layout::new(
            IntTuple::Tuple(vec![Int::var("M").into(), Int::var("K").into()]),
            IntTuple::Tuple(vec![1.into(), Int::var("M").into()]),
        ).unwrap();
        let stat = Layout::new(IntTuple::Tuple(vec![m.into(), k.into()]), IntTuple::Tuple(vec![1.into(), m.into()])).unwrap();
        let tiler = Tiler::from_shape(&IntTuple::Tuple(vec![bm.into(), 8.into()]));
        let mut conds = Conditions::new();
        let ds = divide(&sym, &tiler, Grouping::Zipped, &mut conds).unwrap();
        let dt = divide(&stat, &tiler, Grouping::Zipped, &mut Conditions::new()).unwrap();
        let env = move |n: &str| match n { "M" => Some(m), "K" => Some(k), _ => None };
        prop_assert_eq!(ds.size().eval(&env), dt.size().as_static());
        for i in (0..size(&dt)).step_by(7) {
            prop_assert_eq!(ds.at(i).unwrap().eval(&env), dt.at_static(i));
        }
        // Whatever the symbolic divide needed must hold for these extents.
        prop_assert!(conds.list.iter().all(|c| c.fact.eval(&env) == Some(true)));
    }

    #[test]
    fn an_expressions_range_holds_every_value_it_takes(
        e in int_strategy(),
        lows in prop::array::uniform3(-3i64..6),
        widths in prop::array::uniform3(0i64..6),
    ) {
        // The interval rules the runtime's launch proof rests on: wherever
        // `range` answers, every point of the names' ranges evaluates
        // inside it (or not at all: a division by zero, an overflow).
        let names = ["a", "b", "c"];
        let ranges = |n: &str| {
            let i = names.iter().position(|&m| m == n)?;
            Some((lows[i], lows[i] + widths[i]))
        };
        if let Some((lo, hi)) = e.range(&ranges) {
            for a in lows[0]..=lows[0] + widths[0] {
                for b in lows[1]..=lows[1] + widths[1] {
                    for c in lows[2]..=lows[2] + widths[2] {
                        let at = |n: &str| Some([a, b, c][names.iter().position(|&m| m == n)?]);
                        if let Some(v) = e.eval(&at) {
                            prop_assert!(lo <= v && v <= hi, "{} = {} at a={} b={} c={}, outside {}..={}", e, v, a, b, c, lo, hi);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_fact_that_holds_throughout_holds_at_every_point(
        m in 1i64..2000, tile in 1i64..300, blocks in 1i64..20, k in 1i64..100
    ) {
        // The runtime's proof that a box of blocks has full tiles: wherever
        // it claims one, every block in the box satisfies the facts, and it
        // claims the largest box (`(tile * (b + 1)) <= M` up to b = M/tile - 1).
        let b = Int::var("block.x");
        let full = Fact::Le(b.add(&Int::from(1)).mul(&Int::from(tile)), Int::var("M"));
        let k_tiles = Fact::divides(&Int::from(8), &Int::var("K"));
        let both = Fact::All(vec![full.clone(), k_tiles.clone()]);
        let ranges = |n: &str| match n {
            "block.x" => Some((0, blocks - 1)),
            "M" => Some((m, m)),
            "K" => Some((k, k)),
            _ => None,
        };
        let everywhere = (0..blocks).all(|x| {
            both.eval(&|n: &str| match n { "block.x" => Some(x), "M" => Some(m), "K" => Some(k), _ => None })
                == Some(true)
        });
        prop_assert_eq!(both.holds_throughout(&ranges), everywhere);
        prop_assert_eq!(full.holds_throughout(&ranges), blocks <= m / tile);
        // A divisibility over a range of values is not claimed.
        let some_k = |n: &str| if n == "K" { Some((8, 16)) } else { None };
        prop_assert!(!k_tiles.holds_throughout(&some_k));
    }
}
