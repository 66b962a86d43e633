//! With LLVM linked statically (the default feature), the C++ runtime,
//! the compression libraries and the unwinder are linked in too (build.rs,
//! `static_system_libraries`): a process that runs the back end, as
//! `tilec build` does, maps no shared object of theirs.

#[cfg(all(target_os = "linux", feature = "static-llvm"))]
#[test]
fn llvm_s_system_libraries_are_linked_in() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/copy.tile");
    let src = std::fs::read_to_string(path).expect("example");
    let kernels = tilec::pipeline::lower_source(&src).expect("lowers");
    let ir = &kernels[0].1[0].ir;
    let ptx =
        tilec_codegen::compile_variant(ir, "sm_90", tilec_codegen::Output::Ptx).expect("compiles");
    assert!(ptx.contains(".entry"));
    let maps = std::fs::read_to_string("/proc/self/maps").expect("Linux has /proc/self/maps");
    // The libraries whose archives build.rs found (`scripts/setup` installs
    // them all): each one's shared object must be nowhere in the process.
    let replaced = env!("TILEC_STATIC_SYSTEM_LIBRARIES");
    assert!(replaced.contains("stdc++"), "{replaced}");
    for name in replaced.split(',') {
        let lib = format!("lib{name}.so");
        assert!(
            !maps.contains(&lib),
            "{lib} is mapped: build.rs's linker scripts were not found first"
        );
    }
}
