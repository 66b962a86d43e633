//! Hopper's machinery in the PTX: a pipeline's producer warpgroup and
//! mbarrier ring, TMA stores and prefetches, and the persistent epilogue
//! (wgmma's groups: `wgmma_groups.rs`; clusters: `clusters.rs`).

use super::*;

/// A pipeline's protocol in the PTX: per stage a full and an empty
/// mbarrier initialised once, the producer warpgroup giving registers to
/// the consumers, one TMA box per operand with the stage's bytes expected,
/// the consumers' wait and release; the manifest launches the producer too
/// and names the maps.
#[test]
fn a_pipeline_is_a_producer_warpgroup_and_an_mbarrier_ring() {
    let f = root().join("examples/bgemm_tn_sm90_tma.tile");
    let (code, ptx, err) = tilec(&["build", f.to_str().unwrap(), "--emit", "ptx"]);
    assert_eq!(code, 0, "{err}");
    let entry = part(&ptx, ".entry bgemm_tn_sm90_tma(");
    assert!(ptx.contains(".target sm_90a"));
    assert!(entry.contains(".maxntid 384, 1, 1") && entry.contains(".minnctapersm 1"));
    assert_eq!(
        entry.matches("mbarrier.init.shared::cta.b64").count(),
        9,
        "4 stages and the block's own TMA loads"
    );
    // After the ring's initialisation and the block's own barrier's.
    assert_eq!(
        entry.matches("fence.mbarrier_init.release.cluster").count(),
        2
    );
    assert!(entry.contains("setmaxnreg.dec.sync.aligned.u32 40;"));
    assert!(entry.contains("setmaxnreg.inc.sync.aligned.u32 232;"));
    assert_eq!(
        entry
            .matches("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes")
            .count(),
        4,
        "a box of A and one of B a stage, two of C after the main loop"
    );
    // 128x64 + 256x64 bf16 a stage.
    assert!(entry.contains(", 49152;"), "the stage's bytes");
    // The producer's wait for an empty stage, the consumers' for a full
    // one, the block's for its tile of C; the expected bytes of a stage
    // and of C.
    assert_eq!(
        entry
            .matches("mbarrier.try_wait.parity.shared::cta.b64")
            .count(),
        3
    );
    assert_eq!(
        entry
            .matches("mbarrier.arrive.expect_tx.shared::cta.b64")
            .count(),
        2
    );
    assert_eq!(entry.matches("mbarrier.arrive.shared::cta.b64").count(), 1);
    let m = manifest_of("examples/bgemm_tn_sm90_tma.tile");
    assert_eq!(m.block, vec![tilec_layout::Int::Static(384)]);
    for v in &m.variants {
        let maps: Vec<(usize, Vec<i64>, i64)> = v
            .tensor_maps
            .iter()
            .map(|t| {
                (
                    t.param,
                    t.dims.iter().map(|d| d.size).collect(),
                    t.swizzle_bytes,
                )
            })
            .collect();
        assert_eq!(
            maps,
            vec![
                (0, vec![64, 128], 128),
                (1, vec![64, 256], 128),
                (2, vec![64, 256], 128),
                (2, vec![64, 256], 128)
            ]
        );
    }
    let (code, _, err) = tilec(&["build", f.to_str().unwrap(), "--arch", "sm_80"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("only sm_90a") && err.contains("pipeline k in"),
        "{err}"
    );
}

/// TMA copies in a ping-pong turn are the turn's warpgroup's: its first
/// thread issues them (`thread.x % 128 == 0`, after the warpgroup's own
/// named barrier of 128 threads), a load waits on a barrier of the
/// warpgroup's own (the kernel's loads barriers are three: the block's, and
/// one a warpgroup taking turns), and the turn ends waiting for its store's
/// bulk group (its warpgroup's first thread is the only one that can).
#[test]
fn a_turn_s_tma_copies_are_its_warpgroup_s() {
    let ptx = emitted("examples/gemm_batched_pingpong.tile", "ptx");
    assert!(
        ptx.contains(".shared .align 8 .b8 gemm_batched_pingpong_loads[24];"),
        "{ptx}"
    );
    // Its first thread: `thread.x & 127` compared with 0 (thread 0's
    // test compares thread.x itself).
    let lines: Vec<&str> = ptx.lines().map(str::trim).collect();
    let first_thread = lines.windows(2).any(|w| {
        let Some(rest) = w[0].strip_prefix("and.b64") else {
            return false;
        };
        let reg = rest.trim().split(',').next().unwrap_or("");
        rest.ends_with(", 127;")
            && w[1].starts_with("setp.")
            && w[1].contains(&format!("{reg}, 0;"))
    });
    assert!(first_thread, "{ptx}");
    let ir = emitted("examples/gemm_batched_pingpong.tile", "ir");
    let after = &ir[position(&ir, "} after {")..];
    let end = after.find("\n  }\n").expect("the after block's end");
    assert!(
        after[..end].trim_end().ends_with("tma_store_wait"),
        "{after}"
    );
}

/// A TMA store: the tile's writes fenced for the async proxy, a barrier of
/// the consumers, thread 0's boxes as one bulk group waited for until read,
/// a barrier again; the manifest's maps of C are a load's and a store's. The
/// tile of C, first used after the pipeline, takes the bytes of its stages
/// (four of them, 192 KB in all), handed over at a barrier before the TMA
/// load that fills it; nothing is guarded, so the kernel has one entry. A
/// kernel without a pipeline meets at `bar.sync 0` and targets plain
/// sm_90.
#[test]
fn a_tma_store_is_fenced_issued_by_one_thread_and_waited_for() {
    let ptx = emitted("tests/run/tma_store_gemm.tile", "ptx");
    let entry = part(&ptx, ".entry tma_store_gemm(");
    let store = &entry[position(entry, "global.shared::cta.bulk_group")..];
    assert_eq!(store.matches("global.shared::cta.bulk_group").count(), 2);
    let before = &entry[..position(entry, "global.shared::cta.bulk_group")];
    let fence = before
        .rfind("fence.proxy.async.shared::cta;")
        .expect("a fence");
    let barrier = before.rfind("barrier.sync").expect("a barrier");
    assert!(
        barrier > fence && before[barrier..].contains("1, 256;"),
        "{before}"
    );
    let at = |needle: &str| position(store, needle);
    assert!(at("cp.async.bulk.commit_group;") < at("cp.async.bulk.wait_group.read 0;"));
    assert!(at("cp.async.bulk.wait_group.read 0;") < at("barrier.sync"));
    let m = manifest_of("tests/run/tma_store_gemm.tile");
    let maps = &m.variants[0].tensor_maps;
    assert_eq!(
        maps.iter().map(|x| (x.param, x.store)).collect::<Vec<_>>(),
        [(0, false), (1, false), (2, false), (2, true)]
    );
    let ir = emitted("tests/run/tma_store_gemm.tile", "ir");
    let at = |needle: &str| position(&ir, needle);
    assert!(
        ir.contains("  shared s0 smA: bf16[32768] align 1024 at 0\n"),
        "{ir}"
    );
    assert!(
        ir.contains("  shared s2 sC: bf16[32768] align 1024 at 0\n"),
        "{ir}"
    );
    assert!(at("  pipeline 0 ") < at("  barrier\n  tma_load bytes 65536 {"));
    assert!(at("  tma_load bytes") < at("  tma_wait\n  ldmatrix"));
    assert_eq!(m.variants.len(), 1);
    // The mbarriers: two a stage and the block's own.
    assert_eq!(
        (m.shared_bytes, m.dynamic_shared_bytes),
        (4 * 49152 + 72, 4 * 49152)
    );
    // The last TMA load is C's, after the main loop's last wgmma wait.
    let handed = &entry[..entry.rfind(".shared::cluster.global").expect("C's load")];
    let handed = &handed[handed.rfind("wgmma.wait_group").expect("the main loop")..];
    assert!(handed.contains("barrier.sync \t1, 256;"), "{handed}");
    let copy = emitted("tests/run/tma_store_copy.tile", "ptx");
    assert!(copy.contains(".target sm_90\n"), "{copy}");
    let entry = part(&copy, ".entry tma_store_copy(");
    let at = |needle: &str| position(entry, needle);
    assert!(at("fence.proxy.async.shared::cta;") < at("bar.sync"));
    assert!(at("bar.sync") < at("global.shared::cta.bulk_group"));
    // A block's TMA copies need sm_90: refused at the statement before it.
    let f = root().join("tests/run/tma_copy.tile");
    let (code, _, err) = tilec(&["build", f.to_str().unwrap(), "--arch", "sm_80"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("a TMA load (cp.async.bulk.tensor), which needs sm_90"),
        "{err}"
    );
    // A store alone in its kernel has no earlier one's writes to wait
    // for; a later one that may overlap an earlier one waits for them
    // (one a tile in the subtiled epilogue, before its first subtile).
    let entry = part(&ptx, ".entry tma_store_gemm(");
    assert!(!entry.contains("cp.async.bulk.wait_group 0;"), "{entry}");
    let subtiled = emitted("tests/run/persistent_subtile_epilogue.tile", "ptx");
    let entry = part(&subtiled, ".entry persistent_subtile_epilogue(");
    assert_eq!(entry.matches("cp.async.bulk.wait_group 0;").count(), 1);
    let at = |needle: &str| position(entry, needle);
    assert!(at("cp.async.bulk.wait_group 0;") < at("global.shared::cta.bulk_group"));
    let perf = perf_notes("tests/run/tma_store_gemm.tile");
    assert!(
        perf.contains("TMA store; clipped at the tensor's edges"),
        "{perf}"
    );
    assert!(
        perf.contains(
            "TMA load by the block, waited for where its tile is next touched: 2 box(es)"
        ),
        "{perf}"
    );
}

/// The epilogue's pass over the shared tile of C (`tCsC = alpha * tCrC +
/// beta * tCsC`) moves eight elements a lane an instruction: C's tile in
/// by `ldmatrix.trans`, the results out by `stmatrix.trans` (sm_90), where
/// element by element it took 256 2-byte shared accesses a thread.
#[test]
fn the_epilogue_moves_the_tile_of_c_by_ldmatrix_and_stmatrix() {
    let ptx = emitted("examples/bgemm_tn_sm90_tma.tile", "ptx");
    let entry = part(&ptx, ".entry bgemm_tn_sm90_tma(");
    let x4 = |op: &str| {
        entry
            .matches(&format!("{op}.sync.aligned.m8n8.x4.trans.shared.b16"))
            .count()
    };
    assert_eq!((x4("ldmatrix"), x4("stmatrix")), (16, 16));
    assert!(!entry.contains("st.shared.b16"), "{entry}");
    assert!(!entry.contains("ld.shared.b16"), "{entry}");
    // The stores come before the fence that hands the tile to TMA.
    let last = entry.rfind("stmatrix").expect("a stmatrix");
    let store = position(entry, "global.shared::cta.bulk_group");
    assert!(entry[last..store].contains("fence.proxy.async.shared::cta;"));
}

/// The tile of C that the epilogue loads by TMA after the pipeline is
/// prefetched into L2 by the producer, once its last load is issued and
/// before it leaves; a pipeline with no TMA load after it prefetches
/// nothing.
#[test]
fn the_producer_prefetches_the_tile_of_c_into_l2_after_its_last_load() {
    let ptx = emitted("examples/bgemm_tn_sm90_tma.tile", "ptx");
    let entry = part(&ptx, ".entry bgemm_tn_sm90_tma(");
    let prefetch = "cp.async.bulk.prefetch.tensor.2d.L2.global.tile";
    assert_eq!(entry.matches(prefetch).count(), 2, "{entry}");
    let first = position(entry, prefetch);
    let last_load = entry[..first]
        .rfind("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier")
        .expect("the producer's loads before its prefetches");
    // Between them only the loop's end: no wait, no barrier.
    assert!(!entry[last_load..first].contains("mbarrier.try_wait"));
    assert!(!entry[last_load..first].contains("bar.sync"));
    // Then the producer leaves, before the consumers' first load of C.
    let leave = first + position(&entry[first..], "ret;");
    assert!(leave < entry.rfind("mbarrier::complete_tx::bytes").unwrap());
    assert!(
        perf_notes("examples/bgemm_tn_sm90_tma.tile")
            .contains("the producer prefetches the 2 TMA box(es) loaded after it into L2")
    );
    let plain = emitted("tests/run/tma_pipeline.tile", "ptx");
    assert!(!plain.contains("prefetch"), "{plain}");
}

/// `prefetch(tile)` in a pipeline body: one box of an unswizzled map of
/// its own (the 128 x 256 tile of C whole), issued in the consumers' code
/// by thread 0 under the body's `if`, after the trip's wgmma, with no
/// barrier of its own.
#[test]
fn a_prefetch_statement_is_one_box_issued_by_thread_zero() {
    let ir = emitted("tests/run/persistent_subtile_epilogue.tile", "ir");
    let entry = part(&ir, "kernel persistent_subtile_epilogue(");
    let map = entry
        .lines()
        .find(|l| l.contains(": C, box (128, 256)"))
        .expect("a map of the prefetched tile");
    assert!(map.trim_end().ends_with("swizzle 0"), "{map}");
    let t = map
        .trim()
        .split(':')
        .next()
        .unwrap()
        .replace("tensor_map ", "");
    let l2: Vec<&str> = entry.lines().filter(|l| l.ends_with("-> L2")).collect();
    assert_eq!(l2.len(), 1, "{entry}");
    assert!(l2[0].trim().starts_with(&format!("tma {t} (")), "{l2:?}");
    let ptx = emitted("tests/run/persistent_subtile_epilogue.tile", "ptx");
    let code = part(&ptx, ".entry persistent_subtile_epilogue(");
    let prefetch = "cp.async.bulk.prefetch.tensor.2d.L2.global.tile";
    assert_eq!(code.matches(prefetch).count(), 1, "{code}");
    let at = position(code, prefetch);
    // After the consumers' first wgmma, not in the producer's loop.
    assert!(position(code, "wgmma.mma_async") < at);
    let branch = code[..at].rfind("setp.").expect("thread 0's test");
    assert!(
        !code[branch..at].contains("bar.sync"),
        "{}",
        &code[branch..at]
    );
    assert!(
        perf_notes("tests/run/persistent_subtile_epilogue.tile")
            .contains("prefetch into L2 by thread 0: 1 box(es) of 128x256 bf16")
    );
}

/// The persistent GEMM's epilogue: its first two subtiles of C come in as
/// one block load (both buffers), after the previous tile's stores have
/// written C (they are a trip old: never proven apart); then each later
/// subtile's load is issued after the store before it, without waiting
/// for it (proven apart), and waited for only after the next store, so it
/// flies while a subtile is computed and sent. No store waits for another.
/// Two loads in a row into one buffer stay two, each waited for.
#[test]
fn the_persistent_epilogue_loads_a_subtile_while_it_stores_the_one_before() {
    let ir = emitted("examples/bgemm_tn_sm90_persistent.tile", "ir");
    let entry = part(&ir, "kernel bgemm_tn_sm90_persistent(");
    let lines: Vec<&str> = entry.lines().map(str::trim).collect();
    let loads: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].starts_with("tma_load "))
        .collect();
    assert_eq!(
        loads.iter().map(|&i| lines[i]).collect::<Vec<_>>(),
        [
            "tma_load after_stores bytes 32768 {",
            "tma_load bytes 16384 {",
            "tma_load bytes 16384 {"
        ]
    );
    let waits: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i] == "tma_wait")
        .collect();
    assert_eq!(waits.len(), 3, "{entry}");
    for (&l, &w) in loads[1..].iter().zip(&waits[1..]) {
        let between = &lines[l..w];
        assert!(
            between.iter().any(|s| s.starts_with("ldmatrix")),
            "{between:?}"
        );
        assert!(between.contains(&"tma_store unordered {"), "{between:?}");
    }
    assert!(!lines.contains(&"tma_store {"), "{entry}");
    let ptx = emitted("examples/bgemm_tn_sm90_persistent.tile", "ptx");
    let code = part(&ptx, ".entry bgemm_tn_sm90_persistent(");
    // Thread 0 waits for the stores' writes, then expects the bytes and
    // issues the boxes.
    let after = &code[position(code, "cp.async.bulk.wait_group 0;")..];
    assert!(
        position(after, "mbarrier.arrive.expect_tx.shared::cta.b64 _,")
            < position(after, "cp.async.bulk.tensor.2d.shared::cluster.global")
    );
    assert_eq!(code.matches("cp.async.bulk.wait_group 0;").count(), 1);
    let two = emitted("tests/codegen/two_loads_into_one_buffer.tile", "ir");
    let lines: Vec<&str> = two.lines().map(str::trim).collect();
    let at = |l: &str| lines.iter().position(|s| *s == l).expect(l);
    assert_eq!(
        lines.iter().filter(|s| s.starts_with("tma_load ")).count(),
        2
    );
    assert!(
        at("tma_wait")
            < lines
                .iter()
                .rposition(|s| s.starts_with("tma_load "))
                .unwrap()
    );
}

/// A TMA store's reads of its tile are waited for where the tile is next
/// written: in a persistent kernel's body, after the next subtile's loads
/// of C, not right after the store; once more before the kernel's end. At
/// the top level, right after the store, as before.
#[test]
fn a_tma_store_is_waited_for_where_its_tile_is_next_written() {
    let ir = emitted("tests/run/persistent_subtile_epilogue.tile", "ir");
    let entry = part(&ir, "kernel persistent_subtile_epilogue(");
    let lines: Vec<&str> = entry.lines().map(str::trim).collect();
    let stores: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].starts_with("tma_store") && lines[i].ends_with('{'))
        .collect();
    assert_eq!(stores.len(), 4, "{entry}");
    // The store's tile: `tma tN (..) <- sB[..]`.
    let tile = lines[stores[0] + 1]
        .split("<- ")
        .nth(1)
        .and_then(|t| t.split('[').next())
        .expect("a box from shared memory");
    let written = |l: &str| {
        l.split(" = ")
            .next()
            .is_some_and(|t| t.contains(&format!("{tile}[")))
    };
    for &s in &stores[..3] {
        let end = s + lines[s..].iter().position(|l| *l == "}").unwrap();
        let wait = end
            + lines[end..]
                .iter()
                .position(|l| *l == "tma_store_wait")
                .unwrap();
        let between = &lines[end + 1..wait];
        assert!(
            between.iter().any(|l| l.contains("bf16:C[")),
            "the next subtile's loads of C come before the wait: {between:?}"
        );
        assert!(!between.iter().any(|l| written(l)), "{between:?}");
        assert!(written(lines[wait + 1]), "{}", lines[wait + 1]);
    }
    // A tile's first subtile waits for the stores before it to write
    // global memory (the last tile's, a trip away: not proven apart); the
    // next three go out at once, 64 columns past each other.
    let marks: Vec<&str> = stores.iter().map(|&s| lines[s]).collect();
    assert_eq!(
        marks,
        [
            "tma_store {",
            "tma_store unordered {",
            "tma_store unordered {",
            "tma_store unordered {"
        ]
    );
    // The last subtile's store drains into the next tile's main loop, and
    // is waited for once more after the pipeline.
    assert_eq!(lines.last().copied(), Some("tma_store_wait"), "{entry}");
    let plain = emitted("examples/bgemm_tn_sm90_tma.tile", "ir");
    let plain: Vec<&str> = plain.lines().map(str::trim).collect();
    // Alone in its kernel, nothing to wait for before it.
    let at = plain
        .iter()
        .position(|l| *l == "tma_store unordered {")
        .unwrap();
    let end = at + plain[at..].iter().position(|l| *l == "}").unwrap();
    assert_eq!(plain[end + 1], "tma_store_wait");
}

/// TMA takes 32-bit coordinates: two stores whose origins differ by 2^32
/// rows write one box, so the second waits for the first's global writes
/// (proven apart only modulo 2^32).
#[test]
fn stores_one_box_apart_by_2_to_the_32_are_ordered() {
    let ir = emitted(
        "tests/run/tma_stores_one_box_round_the_coordinates.tile",
        "ir",
    );
    let entry = part(&ir, "kernel tma_stores_one_box_round_the_coordinates(");
    let marks: Vec<&str> = entry
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("tma_store ") || *l == "tma_store_wait")
        .collect();
    assert_eq!(
        marks,
        [
            "tma_store unordered {",
            "tma_store_wait",
            "tma_store {",
            "tma_store_wait"
        ]
    );
}

/// Through four buffers, the load into a buffer waits for that buffer's
/// store alone: the store issued after it stays in flight (`keep 1`,
/// `wait_group.read 1`), four times a tile; a tile's first load and the
/// kernel's end wait for every store.
#[test]
fn a_store_wait_keeps_the_stores_issued_after_the_one_it_waits_for() {
    let ir = emitted("tests/run/persistent_four_buffers.tile", "ir");
    let entry = part(&ir, "kernel persistent_four_buffers(");
    let lines: Vec<&str> = entry.lines().map(str::trim).collect();
    let waits: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with("tma_store_wait"))
        .collect();
    assert_eq!(
        waits,
        [
            "tma_store_wait",
            "tma_store_wait keep 1",
            "tma_store_wait keep 1",
            "tma_store_wait keep 1",
            "tma_store_wait keep 1",
            "tma_store_wait"
        ],
        "{entry}"
    );
    // Each counted wait follows a store, the one it keeps in flight, and
    // stands before the load it allows.
    for (i, _) in lines
        .iter()
        .enumerate()
        .filter(|(_, l)| **l == "tma_store_wait keep 1")
    {
        let before: Vec<&&str> = lines[..i]
            .iter()
            .rev()
            .filter(|l| l.starts_with("tma_store ") || l.starts_with("tma_load"))
            .take(1)
            .collect();
        assert!(
            before.iter().all(|l| l.starts_with("tma_store ")),
            "{before:?}"
        );
        assert!(lines[i + 1].starts_with("tma_load"), "{}", lines[i + 1]);
    }
    let ptx = emitted("tests/run/persistent_four_buffers.tile", "ptx");
    assert_eq!(ptx.matches("cp.async.bulk.wait_group.read 1;").count(), 4);
}

/// A `--checked` build bounds the row each lane gives a stmatrix (and an
/// ldmatrix) as it bounds every element of the per-element form.
#[test]
fn a_checked_build_bounds_each_matrix_row() {
    let f = root().join("examples/bgemm_tn_sm90_tma.tile");
    let (code, ir, err) = tilec(&["build", f.to_str().unwrap(), "--emit", "ir", "--checked"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = ir.lines().collect();
    let mut matrices = 0;
    for (i, l) in lines.iter().enumerate() {
        let (op, what) = match l.trim_start() {
            t if t.starts_with("stmatrix") => ("stmatrix", "write"),
            t if t.starts_with("ldmatrix") => ("ldmatrix", "read"),
            _ => continue,
        };
        matrices += 1;
        // The wait for a TMA load goes in where its tile is next touched:
        // between the first check and its access.
        let before = match lines[i - 1].trim_start() {
            w if w.starts_with("tma_wait") => lines[i - 2],
            _ => lines[i - 1],
        };
        assert!(
            before.contains(&format!("out-of-bounds {what} of shared buffer")),
            "{op} without its bound check: {before}\n{l}"
        );
    }
    assert_eq!(matrices, 32);
}

/// An element-wise statement into registers that reads a 16-bit shared
/// tile of MMA fragments (`tCrC = alpha * tCrC + (beta * tCsC + tCsBias)`
/// before `tCsC = fast_gelu_tanh(tCrC)`) brings the tile in by ldmatrix,
/// eight elements a lane an instruction, as the one-statement form does:
/// 128 x 256 of C by two warpgroups, 16 x4 a thread (it read them element
/// by element before).
#[test]
fn a_statement_into_registers_reads_a_shared_tile_of_fragments_by_ldmatrix() {
    let ir = emitted("tests/run/gemm_bias_gelu.tile", "ir");
    assert_eq!(ir.matches("ldmatrix.x4.trans.bf16 s2[").count(), 16, "{ir}");
}

/// A statement reads one shared tile of fragments by ldmatrix; another it
/// reads (gemm_bias_gelu's bias) goes element by element, and `check
/// --perf` says so and how to read it by ldmatrix too (a new user found
/// the second tile silent).
#[test]
fn a_second_shared_tile_of_fragments_in_a_statement_is_noted() {
    let notes = perf_notes("tests/run/gemm_bias_gelu.tile");
    assert!(
        notes.contains("54:5  note: element by element, not ldmatrix: 1 more shared tile(s) of fragments read here"),
        "{notes}"
    );
}

/// A fused epilogue's sum written with the bias inside the parentheses,
/// `alpha * tCrC + (beta * tCsC + tCsBias)`, is two fmas a value: sums go
/// left to right and a product feeding one contracts, so written left to
/// right it is a product, an fma and an add (gemm_bias_relu's entry: 384
/// floating-point operations a thread that way, 256 this way).
#[test]
fn a_bias_inside_the_parentheses_sums_in_two_fmas() {
    let ptx = emitted("examples/gemm_bias_relu.tile", "ptx");
    let entry = part(&ptx, ".entry gemm_bias_relu(");
    let count = |op: &str| entry.matches(op).count();
    // 128 values a thread, each `fma(alpha, acc, fma(beta, c, bias))`.
    assert_eq!(
        (
            count("fma.rn.f32"),
            count("mul.rn.f32"),
            count("add.rn.f32")
        ),
        (256, 0, 0),
        "{entry}"
    );
}

/// `tilec check --perf` notes a sum of two products and a term written
/// left to right, which the same sum regrouped makes one operation a value
/// cheaper: the reference's `alpha * acc + beta * C[..] + bias[..]`, not
/// the kernel's regrouped epilogue above, nor a reduction's sums of
/// products (gemv, softmax: their order is the reduction's).
#[test]
fn perf_notes_a_sum_that_regrouped_is_two_fmas() {
    let note = "note: a term added after a sum of products, left to right";
    let file = "examples/gemm_bias_relu.tile";
    let src = std::fs::read_to_string(root().join(file)).unwrap();
    let line = 1 + src
        .lines()
        .position(|l| l.contains("alpha * acc + beta * C[block.x, block.y] + bias[block.y]"))
        .expect("the reference's sum");
    let perf = perf_notes(file);
    assert_eq!(perf.matches(note).count(), 1, "{perf}");
    assert!(perf.contains(&format!(":{line}:5  {note}")), "{perf}");
    for f in ["examples/gemv.tile", "examples/softmax.tile"] {
        assert!(!perf_notes(f).contains(note), "{f}");
    }
}

/// A target whose elements share places in shared memory (two warpgroups'
/// halves of C on the same rows) stays element by element: stmatrix writes
/// a warp's elements in no particular order, the per-element stores in
/// program order. `check --perf` says why.
#[test]
fn a_target_whose_elements_share_places_is_not_stmatrix() {
    let file = "tests/codegen/stmatrix_shared_places.tile";
    let notes = perf_notes(file);
    assert!(
        notes.contains("note: element by element, not stmatrix: two of its elements share a place in shared memory"),
        "{notes}"
    );
    assert!(!emitted(file, "ir").contains("stmatrix.x"));
}

/// A reduce across parts in a pipeline's body checks its group, part and
/// count by a trap alone: a printf there, a call in the loop of wgmmas,
/// made ptxas serialize every wgmma of the entry (C7510). After a
/// pipeline the check still reports the failing block.
#[test]
fn a_reduce_in_a_pipelines_body_checks_its_bounds_without_a_call() {
    let ptx = emitted("tests/run/streamk_pipeline.tile", "ptx");
    let code = part(&ptx, ".entry streamk_pipeline(");
    assert!(code.contains("trap;"), "{code}");
    assert!(!code.contains("call"), "{code}");
    assert!(!ptx.contains("vprintf"));
    let after = emitted("tests/run/too_few_parts.tile", "ptx");
    assert!(after.contains("vprintf"), "{after}");
}

/// A reduce in a pipeline's body on a 128 x 256 tile (128 accumulators
/// a thread): the blocks that hold the sum reach the body by a way of
/// their own, so ptxas keeps no partial beside the sum. Joined at one
/// block by a flag, it spilled 1148 bytes, in the main loop too (ptxas
/// 13.0; docs/performance.md, version 37).
#[test]
fn a_reduce_of_a_large_tile_in_a_pipelines_body_barely_spills() {
    let ptx = emitted("tests/run/streamk_persistent.tile", "ptx");
    let Some((ok, log)) = assembled(&ptx, "sm_90a") else {
        eprintln!("SKIPPED spill count: no ptxas");
        return;
    };
    assert!(ok, "{log}");
    let spilled: u32 = log
        .split(" bytes spill stores")
        .next()
        .and_then(|before| before.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no spill count in:\n{log}"));
    assert!(spilled <= 64, "{spilled} bytes of spills:\n{log}");
}

/// A block's TMA load in one `if` is waited for in the next `if` on the
/// same condition: tests/run/tma_load_across_ifs.tile's tile of C lands
/// under the last k-tile's wgmmas.
#[test]
fn a_block_load_in_an_if_is_waited_for_in_the_next_on_its_condition() {
    let ir = emitted("tests/run/tma_load_across_ifs.tile", "ir");
    let lines: Vec<&str> = ir.lines().map(str::trim).collect();
    let load = position_of(&lines, |l| l.starts_with("tma_load "));
    let cond = lines[load - 2];
    assert!(cond.starts_with("if %"), "{cond}");
    let wgmma = position_of(&lines, |l| l == "wgmma.wait 0");
    assert!(load < wgmma);
    assert_eq!(lines[wgmma + 1], cond);
    assert_eq!(lines[wgmma + 2], "tma_wait");
    assert_eq!(lines.iter().filter(|l| **l == "tma_wait").count(), 1);
}

/// The index of the first line `f` holds for.
fn position_of(lines: &[&str], f: impl Fn(&str) -> bool) -> usize {
    lines
        .iter()
        .position(|l| f(l))
        .unwrap_or_else(|| panic!("no such line in:\n{}", lines.join("\n")))
}

/// A TMA producer's trip divides by a run-time value fixed across its loop
/// only where it must: its tile coordinates (of `i / kt` alone) are
/// computed where the tile changes (`per_tile`) and carried between; any
/// other such division (stream-K's `at / kt`, `at % kt`, `t % tm`) steps
/// its last quotient and remainder and divides only on a jump (`divide`).
/// The producer's loop body (the first `i.body`) and the blocks where those
/// branches rejoin it hold no such division (these two kernels divide by
/// no other kind).
#[test]
fn a_pipeline_trip_divides_only_where_its_tile_changes() {
    for (file, divider) in [
        ("examples/bgemm_tn_sm90_persistent.tile", "per_tile"),
        ("tests/run/streamk_pipeline.tile", "divide"),
    ] {
        let llvm = emitted(file, "llvm");
        let mut blocks: Vec<(&str, Vec<&str>)> = Vec::new();
        for line in llvm.lines() {
            match line.split_once(':') {
                Some((name, _)) if !line.starts_with(' ') && !name.contains(' ') => {
                    blocks.push((name, Vec::new()))
                }
                _ => {
                    if let Some((_, body)) = blocks.last_mut() {
                        body.push(line)
                    }
                }
            }
        }
        assert!(
            blocks.iter().any(|(n, _)| n.starts_with(divider)),
            "{file}: no {divider} block"
        );
        let every_trip = |n: &str| {
            n == "i.body"
                || (n.starts_with("per_tile") || n.starts_with("divide")) && n.contains(".done")
        };
        for (name, body) in blocks.iter().filter(|(n, _)| every_trip(n)) {
            for l in body {
                let by_value = (l.contains(" udiv i64 ") || l.contains(" urem i64 "))
                    && l.rsplit(", ").next().is_some_and(|d| d.starts_with('%'));
                assert!(!by_value, "{file}: {name} divides on every trip: {l}");
            }
        }
    }
}
