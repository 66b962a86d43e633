fn main() {
    let path = std::env::args().nth(1).unwrap();
    let src = std::fs::read_to_string(&path).unwrap();
    let ks = tilec::check::kernel::check_source(&src)
        .unwrap_or_else(|d| panic!("{}", d[0].render("x", &src)));
    for k in &ks {
        let l = tilec::lower::lower(k).unwrap_or_else(|d| panic!("{}", d.render("x", &src)));
        print!("{}", l.ir);
        println!("accesses: {}", l.global_accesses.len());
    }
}
