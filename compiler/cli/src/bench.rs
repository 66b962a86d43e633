//! `tilec bench FILE.tile --dims ... [--iters N] [--json]`: checks the
//! kernel against its reference, then times it and cuBLAS on the same
//! shapes and layouts, interleaved; prints both and their ratio.

use crate::compile::{LaunchArgs, compile, fail, report};
use std::process::ExitCode;
use tilec_runtime::gpu::Gpu;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    launch: LaunchArgs,
    /// Timed runs of each (after warm-up); median, min and max are reported.
    #[arg(long, default_value_t = 30)]
    iters: usize,
    /// One JSON object per kernel instead of the table.
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args) -> ExitCode {
    let (name, src, dims) = match a.launch.read() {
        Ok(x) => x,
        Err(code) => return code,
    };
    let inputs = match a.launch.inputs() {
        Ok(x) => x,
        Err(code) => return code,
    };
    let gpu = match Gpu::open() {
        Ok(Some(g)) => g,
        Ok(None) => {
            return fail(
                "tilec bench needs a GPU; this machine has none (tilec run --cpu runs on the CPU)",
            );
        }
        Err(e) => return fail(&e.to_string()),
    };
    let settings = match crate::settings::resolve(
        &a.launch.tuning,
        &name,
        &src,
        Some(&gpu.name),
        &dims,
        &a.launch.arch,
    ) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let compiled = match compile(&src, &a.launch.arch, a.launch.options(&name, &settings)) {
        Ok(c) => c,
        Err(f) => return report(&name, &src, f),
    };
    let mut ok = true;
    let selected = match a.launch.selected(&compiled) {
        Ok(s) => s,
        Err(code) => return code,
    };
    for c in selected {
        match crate::run::check_launch(&c.manifest, &dims, false) {
            Ok(plan) => crate::run::note_passed_over(&c.manifest, &plan),
            Err(code) => return code,
        }
        let waiting = crate::run::spinner("checking against the reference, then timing");
        let expect = |p: &_, args: &[_]| crate::expect::expected(&compiled, c, p, args);
        let timed = tilec_runtime::bench::bench(
            &gpu,
            &c.code,
            &c.manifest,
            &dims,
            &inputs,
            a.iters,
            &expect,
        );
        waiting.finish_and_clear();
        match timed {
            Ok(b) => {
                if a.json {
                    println!("{}", serde_json::to_string(&b).unwrap_or_default());
                } else {
                    print!("{}", b.table());
                }
                ok &= b.passed();
            }
            Err(e) => return crate::compile::fail_launch(&c.kernel.name, &e),
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
