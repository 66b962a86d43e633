//! Compiles `cpp/pass_gate.cpp`, `cpp/sink.cpp` and `cpp/one_target.cpp`
//! (stand-ins for llvm-sys's all-targets wrappers) against the LLVM that
//! llvm-sys links (its `llvm-config`, passed on as DEP_LLVM_19_CONFIG_PATH);
//! with LLVM linked statically, links LLVM's own C++ and compression
//! libraries statically too ([`static_system_libraries`]).

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=cpp/pass_gate.cpp");
    println!("cargo:rerun-if-changed=cpp/sink.cpp");
    println!("cargo:rerun-if-changed=cpp/one_target.cpp");
    println!("cargo:rerun-if-env-changed=DEP_LLVM_19_CONFIG_PATH");
    let config =
        std::env::var("DEP_LLVM_19_CONFIG_PATH").unwrap_or_else(|_| "llvm-config-19".into());
    let out = Command::new(&config)
        .arg("--cxxflags")
        .output()
        .unwrap_or_else(|e| panic!("running {config} --cxxflags: {e}"));
    if !out.status.success() {
        panic!(
            "{config} --cxxflags failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let flags = String::from_utf8(out.stdout).expect("llvm-config prints text");
    let mut build = cc::Build::new();
    build
        .cpp(true)
        .file("cpp/pass_gate.cpp")
        .file("cpp/sink.cpp")
        .file("cpp/one_target.cpp")
        .warnings(false);
    for flag in flags.split_whitespace() {
        build.flag(flag);
    }
    build.compile("tilec_llvm_passes");
    if std::env::var_os("CARGO_FEATURE_STATIC_LLVM").is_some() {
        static_system_libraries();
    }
}

/// llvm-sys links the libraries a static LLVM needs (libstdc++, zlib,
/// zstd, libffi) and Rust the unwinder (libgcc_s) as shared objects. Each
/// shared object costs a `tilec build` its loading and its symbols' lazy
/// binding in every process; linked statically, the builds of the
/// examples took 0.67-0.92 of the time (docs/performance.md, version 58).
/// A linker script named like the shared object, in a directory searched
/// first, hands the linker the archive instead (GNU ld reads a script
/// where it looks for a library); where the archive is missing, the
/// shared object is linked as before. The names replaced are passed on as
/// `TILEC_STATIC_SYSTEM_LIBRARIES` (tests/static_link.rs checks them). The
/// C library stays shared: the runtime opens libcuda, and cuBLAS with its
/// own libstdc++, by dlopen (an executable's C++ runtime is its own, so
/// the two do not meet).
fn static_system_libraries() {
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let dir = out.join("static-system-libraries");
    std::fs::create_dir_all(&dir).expect("OUT_DIR is writable");
    // (the name the linker is asked for, the archive that replaces it)
    let libraries = [
        ("stdc++", "libstdc++.a"),
        ("z", "libz.a"),
        ("zstd", "libzstd.a"),
        ("ffi", "libffi.a"),
        ("gcc_s", "libgcc_eh.a"),
    ];
    let compiler = cc::Build::new().cpp(true).get_compiler();
    let mut replaced = Vec::new();
    for (name, archive) in libraries {
        let found = Command::new(compiler.path())
            .arg(format!("-print-file-name={archive}"))
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .map(|p| std::path::PathBuf::from(p.trim()))
            .filter(|p| p.is_absolute() && p.is_file());
        let script = dir.join(format!("lib{name}.so"));
        match found {
            Some(path) => {
                std::fs::write(&script, format!("INPUT({})\n", path.display()))
                    .expect("OUT_DIR is writable");
                // A new compiler or a removed package moves the archive.
                println!("cargo:rerun-if-changed={}", path.display());
                replaced.push(name);
            }
            None => {
                let _ = std::fs::remove_file(&script);
            }
        }
    }
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!(
        "cargo:rustc-env=TILEC_STATIC_SYSTEM_LIBRARIES={}",
        replaced.join(",")
    );
}
