//! wgmma's shared-memory descriptors (CuTe's `GmmaDescriptor`,
//! mma_sm90_desc.hpp): how an operand tile in shared memory is described
//! to the tensor cores, derived from its layout.
//!
//! In: the tile's layout as offsets (rows x 16 k, in elements before the
//! buffer's swizzle) and the buffer's swizzle. Out: the descriptor's
//! fields (layout type, major, leading and stride byte offsets), or why the
//! layout is none of the canonical forms the hardware reads. The same
//! fields, read back by [`SmemDescriptor::address`], tell the CPU executor
//! where the hardware finds each element, so a wrong descriptor gives wrong
//! numbers there too.

use crate::swizzle::Swizzle;

/// The descriptor's layout type (bits 62..64): the swizzle, by the bytes
/// of a row it permutes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DescSwizzle {
    Interleave = 0,
    B128 = 1,
    B64 = 2,
    B32 = 3,
}

impl DescSwizzle {
    /// log2 of the 16-byte chunks in a swizzled row (CuTe's `B` of
    /// `Swizzle<B,4,3>` on bytes).
    fn bits(self) -> u32 {
        match self {
            DescSwizzle::Interleave => 0,
            DescSwizzle::B32 => 1,
            DescSwizzle::B64 => 2,
            DescSwizzle::B128 => 3,
        }
    }

    fn from_bits(bits: u32) -> Option<DescSwizzle> {
        [
            DescSwizzle::Interleave,
            DescSwizzle::B32,
            DescSwizzle::B64,
            DescSwizzle::B128,
        ]
        .into_iter()
        .find(|d| d.bits() == bits)
    }

    pub fn name(self) -> &'static str {
        match self {
            DescSwizzle::Interleave => "interleave",
            DescSwizzle::B128 => "sw128",
            DescSwizzle::B64 => "sw64",
            DescSwizzle::B32 => "sw32",
        }
    }

    pub fn named(name: &str) -> Option<DescSwizzle> {
        (0..4)
            .filter_map(DescSwizzle::from_bits)
            .find(|d| d.name() == name)
    }

    /// The bytes of one swizzled row (16 without a swizzle: a core
    /// matrix's row); the swizzle repeats every 8 rows.
    pub fn row_bytes(self) -> i64 {
        16 << self.bits()
    }

    /// The swizzle on byte addresses: bits 4.. XOR-ed with bits 7..
    pub fn apply(self, byte: i64) -> i64 {
        let mask = ((1 << self.bits()) - 1) << 4;
        byte ^ ((byte >> 3) & mask)
    }
}

/// Which dimension of the tile is contiguous: K (a "TN" operand) or
/// M/N (wgmma's transposed form).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Major {
    K,
    Mn,
}

/// The static fields of a descriptor; the start address is the operand's
/// own, added at run time. Offsets in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SmemDescriptor {
    pub swizzle: DescSwizzle,
    pub major: Major,
    /// Leading byte offset: between the 16-byte columns of K (K-major,
    /// no swizzle) or between the swizzle-wide groups of M/N (MN-major).
    pub lbo: i64,
    /// Stride byte offset: between groups of 8 rows (K-major) or of 8 k
    /// (MN-major).
    pub sbo: i64,
}

/// Rows of K a wgmma step reads.
pub const K: i64 = 16;

impl SmemDescriptor {
    /// The offset in bytes from the start of element `(row, k)`, before
    /// the swizzle: CuTe's canonical layouts (mma_traits_sm90_gmma.hpp,
    /// in units of 16-byte chunks `T`, `W` = the row's chunks):
    /// K-major `((8,n),(W,k)):((W,SBO),(1,LBO))`; MN-major swizzled
    /// `((W,n),(8,k)):((1,LBO),(W,SBO))`, and without a swizzle
    /// `((1,n),(8,k)):((1,SBO),(1,LBO))` (the two offsets trade places).
    pub fn offset(&self, elem_bytes: i64, row: i64, k: i64) -> i64 {
        let chunk = 16 / elem_bytes;
        let w = chunk << self.swizzle.bits();
        let e = elem_bytes;
        match (self.major, self.swizzle) {
            (Major::K, _) => {
                e * ((row % 8) * w + k % w) + (row / 8) * self.sbo + (k / w) * self.lbo
            }
            (Major::Mn, DescSwizzle::Interleave) => {
                e * (row % chunk + (k % 8) * chunk) + (row / chunk) * self.sbo + (k / 8) * self.lbo
            }
            (Major::Mn, _) => {
                e * (row % w + (k % 8) * w) + (row / w) * self.lbo + (k / 8) * self.sbo
            }
        }
    }

    /// Where the hardware reads element `(row, k)` of an operand whose
    /// descriptor starts at byte `start` of a buffer aligned to the
    /// swizzle's repeat.
    pub fn address(&self, start: i64, elem_bytes: i64, row: i64, k: i64) -> i64 {
        self.swizzle.apply(start + self.offset(elem_bytes, row, k))
    }

    /// The descriptor's bits but the start address: the offsets (>> 4) in
    /// bits 16..30 and 32..46, the layout type in 62..64.
    pub fn fixed_bits(&self) -> u64 {
        ((self.lbo as u64 >> 4) << 16)
            | ((self.sbo as u64 >> 4) << 32)
            | ((self.swizzle as u64) << 62)
    }

    /// The descriptor of a `rows` x 16 operand tile of `elem_bytes`-byte
    /// elements whose element `(row, k)` is `at(row, k)` elements after
    /// its start (before `swizzle`, the buffer's): the canonical form that
    /// gives every offset, or why none does.
    pub fn derive(
        rows: i64,
        elem_bytes: i64,
        swizzle: Option<Swizzle>,
        at: &dyn Fn(i64, i64) -> i64,
    ) -> Result<SmemDescriptor, String> {
        if elem_bytes != 2 {
            return Err(format!(
                "wgmma reads 16-bit elements here, not {elem_bytes}-byte ones"
            ));
        }
        let chunk = 16 / elem_bytes;
        let desc_swizzle = match swizzle {
            None => DescSwizzle::Interleave,
            Some(sw) => match DescSwizzle::from_bits(sw.bits) {
                Some(d)
                    if d != DescSwizzle::Interleave && 1 << sw.base == chunk && sw.shift == 3 =>
                {
                    d
                }
                _ => {
                    return Err(format!(
                        "its buffer's swizzle {sw} is not one wgmma reads: Swizzle(3, 3, 3), (2, 3, 3) or (1, 3, 3) for 16-bit elements (128-, 64- and 32-byte rows), or none"
                    ));
                }
            },
        };
        let w = chunk << desc_swizzle.bits();
        let bytes = |row: i64, k: i64| elem_bytes * at(row, k);
        // Each form's two offsets are where its next group starts (`None`
        // where the tile has no next group: the field is then 1, 16 bytes,
        // as CuTe sets it).
        let probe = |row: i64, k: i64| (row < rows && k < K).then(|| bytes(row, k));
        let candidates = match desc_swizzle {
            DescSwizzle::Interleave => [
                (Major::K, probe(0, chunk), probe(8, 0)),
                (Major::Mn, probe(0, 8), probe(chunk, 0)),
            ],
            _ => [
                (Major::K, probe(0, w), probe(8, 0)),
                (Major::Mn, probe(w, 0), probe(0, 8)),
            ],
        };
        let mut why = Vec::new();
        for (major, lbo_at, sbo_at) in candidates {
            let d = SmemDescriptor {
                swizzle: desc_swizzle,
                major,
                lbo: lbo_at.unwrap_or(16),
                sbo: sbo_at.unwrap_or(16),
            };
            let name = match major {
                Major::K => "K-major",
                Major::Mn => "MN-major",
            };
            if let Some((r, k)) = (0..K)
                .flat_map(|k| (0..rows).map(move |r| (r, k)))
                .find(|&(r, k)| d.offset(elem_bytes, r, k) != bytes(r, k))
            {
                why.push(format!(
                    "{name}, element ({r}, {k}) would be at byte {} but is at {}",
                    d.offset(elem_bytes, r, k),
                    bytes(r, k)
                ));
                continue;
            }
            // Groups of a swizzled tile start on whole repeats, as in
            // CuTe's atoms: the hardware's swizzle phase follows the address.
            let repeat = match desc_swizzle {
                DescSwizzle::Interleave => 16,
                sw => 8 * sw.row_bytes(),
            };
            for (field, v) in [("leading", lbo_at), ("stride", sbo_at)] {
                let Some(v) = v else { continue };
                if v < 0 || v % repeat != 0 || v >= 1 << 18 {
                    return Err(format!(
                        "its {name} {field} byte offset {v} is not a multiple of {repeat} (the {} repeat) below 262144",
                        desc_swizzle.name()
                    ));
                }
            }
            return Ok(d);
        }
        Err(format!(
            "it is none of wgmma's canonical {} layouts ({})",
            desc_swizzle.name(),
            why.join("; ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sw(b: i64) -> Option<Swizzle> {
        Some(Swizzle::new(b, 3, 3).unwrap())
    }

    /// CuTe's K-major 128B atom tiled to 64 rows (`((8,8),64):((64,512),1)`
    /// in bf16): rows of 128 bytes, groups of 8 rows 1024 bytes apart.
    #[test]
    fn k_major_128b_tile() {
        let at = |r: i64, k: i64| (r % 8) * 64 + (r / 8) * 512 + k;
        let d = SmemDescriptor::derive(64, 2, sw(3), &at).unwrap();
        assert_eq!(
            (d.swizzle, d.major, d.sbo),
            (DescSwizzle::B128, Major::K, 1024)
        );
        assert_eq!(d.fixed_bits(), (1 << 16) | (64 << 32) | (1 << 62));
        // The hardware's XOR: row 1's first chunk lands in chunk 1.
        assert_eq!(d.address(0, 2, 1, 0), 128 + 16);
        // k = 16..31 of the same rows (the next k-block) start 32 bytes on.
        let next = |r: i64, k: i64| at(r, k + 16) - 16;
        assert_eq!(SmemDescriptor::derive(64, 2, sw(3), &next).unwrap(), d);
    }

    #[test]
    fn mn_major_and_interleaved_tiles() {
        // MN-major 128B: 64 contiguous m, k rows of 128 bytes; 8 k 1024 bytes on.
        let mn = |r: i64, k: i64| r % 64 + (r / 64) * 4096 + (k % 8) * 64 + (k / 8) * 512;
        let d = SmemDescriptor::derive(128, 2, sw(3), &mn).unwrap();
        assert_eq!((d.major, d.lbo, d.sbo), (Major::Mn, 8192, 1024));
        // K-major without a swizzle: 8x8 core matrices of 128 bytes.
        let core = |r: i64, k: i64| (r % 8) * 8 + (r / 8) * 128 + k % 8 + (k / 8) * 64;
        let d = SmemDescriptor::derive(64, 2, None, &core).unwrap();
        assert_eq!((d.major, d.lbo, d.sbo), (Major::K, 128, 256));
    }

    #[test]
    fn other_layouts_say_why_not() {
        // Row-major rows of 72 elements (padding) are not canonical.
        let padded = |r: i64, k: i64| r * 72 + k;
        let e = SmemDescriptor::derive(64, 2, sw(3), &padded).unwrap_err();
        assert!(e.contains("none of wgmma's canonical sw128 layouts"), "{e}");
        let e = SmemDescriptor::derive(64, 2, Some(Swizzle::new(2, 4, 3).unwrap()), &padded)
            .unwrap_err();
        assert!(e.contains("not one wgmma reads"), "{e}");
        // Groups of 8 rows 1152 bytes apart: canonical in form, but a group
        // would start mid-repeat, where the hardware's swizzle phase differs.
        let gapped = |r: i64, k: i64| (r % 8) * 64 + (r / 8) * 576 + k;
        let e = SmemDescriptor::derive(64, 2, sw(3), &gapped).unwrap_err();
        assert!(
            e.contains("stride byte offset 1152 is not a multiple of 1024"),
            "{e}"
        );
    }
}
