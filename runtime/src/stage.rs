//! The kernel that fills a tensor's aligned copy for TMA ([`crate::staging::Staging`]), and copies a written one back:
//! rows of elements from any pitch to a pitch of whole 128 bytes. Written
//! here in PTX (the runtime has no compiler), one entry per element size.
//!
//! The work is *chunks*: 16 bytes of a destination row ([`chunk_elements`]
//! elements), the rows' chunks numbered one after another, so rows shorter
//! than a block's share pack its threads (a copy's rows of 251 floats take
//! 16 blocks, not 251 mostly idle ones). Thread `t` of block `b` moves
//! chunks `b * CHUNKS_PER_BLOCK + t + THREADS * u`, `u < UNROLL`: a warp's
//! loads cover consecutive bytes at any alignment of the source rows, each
//! thread has all its loads in flight before its stores, and a whole
//! chunk whose destination is 16-byte aligned (a copy's pitched rows
//! always are) is one vector store. A chunk past a row's end is stored
//! element by element up to the end, so the padding after a row, zeroed
//! when the copy was allocated, stays zero. One launch makes up to
//! [`COPIES`] pitched copies, one per `blockIdx.z`: a small problem's
//! copies of A and B take one launch, not two.

/// Threads per block.
pub const THREADS: u32 = 256;
/// Chunks each thread moves.
const UNROLL: u32 = 4;
/// Chunks each block moves.
pub const CHUNKS_PER_BLOCK: u64 = (THREADS * UNROLL) as u64;
/// Bytes of a chunk: one vector store.
const CHUNK_BYTES: u64 = 16;
/// Pitched copies one launch makes.
pub const COPIES: usize = 4;
/// The parameters of one copy, each a u64 (lengths and pitches in
/// elements), and the register each is read into.
const FIELDS: [(&str, &str); 6] = [
    ("src", "src"),
    ("dst", "dst"),
    ("width", "width"),
    ("src_pitch", "spitch"),
    ("dst_pitch", "dpitch"),
    ("rows", "rows"),
];

/// The entry point for elements of `bytes` bytes (2 or 4).
pub fn entry(bytes: u64) -> Option<&'static str> {
    match bytes {
        2 => Some("tilec_stage_b16"),
        4 => Some("tilec_stage_b32"),
        _ => None,
    }
}

/// Elements of `bytes` bytes in a chunk.
pub fn chunk_elements(bytes: u64) -> u64 {
    CHUNK_BYTES / bytes
}

/// Blocks a copy of `rows` rows of `width` elements of `bytes` bytes needs.
pub fn blocks(rows: u64, width: u64, bytes: u64) -> u64 {
    (rows * width.div_ceil(chunk_elements(bytes))).div_ceil(CHUNKS_PER_BLOCK)
}

/// The module: `tilec_stage_b16` and `tilec_stage_b32`, each taking
/// [`COPIES`] copies' (source, destination, row length, source pitch,
/// destination pitch, rows), those from `gridDim.z` on unread. Block `(x,
/// 0, z)` moves chunks `x * CHUNKS_PER_BLOCK ..` of copy `z`.
pub fn ptx() -> String {
    let mut s = String::from(".version 7.0\n.target sm_80\n.address_size 64\n");
    for bytes in [2, 4] {
        s += &entry_ptx(bytes);
    }
    s
}

fn entry_ptx(bytes: u64) -> String {
    let bits = 8 * bytes;
    let shift = bytes.trailing_zeros();
    let v = chunk_elements(bytes);
    let vshift = v.trailing_zeros();
    let params: Vec<String> = (0..COPIES)
        .flat_map(|c| FIELDS.map(|(f, _)| format!(".param .u64 p_{f}{c}")))
        .collect();
    // Copy z's parameters: copy 0's, each replaced by copy c's where z = c.
    let mut select = String::new();
    for c in 0..COPIES {
        let pred = match c {
            0 => "",
            _ => {
                select += &format!("  setp.eq.u32 %is, %t4, {c};\n");
                "@%is "
            }
        };
        for (f, reg) in FIELDS {
            select += &format!("  {pred}ld.param.u64 %{reg}, [p_{f}{c}];\n");
        }
    }
    // Chunk u of this thread: (row %r{u}, first element %c{u}); the next
    // is THREADS chunks on, `%drow` rows and `%dcol` elements, one row
    // more where that passes the row's last chunk.
    let mut walk = String::new();
    let mut loads = String::new();
    let mut stores = String::new();
    for u in 0..UNROLL {
        if u > 0 {
            let p = u - 1;
            walk += &format!(
                "  add.u64 %r{u}, %r{p}, %drow;\n  add.u64 %c{u}, %c{p}, %dcol;\n  \
                 setp.ge.u64 %wrap, %c{u}, %cwidth;\n  @%wrap sub.u64 %c{u}, %c{u}, %cwidth;\n  \
                 @%wrap add.u64 %r{u}, %r{u}, 1;\n"
            );
        }
        // In the copy (a row below its rows), and whole (all its elements
        // before the row's end: `%left` of them are).
        walk += &format!(
            "  setp.lt.u64 %in{u}, %r{u}, %rows;\n  sub.u64 %left{u}, %width, %c{u};\n  \
             setp.ge.u64 %whole{u}, %left{u}, {v};\n  and.pred %whole{u}, %whole{u}, %in{u};\n  \
             and.pred %vec{u}, %whole{u}, %aligned;\n"
        );
        loads += &format!(
            "  mad.lo.u64 %a, %r{u}, %spitch, %c{u};\n  shl.b64 %a, %a, {shift};\n  add.u64 %a, %a, %src;\n"
        );
        stores += &format!(
            "  mad.lo.u64 %a, %r{u}, %dpitch, %c{u};\n  shl.b64 %a, %a, {shift};\n  add.u64 %a, %a, %dst;\n"
        );
        for i in 0..v {
            let e = u as u64 * v + i;
            let off = i * bytes;
            // Element i of the chunk is in the row: whole, or in the copy
            // and i before the row's end.
            loads += &format!(
                "  setp.gt.u64 %p{e}, %left{u}, {i};\n  and.pred %p{e}, %p{e}, %in{u};\n  \
                 @%p{e} ld.global.nc.u{bits} %v{e}, [%a+{off}];\n"
            );
        }
        let vector = match bytes {
            4 => format!(
                "  @%vec{u} st.global.v4.b32 [%a], {{%v{}, %v{}, %v{}, %v{}}};\n",
                4 * u,
                4 * u + 1,
                4 * u + 2,
                4 * u + 3
            ),
            _ => {
                let mut s = String::new();
                for w in 0..4 {
                    s += &format!(
                        "  mov.b32 %w{w}, {{%v{}, %v{}}};\n",
                        8 * u + 2 * w,
                        8 * u + 2 * w + 1
                    );
                }
                s + &format!("  @%vec{u} st.global.v4.b32 [%a], {{%w0, %w1, %w2, %w3}};\n")
            }
        };
        stores += &vector;
        stores += &format!("  @%vec{u} bra STORED{u};\n");
        for i in 0..v {
            let e = u as u64 * v + i;
            stores += &format!("  @%p{e} st.global.u{bits} [%a+{}], %v{e};\n", i * bytes);
        }
        stores += &format!("STORED{u}:\n");
    }
    let n = UNROLL as u64 * v;
    format!(
        r#"
.visible .entry tilec_stage_b{bits}({params})
{{
  .reg .pred %p<{n}>, %in<{UNROLL}>, %whole<{UNROLL}>, %vec<{UNROLL}>;
  .reg .pred %done, %is, %wrap, %aligned;
  .reg .b{bits} %v<{n}>;
  .reg .b32 %t<5>, %w<4>;
  .reg .b64 %src, %dst, %width, %spitch, %dpitch, %rows, %chunks, %cwidth, %q, %drow, %dcol, %a;
  .reg .b64 %r<{UNROLL}>, %c<{UNROLL}>, %left<{UNROLL}>;
  mov.u32 %t4, %ctaid.z;
{select}  cvta.to.global.u64 %src, %src;
  cvta.to.global.u64 %dst, %dst;
  // Chunks a row (%chunks) and the elements they span (%cwidth).
  add.u64 %chunks, %width, {vm1};
  shr.u64 %chunks, %chunks, {vshift};
  shl.b64 %cwidth, %chunks, {vshift};
  // The grid is the largest copy's: past this copy's chunks, nothing to do.
  mov.u32 %t0, %ctaid.x;
  mul.wide.u32 %q, %t0, {per_block};
  mul.lo.u64 %a, %chunks, %rows;
  setp.ge.u64 %done, %q, %a;
  @%done bra END;
  mov.u32 %t1, %tid.x;
  cvt.u64.u32 %a, %t1;
  add.u64 %q, %q, %a;
  div.u64 %r0, %q, %chunks;
  mul.lo.u64 %a, %r0, %chunks;
  sub.u64 %c0, %q, %a;
  shl.b64 %c0, %c0, {vshift};
  mov.u64 %dcol, {threads};
  div.u64 %drow, %dcol, %chunks;
  mul.lo.u64 %a, %drow, %chunks;
  sub.u64 %dcol, %dcol, %a;
  shl.b64 %dcol, %dcol, {vshift};
  // Whole chunks are one vector store where the destination's rows are
  // 16-byte aligned.
  shl.b64 %a, %dpitch, {shift};
  or.b64 %a, %a, %dst;
  and.b64 %a, %a, 15;
  setp.eq.u64 %aligned, %a, 0;
{walk}{loads}{stores}END:
  ret;
}}
"#,
        params = params.join(", "),
        per_block = CHUNKS_PER_BLOCK,
        threads = THREADS,
        vm1 = v - 1,
    )
}
