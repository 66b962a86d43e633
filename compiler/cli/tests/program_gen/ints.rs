//! Run-time integers inside element-wise statements against the same
//! integers where the language has always taken them as integers: a random
//! expression of `thread.x`, `block.x`, `M`, an element's coordinate
//! (`coord(t, 0)`, which the reference writes as `block.x * 64 +
//! thread.x`) and numbers (large ones too, past f32's 2^24) with `+ - * /
//! %`, `min` and `max`, clamped and counted out by a loop in the reference
//! (into an f32 tensor and, by an integer statement, an i32 one), and a
//! comparison of two such expressions, which the reference makes as an
//! `if` condition.

use super::{Program, Rng};

/// A random integer expression of depth at most `depth`, as the kernel
/// writes it and as the reference does; divisors are positive numbers.
fn expression(rng: &mut Rng, depth: u32) -> (String, String) {
    if depth == 0 || rng.chance(30) {
        let leaf: String = match rng.below(7) {
            0 => "thread.x".into(),
            1 => "block.x".into(),
            2 => "M".into(),
            3 => rng.pick(&["16777216", "16777217", "-16777217"]).into(),
            4 => {
                return (
                    "coord(local_tile(C, (64), (block.x))[thread.x], 0)".into(),
                    "(block.x * 64 + thread.x)".into(),
                );
            }
            _ => rng.pick(&["1", "2", "3", "7", "-5", "64"]).into(),
        };
        return (leaf.clone(), leaf);
    }
    let ((a, ra), (b, rb)) = (expression(rng, depth - 1), expression(rng, depth - 1));
    let both = |f: &dyn Fn(&str, &str) -> String| (f(&a, &b), f(&ra, &rb));
    match rng.below(7) {
        0 => both(&|a, b| format!("({a} + {b})")),
        1 => both(&|a, b| format!("({a} - {b})")),
        2 => {
            let k = rng.pick(&["2", "3", "-1"]);
            both(&|a, _| format!("({a} * {k})"))
        }
        3 => {
            let k = rng.pick(&["2", "3", "7", "32"]);
            both(&|a, _| format!("({a} / {k})"))
        }
        4 => {
            let k = rng.pick(&["2", "3", "7", "32"]);
            both(&|a, _| format!("({a} % {k})"))
        }
        5 => both(&|a, b| format!("min({a}, {b})")),
        _ => both(&|a, b| format!("max({a}, {b})")),
    }
}

pub(super) fn generate_integers(rng: &mut Rng) -> Program {
    let (count, rcount) = expression(rng, 3);
    let ((left, rleft), (right, rright)) = (expression(rng, 2), expression(rng, 2));
    let cmp = rng.pick(&["<", "<=", ">", ">=", "==", "!="]);
    let clamp = format!("min(max({count}, 0), 300)");
    let rclamp = format!("min(max({rcount}, 0), 300)");
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
    for j in 0..{rclamp} {{
        s = s + 1.0;
        n = n + 1;
    }}
    local_tile(C, (64), (block.x))[thread.x] = s;
    local_tile(E, (64), (block.x))[thread.x] = n;
    if {rleft} {cmp} {rright} {{
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
