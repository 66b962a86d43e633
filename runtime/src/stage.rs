//! The kernel that fills a tensor's aligned copy for TMA ([`crate::staging::Staging`]), and copies a written one back:
//! rows of elements from any pitch to a pitch of whole 128 bytes. Written
//! here in PTX (the runtime has no compiler), one entry per element size.
//! A warp moves 32 consecutive elements per instruction, so loads and
//! stores are coalesced at any alignment of the source rows; each thread
//! has 16 bytes of loads in flight before its stores (four 4-byte or
//! eight 2-byte elements). One launch makes up to
//! [`COPIES`] pitched copies, one per `blockIdx.z`: a small problem's
//! copies of A and B take one launch, not two.

/// Threads per block.
pub const THREADS: u32 = 256;
/// Bytes of loads each thread has in flight.
const IN_FLIGHT_BYTES: u64 = 16;
/// Blocks a launch takes at most along its rows: each block walks rows
/// `gridDim.y` apart, so that a copy of many rows is not a block a row
/// (12289 rows of 4099 bf16, beside two copies of 257 rows, took 300 us
/// on an H100 in 479,000 blocks, most of them past their copy's rows or
/// row; at the card's bandwidth it is 70 us).
pub const BLOCKS: u64 = 4096;

/// Elements of a row each block copies (the grid's x covers a row).
pub fn row_elements_per_block(elem_bytes: u64) -> u64 {
    THREADS as u64 * unroll(elem_bytes)
}

/// Elements each thread loads before it stores them.
fn unroll(elem_bytes: u64) -> u64 {
    IN_FLIGHT_BYTES / elem_bytes.max(1)
}
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

/// The module: `tilec_stage_b16` and `tilec_stage_b32`, each taking
/// [`COPIES`] copies' (source, destination, row length, source pitch,
/// destination pitch, rows), those from `gridDim.z` on unread. Block `(x,
/// y, z)` copies elements `x * row_elements_per_block(..) ..` of rows `y,
/// y + gridDim.y, ...` of copy `z`.
pub fn ptx() -> String {
    let mut s = String::from(".version 7.0\n.target sm_80\n.address_size 64\n");
    for (bits, shift) in [(16, 1), (32, 2)] {
        s += &entry_ptx(bits, shift, unroll(bits as u64 / 8) as usize);
    }
    s
}

fn entry_ptx(bits: u32, shift: u32, unroll: usize) -> String {
    let mut loads = String::new();
    let mut stores = String::new();
    for j in 0..unroll {
        let off = j as u32 * THREADS;
        loads += &format!(
            "  add.u64 %c{j}, %col, {off};\n  setp.lt.u64 %p{j}, %c{j}, %width;\n  \
             add.u64 %a, %c{j}, %srow;\n  shl.b64 %a, %a, {shift};\n  add.u64 %a, %a, %src;\n  \
             @%p{j} ld.global.nc.u{bits} %v{j}, [%a];\n"
        );
        stores += &format!(
            "  add.u64 %a, %c{j}, %drow;\n  shl.b64 %a, %a, {shift};\n  add.u64 %a, %a, %dst;\n  \
             @%p{j} st.global.u{bits} [%a], %v{j};\n"
        );
    }
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
    format!(
        r#"
.visible .entry tilec_stage_b{bits}({params})
{{
  .reg .pred %p<{unroll}>;
  .reg .pred %done, %is;
  .reg .b{bits} %v<{unroll}>;
  .reg .b32 %t<5>;
  .reg .b64 %src, %dst, %width, %spitch, %dpitch, %rows, %col, %row, %step, %srow, %drow, %a;
  .reg .b64 %c<{unroll}>;
  mov.u32 %t4, %ctaid.z;
{select}  cvta.to.global.u64 %src, %src;
  cvta.to.global.u64 %dst, %dst;
  mov.u32 %t0, %ctaid.x;
  mov.u32 %t1, %tid.x;
  mul.wide.u32 %col, %t0, {per_block};
  // The grid is the widest copy's: past this copy's row, nothing to do.
  setp.ge.u64 %done, %col, %width;
  @%done bra END;
  cvt.u64.u32 %a, %t1;
  add.u64 %col, %col, %a;
  mov.u32 %t2, %ctaid.y;
  cvt.u64.u32 %row, %t2;
  mov.u32 %t3, %nctaid.y;
  cvt.u64.u32 %step, %t3;
ROW:
  setp.ge.u64 %done, %row, %rows;
  @%done bra END;
  mul.lo.u64 %srow, %row, %spitch;
  mul.lo.u64 %drow, %row, %dpitch;
{loads}{stores}  add.u64 %row, %row, %step;
  bra ROW;
END:
  ret;
}}
"#,
        params = params.join(", "),
        per_block = THREADS as usize * unroll,
    )
}
