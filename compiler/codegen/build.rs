//! Compiles `cpp/pass_gate.cpp`, `cpp/sink.cpp` and `cpp/one_target.cpp`
//! (stand-ins for llvm-sys's all-targets wrappers) against the LLVM that
//! llvm-sys links (its `llvm-config`, passed on as DEP_LLVM_19_CONFIG_PATH).

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
}
