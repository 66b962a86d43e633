//! What `tilec` and `tilec-run` do when their standard output cannot be
//! written (a full disk, `> /dev/full`, a pipe closed early): Rust's
//! `println!` panics then, with a backtrace; a command-line tool should say
//! so in a line, or end quietly where the reader has gone (`| head`).

use std::panic::PanicHookInfo;

/// The message `println!` panics with when a write fails.
const FAILED_PRINTING: &str = "failed printing to stdout";

/// Installs a panic hook that turns a failed write to standard output into
/// an error line and exit status 1 (a closed pipe: no line, the status of
/// a process SIGPIPE ended, 141); any other panic goes to the hook before.
pub fn exit_on_output_errors() {
    let before = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info: &PanicHookInfo| {
        let text = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied());
        match text.and_then(|t| t.strip_prefix(FAILED_PRINTING)) {
            Some(why) if why.contains("Broken pipe") => std::process::exit(141),
            Some(why) => {
                eprintln!("error: cannot write the output{why}");
                std::process::exit(1);
            }
            None => before(info),
        }
    }));
}
