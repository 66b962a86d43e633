//! Generates the LALRPOP parser from `grammar/` at the workspace root.
fn main() {
    println!("cargo:rerun-if-changed=../../grammar");
    lalrpop::Configuration::new()
        .set_in_dir("../../grammar")
        .emit_rerun_directives(true)
        .process()
        .expect("the grammar in grammar/ is valid LALRPOP");
}
