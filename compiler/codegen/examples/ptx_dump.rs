fn main() {
    let path = std::env::args().nth(1).unwrap();
    let what = std::env::args().nth(2).unwrap_or("ptx".into());
    let src = std::fs::read_to_string(&path).unwrap();
    let ks = tilec::check::kernel::check_source(&src)
        .unwrap_or_else(|d| panic!("{}", d[0].render("x", &src)));
    for k in &ks {
        let l = tilec::lower::lower(k).unwrap_or_else(|d| panic!("{}", d.render("x", &src)));
        let t = std::time::Instant::now();
        let out = tilec_codegen::compile(
            &l.ir,
            "sm_90",
            if what == "llvm" {
                tilec_codegen::Output::LlvmIr
            } else {
                tilec_codegen::Output::Ptx
            },
        )
        .unwrap();
        eprintln!("codegen {:?}", t.elapsed());
        print!("{out}");
    }
}
