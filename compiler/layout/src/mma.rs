//! MMA atoms and tiled MMAs as layouts (CuTe's `MMA_Traits` and
//! `make_tiled_mma`).
//!
//! In: an atom's name (CuTe's, e.g. `SM80_16x8x16_F32BF16BF16F32_TN`) and
//! the warps that repeat it over (M, N, K). Out: thread-value layouts
//! `(thread, value) -> index` into the column-major (M, K), (N, K) and
//! (M, N) tiles the tiled MMA covers. Partitioning a tensor for an operand
//! is composition with these layouts, as for any other thread layout; the
//! same layouts tell the CPU executor which lane holds which element.

use crate::composition::composition;
use crate::condition::Conditions;
use crate::elem::Elem;
use crate::error::{AlgebraError, Result};
use crate::layout::Layout;
use crate::tuple::IntTuple;

/// The operands of an MMA.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operand {
    A,
    B,
    C,
}

/// One warp-wide tensor-core instruction, by its layouts (CuTe's
/// `MMA_Traits`): `threads` lanes compute a (m, n, k) product.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MmaAtom {
    pub name: &'static str,
    pub m: i64,
    pub n: i64,
    pub k: i64,
    /// The element type of A and B.
    pub ab: Elem,
    /// The accumulator's element type.
    pub c: Elem,
    pub threads: i64,
    /// A warpgroup's asynchronous wgmma (SM90), B read from shared memory
    /// through a descriptor; else a warp's mma.sync, A and B in registers.
    pub warpgroup: bool,
    /// A too is read from shared memory (the `_SS` wgmma atoms); the
    /// `_RS` ones take it from registers, as mma.sync does.
    pub shared_a: bool,
    /// `(thread, value) -> m + M*k` over (M, K).
    pub a: Layout,
    /// `(thread, value) -> n + N*k` over (N, K).
    pub b: Layout,
    /// `(thread, value) -> m + M*n` over (M, N).
    pub c_tv: Layout,
}

/// `(shape):(stride)` of static values.
fn tv(shape: IntTuple, stride: IntTuple) -> Layout {
    Layout::new(shape, stride).expect("an atom's layouts are congruent")
}

fn t(v: &[IntTuple]) -> IntTuple {
    IntTuple::Tuple(v.to_vec())
}

fn i(v: i64) -> IntTuple {
    IntTuple::from(v)
}

impl MmaAtom {
    /// The warp-wide (mma.sync) atoms tilec knows, by CuTe's names.
    pub const WARP_NAMES: &'static [&'static str] = &[
        "SM80_16x8x16_F32BF16BF16F32_TN",
        "SM80_16x8x16_F32F16F16F32_TN",
    ];
    /// The warpgroup (wgmma) atoms, by CuTe's names with N for any
    /// multiple of 8 from 8 to 256: A and B from shared memory (`_SS`), or
    /// A from registers (`_RS`).
    pub const WARPGROUP_NAMES: &'static [&'static str] = &[
        "SM90_64xNx16_F32BF16BF16_SS",
        "SM90_64xNx16_F32F16F16_SS",
        "SM90_64xNx16_F32BF16BF16_RS",
        "SM90_64xNx16_F32F16F16_RS",
    ];

    /// Every atom name, for messages.
    pub fn names() -> Vec<&'static str> {
        let mut v = Self::WARP_NAMES.to_vec();
        v.extend(Self::WARPGROUP_NAMES);
        v
    }

    /// The atom of CuTe's name (mma_traits_sm80.hpp, mma_traits_sm90_gmma.hpp).
    pub fn named(name: &str) -> Option<MmaAtom> {
        if let Some(rest) = name.strip_prefix("SM90_64x") {
            return Self::warpgroup(rest);
        }
        let ab = match name {
            "SM80_16x8x16_F32BF16BF16F32_TN" => Elem::Bf16,
            "SM80_16x8x16_F32F16F16F32_TN" => Elem::F16,
            _ => return None,
        };
        let name = Self::WARP_NAMES.iter().find(|n| **n == name)?;
        // A: ((4,8),(2,2,2)):((32,1),(16,8,128)); B: ((4,8),(2,2)):((16,1),(8,64));
        // C: ((4,8),(2,2)):((32,1),(16,8)).
        let lanes = t(&[i(4), i(8)]);
        Some(MmaAtom {
            name,
            m: 16,
            n: 8,
            k: 16,
            ab,
            c: Elem::F32,
            threads: 32,
            warpgroup: false,
            shared_a: false,
            a: tv(
                t(&[lanes.clone(), t(&[i(2), i(2), i(2)])]),
                t(&[t(&[i(32), i(1)]), t(&[i(16), i(8), i(128)])]),
            ),
            b: tv(
                t(&[lanes.clone(), t(&[i(2), i(2)])]),
                t(&[t(&[i(16), i(1)]), t(&[i(8), i(64)])]),
            ),
            c_tv: tv(
                t(&[lanes, t(&[i(2), i(2)])]),
                t(&[t(&[i(32), i(1)]), t(&[i(16), i(8)])]),
            ),
        })
    }

    /// `SM90_64x{N}x16_F32{T}{T}_SS` or `_RS` (`rest` after `SM90_64x`): a
    /// warpgroup's wgmma. An operand in shared memory is one every thread
    /// of the warpgroup "holds" whole (stride 0 over threads), as CuTe's
    /// `ABLayout` says, its major following from its layout. C is
    /// `((4,8,4),(2,2,N/8)):((128,1,16),(64,8,512))` over (64, N), and an
    /// A in registers (`_RS`) is laid out as C of a 64 x 16 tile (CuTe's
    /// `ALayout_64x16`; the PTX ISA's register fragment of wgmma's A: warp
    /// w has rows 16w.., each lane mma.sync's A values of them), which
    /// lets a product's accumulators, converted, be the next one's A.
    fn warpgroup(rest: &str) -> Option<MmaAtom> {
        let (n, types) = rest.split_once("x16_F32")?;
        let n: i64 = n.parse().ok()?;
        if !(8..=256).contains(&n) || n % 8 != 0 {
            return None;
        }
        let (ab, shared_a) = match types {
            "BF16BF16_SS" => (Elem::Bf16, true),
            "F16F16_SS" => (Elem::F16, true),
            "BF16BF16_RS" => (Elem::Bf16, false),
            "F16F16_RS" => (Elem::F16, false),
            _ => return None,
        };
        let whole = |rows: i64| {
            tv(
                t(&[i(128), t(&[i(rows), i(16)])]),
                t(&[i(0), t(&[i(1), i(rows)])]),
            )
        };
        let fragment = |cols: i64| {
            tv(
                t(&[t(&[i(4), i(8), i(4)]), t(&[i(2), i(2), i(cols / 8)])]),
                t(&[t(&[i(128), i(1), i(16)]), t(&[i(64), i(8), i(512)])]),
            )
        };
        // The name keeps the pattern; `full_name` spells N out.
        let name = format!("SM90_64xNx16_F32{types}");
        Some(MmaAtom {
            name: Self::WARPGROUP_NAMES.iter().find(|x| **x == name)?,
            m: 64,
            n,
            k: 16,
            ab,
            c: Elem::F32,
            threads: 128,
            warpgroup: true,
            shared_a,
            a: if shared_a { whole(64) } else { fragment(16) },
            b: whole(n),
            c_tv: fragment(n),
        })
    }

    /// CuTe's name of the atom, N spelled out for the SM90 ones.
    pub fn full_name(&self) -> String {
        self.name.replace("xNx", &format!("x{}x", self.n))
    }

    /// Values per thread of an operand.
    pub fn values(&self, op: Operand) -> i64 {
        let l = self.tv(op);
        l.size().as_static().unwrap_or(0) / self.threads
    }

    pub fn tv(&self, op: Operand) -> &Layout {
        match op {
            Operand::A => &self.a,
            Operand::B => &self.b,
            Operand::C => &self.c_tv,
        }
    }

    /// The operand's (rows, columns): (M, K), (N, K) or (M, N).
    pub fn extent(&self, op: Operand) -> (i64, i64) {
        match op {
            Operand::A => (self.m, self.k),
            Operand::B => (self.n, self.k),
            Operand::C => (self.m, self.n),
        }
    }

    /// `(lane, value) -> (row, column)` of the operand's tile: which
    /// element a lane holds as its `value`-th.
    pub fn element(&self, op: Operand, lane: i64, value: i64) -> (i64, i64) {
        let index = self
            .tv(op)
            .at(lane + self.threads * value)
            .ok()
            .and_then(|x| x.as_static())
            .expect("static atom layouts");
        let rows = self.extent(op).0;
        (index % rows, index / rows)
    }
}

/// A shared -> register copy atom that a copy may demand (CuTe's
/// `SM75_U32x4_LDSM_N` and friends): ldmatrix of `count` 8x8 matrices of
/// 16-bit elements, transposed or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LdMatrixAtom {
    pub name: &'static str,
    pub count: u32,
    pub trans: bool,
}

impl LdMatrixAtom {
    pub const ALL: &'static [LdMatrixAtom] = &[
        LdMatrixAtom {
            name: "SM75_U32x1_LDSM_N",
            count: 1,
            trans: false,
        },
        LdMatrixAtom {
            name: "SM75_U32x2_LDSM_N",
            count: 2,
            trans: false,
        },
        LdMatrixAtom {
            name: "SM75_U32x4_LDSM_N",
            count: 4,
            trans: false,
        },
        LdMatrixAtom {
            name: "SM75_U16x2_LDSM_T",
            count: 1,
            trans: true,
        },
        LdMatrixAtom {
            name: "SM75_U16x4_LDSM_T",
            count: 2,
            trans: true,
        },
        LdMatrixAtom {
            name: "SM75_U16x8_LDSM_T",
            count: 4,
            trans: true,
        },
    ];

    pub fn named(name: &str) -> Option<LdMatrixAtom> {
        Self::ALL.iter().copied().find(|a| a.name == name)
    }
}

/// An atom repeated over warps (CuTe's `make_tiled_mma(atom, layout)`,
/// without a permutation): `warps` is the column-major warp grid over
/// (M, N, K), K always 1 (warps along K would each hold partial sums of
/// one C tile), so the tile is (m*WM, n*WN, k) and the block has
/// `threads * WM * WN` threads, warp `w` at coordinate `w` of the grid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TiledMma {
    pub atom: MmaAtom,
    pub warps: [i64; 3],
}

impl TiledMma {
    pub fn new(atom: MmaAtom, warps: [i64; 3]) -> Result<TiledMma> {
        let [wm, wn, wk] = warps;
        // A block has at most 1024 threads.
        let most = 1024 / atom.threads;
        let unit = if atom.threads == 128 {
            "warpgroups"
        } else {
            "warps"
        };
        if warps.iter().any(|w| !(1..=most).contains(w)) || wm * wn * wk > most {
            return Err(AlgebraError::Invalid {
                op: "make_tiled_mma",
                why: format!(
                    "the grid ({wm}, {wn}, {wk}) needs 1 to {most} {unit}, each extent at least 1"
                ),
            });
        }
        // Warps along K would each hold partial sums of the same C tile,
        // which would need a reduction after the gemm.
        if wk != 1 {
            return Err(AlgebraError::Invalid {
                op: "make_tiled_mma",
                why: format!(
                    "the warp grid ({wm}, {wn}, {wk}) splits K over warps, whose partial sums of C nothing adds up; use (WARPS_M, WARPS_N)"
                ),
            });
        }
        Ok(TiledMma { atom, warps })
    }

    pub fn threads(&self) -> i64 {
        self.atom.threads * self.warps.iter().product::<i64>()
    }

    /// The tile (M, N, K) one step of the tiled MMA covers.
    pub fn tile(&self) -> [i64; 3] {
        [
            self.atom.m * self.warps[0],
            self.atom.n * self.warps[1],
            self.atom.k * self.warps[2],
        ]
    }

    /// The operand's tile (rows, columns).
    pub fn extent(&self, op: Operand) -> (i64, i64) {
        let [m, n, k] = self.tile();
        match op {
            Operand::A => (m, k),
            Operand::B => (n, k),
            Operand::C => (m, n),
        }
    }

    /// `(thread, value) -> row + rows*column` over the operand's tile:
    /// the atom's layout placed in the bigger tile (composition with its
    /// embedding), the lanes' mode followed by the warp grid, whose
    /// strides step by whole atoms (0 along the dimension the operand lacks).
    pub fn tv(&self, op: Operand) -> Layout {
        let (ar, ac) = self.atom.extent(op);
        let (rows, _) = self.extent(op);
        let embed = tv(t(&[i(ar), i(ac)]), t(&[i(1), i(rows)]));
        let placed = composition(&embed, self.atom.tv(op), &mut Conditions::new())
            .expect("an atom's tile embeds in the tiled tile");
        let (lanes, values) = (
            placed.mode(0).expect("thread mode"),
            placed.mode(1).expect("value mode"),
        );
        let [wm, wn, wk] = self.warps;
        let (sm, sn, sk) = match op {
            Operand::A => (ar, 0, ac * rows),
            Operand::B => (0, ar, ac * rows),
            Operand::C => (ar, ac * rows, 0),
        };
        let warps = tv(t(&[i(wm), i(wn), i(wk)]), t(&[i(sm), i(sn), i(sk)]));
        let thread = tv(
            t(&[lanes.shape().clone(), warps.shape().clone()]),
            t(&[lanes.stride().clone(), warps.stride().clone()]),
        );
        tv(
            t(&[thread.shape().clone(), values.shape().clone()]),
            t(&[thread.stride().clone(), values.stride().clone()]),
        )
    }
}

impl std::fmt::Display for TiledMma {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [wm, wn, wk] = self.warps;
        let [m, n, k] = self.tile();
        write!(
            f,
            "make_tiled_mma({}, ({wm},{wn},{wk})): tile ({m},{n},{k}), {} threads",
            self.atom.full_name(),
            self.threads()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The wgmma atoms' C layouts cover (64, N) once, as the PTX ISA's
    /// figure for m64nNk16 places them; A and B are whole tiles per thread.
    #[test]
    fn warpgroup_atoms_follow_the_ptx_isa() {
        for n in [8, 64, 136, 256] {
            let a = MmaAtom::named(&format!("SM90_64x{n}x16_F32BF16BF16_SS")).unwrap();
            assert_eq!(a.full_name(), format!("SM90_64x{n}x16_F32BF16BF16_SS"));
            assert_eq!(a.values(Operand::C), n / 2);
            // Every thread sees all of A and B.
            assert_eq!(a.values(Operand::A), 64 * 16);
            let mut seen = vec![0; (64 * n) as usize];
            for t in 0..128 {
                for v in 0..n / 2 {
                    let (r, c) = a.element(Operand::C, t, v);
                    seen[(r + 64 * c) as usize] += 1;
                }
                // The ISA's figure for wgmma .m64nNk16 D: warp w has rows
                // 16w + l/4 and + 8; value 4j + 2h + x is column 8j + 2(l%4) + x.
                let (w, l) = (t / 32, t % 32);
                assert_eq!(a.element(Operand::C, t, 0), (16 * w + l / 4, 2 * (l % 4)));
                assert_eq!(
                    a.element(Operand::C, t, n / 2 - 1),
                    (16 * w + l / 4 + 8, n - 8 + 2 * (l % 4) + 1)
                );
            }
            assert!(seen.iter().all(|s| *s == 1), "N = {n}");
        }
        for bad in [
            "SM90_64x4x16_F32BF16BF16_SS",
            "SM90_64x264x16_F32BF16BF16_SS",
            "SM90_64x12x16_F32F16F16_SS",
        ] {
            assert!(MmaAtom::named(bad).is_none(), "{bad}");
        }
    }

    /// An `_RS` atom's A in registers: each of the warpgroup's 128 threads
    /// holds 8 values, every element of the 64 x 16 tile once, warp w the
    /// rows 16w.. as mma.sync's A (the PTX ISA's wgmma register fragment
    /// for A); laid out as the C fragment of a 64 x 16 tile, so that
    /// converted accumulators are the next product's A.
    #[test]
    fn register_a_of_rs_atoms_is_mma_sync_a_per_warp() {
        for (ss, rs) in [
            (
                "SM90_64x64x16_F32BF16BF16_SS",
                "SM90_64x64x16_F32BF16BF16_RS",
            ),
            ("SM90_64x128x16_F32F16F16_SS", "SM90_64x128x16_F32F16F16_RS"),
        ] {
            let (ss, rs) = (MmaAtom::named(ss).unwrap(), MmaAtom::named(rs).unwrap());
            assert!(ss.shared_a && !rs.shared_a && rs.warpgroup);
            assert_eq!((rs.b.clone(), rs.c_tv.clone()), (ss.b, ss.c_tv));
            assert_eq!(rs.values(Operand::A), 8);
            let c16 = MmaAtom::named("SM90_64x16x16_F32BF16BF16_SS").unwrap();
            assert_eq!(rs.a, c16.c_tv);
            let mut seen = vec![0; 64 * 16];
            for t in 0..128 {
                let (w, l) = (t / 32, t % 32);
                for v in 0..8 {
                    let (r, k) = rs.element(Operand::A, t, v);
                    seen[(r + 64 * k) as usize] += 1;
                }
                assert_eq!(rs.element(Operand::A, t, 0), (16 * w + l / 4, 2 * (l % 4)));
                assert_eq!(
                    rs.element(Operand::A, t, 7),
                    (16 * w + l / 4 + 8, 2 * (l % 4) + 9)
                );
            }
            assert!(seen.iter().all(|s| *s == 1));
            assert_eq!(
                rs.full_name(),
                rs.name.replace("xNx", &format!("x{}x", rs.n))
            );
        }
        assert!(MmaAtom::named("SM90_64x64x16_F32BF16F16_RS").is_none());
    }

    /// Every element of each operand's tile is held by exactly one
    /// (lane, value) of the atom, and the C layout agrees with the PTX ISA's
    /// figure for m16n8k16: lane l holds rows l/4 and l/4 + 8, columns
    /// 2*(l%4) and 2*(l%4) + 1.
    #[test]
    fn atoms_cover_their_tiles_once() {
        for name in MmaAtom::WARP_NAMES {
            let a = MmaAtom::named(name).unwrap();
            for op in [Operand::A, Operand::B, Operand::C] {
                let (r, c) = a.extent(op);
                let mut seen = vec![0; (r * c) as usize];
                for lane in 0..32 {
                    for v in 0..a.values(op) {
                        let (x, y) = a.element(op, lane, v);
                        seen[(x + r * y) as usize] += 1;
                    }
                }
                assert!(seen.iter().all(|s| *s == 1), "{name} {op:?}");
            }
            for lane in 0..32 {
                assert_eq!(a.element(Operand::C, lane, 0), (lane / 4, 2 * (lane % 4)));
                assert_eq!(
                    a.element(Operand::C, lane, 3),
                    (lane / 4 + 8, 2 * (lane % 4) + 1)
                );
                // A: a0 holds (row l/4, k 2*(l%4)), a3 (row l/4 + 8, k 2*(l%4) + 9).
                assert_eq!(a.element(Operand::A, lane, 0), (lane / 4, 2 * (lane % 4)));
                assert_eq!(
                    a.element(Operand::A, lane, 7),
                    (lane / 4 + 8, 2 * (lane % 4) + 9)
                );
                // B: b0 holds (n l/4, k 2*(l%4)), b1's second half (n l/4, k 2*(l%4) + 9).
                assert_eq!(a.element(Operand::B, lane, 0), (lane / 4, 2 * (lane % 4)));
                assert_eq!(
                    a.element(Operand::B, lane, 3),
                    (lane / 4, 2 * (lane % 4) + 9)
                );
            }
        }
    }

    #[test]
    fn tiled_layouts_cover_their_tiles_once() {
        let atom = MmaAtom::named("SM80_16x8x16_F32BF16BF16F32_TN").unwrap();
        let tiled = TiledMma::new(atom, [2, 2, 1]).unwrap();
        assert_eq!(tiled.tile(), [32, 16, 16]);
        assert_eq!(
            tiled.tv(Operand::C).to_string(),
            "(((4,8),(2,2,1)),(2,2)):(((64,1),(16,256,0)),(32,8))"
        );
        for op in [Operand::A, Operand::B, Operand::C] {
            let l = tiled.tv(op);
            let (r, c) = tiled.extent(op);
            let mut seen = vec![0; (r * c) as usize];
            for x in 0..l.size().as_static().unwrap() {
                seen[l.at(x).unwrap().as_static().unwrap() as usize] += 1;
            }
            // A is shared by the two warps along N, B by the two along M.
            let copies = match op {
                Operand::A | Operand::B => 2,
                Operand::C => 1,
            };
            assert!(seen.iter().all(|s| *s == copies), "{op:?}");
        }
    }
}
