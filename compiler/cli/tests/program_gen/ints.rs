//! Run-time integers inside element-wise statements against the same
//! integers where the language has always taken them as integers: a random
//! expression of `thread.x`, `block.x`, `M` and numbers (large ones too,
//! past f32's 2^24) with `+ - * / %`, `min` and `max`, clamped and counted
//! out by a loop in the reference (into an f32 tensor and, by an integer
//! statement, an i32 one), and a comparison of two such expressions, which
//! the reference makes as an `if` condition.

use super::{Program, Rng};

/// A random integer expression of depth at most `depth`; divisors are
/// positive numbers.
fn expression(rng: &mut Rng, depth: u32) -> String {
    if depth == 0 || rng.chance(30) {
        return match rng.below(6) {
            0 => "thread.x".into(),
            1 => "block.x".into(),
            2 => "M".into(),
            3 => rng.pick(&["16777216", "16777217", "-16777217"]).into(),
            _ => rng.pick(&["1", "2", "3", "7", "-5", "64"]).into(),
        };
    }
    let (a, b) = (expression(rng, depth - 1), expression(rng, depth - 1));
    match rng.below(7) {
        0 => format!("({a} + {b})"),
        1 => format!("({a} - {b})"),
        2 => format!("({a} * {})", rng.pick(&["2", "3", "-1"])),
        3 => format!("({a} / {})", rng.pick(&["2", "3", "7", "32"])),
        4 => format!("({a} % {})", rng.pick(&["2", "3", "7", "32"])),
        5 => format!("min({a}, {b})"),
        _ => format!("max({a}, {b})"),
    }
}

pub(super) fn generate_integers(rng: &mut Rng) -> Program {
    let count = expression(rng, 3);
    let (left, right) = (expression(rng, 2), expression(rng, 2));
    let cmp = rng.pick(&["<", "<=", ">", ">=", "==", "!="]);
    let clamp = format!("min(max({count}, 0), 300)");
    let source = format!(
        "kernel fz(C: tensor<f32, (M):(1)>, D: tensor<f32, (M):(1)>, E: tensor<i32, (M):(1)>)
{{
    reference fz_reference(C, D, E);
    launch grid(ceil_div(M, 64)), block(64);
    local_tile(C, (64), (block.x))[thread.x] = f32({clamp});
    local_tile(E, (64), (block.x))[thread.x] = {clamp};
    local_tile(D, (64), (block.x))[thread.x] = select({left} {cmp} {right}, 1.0, 0.0);
}}

kernel fz_reference(C: tensor<f32, (M):(1)>, D: tensor<f32, (M):(1)>, E: tensor<i32, (M):(1)>)
{{
    launch grid(ceil_div(M, 64)), block(64);
    let s = registers<f32>(1, 0.0);
    let n = registers<i32>(1, 0);
    for j in 0..{clamp} {{
        s = s + 1.0;
        n = n + 1;
    }}
    local_tile(C, (64), (block.x))[thread.x] = s;
    local_tile(E, (64), (block.x))[thread.x] = n;
    if {left} {cmp} {right} {{
        local_tile(D, (64), (block.x))[thread.x] = 1.0;
    }} else {{
        local_tile(D, (64), (block.x))[thread.x] = 0.0;
    }}
}}
"
    );
    let dims = vec![format!("M={}", rng.pick(&[1, 5, 64, 100, 257]))];
    Program { source, dims }
}
