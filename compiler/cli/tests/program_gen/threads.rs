//! Reductions across threads: a block of a random number of threads (whole
//! warps or not), a random thread layout (its size a random factoring
//! into levels, odd factors too, in a random order, grouped into one to
//! three modes, repeating over the block), a random mode to fold (or all),
//! a random fold and one or two values a thread. The reference finds each
//! thread's group another way: one thread an element, looping over every
//! thread of the block and keeping those whose digits of the levels not
//! folded, and whose run of the layout's threads, are its own. The values
//! come in as f32 or bf16.

use super::{Program, Rng};

pub(super) fn generate_thread_reduction(rng: &mut Rng) -> Program {
    // The layout's threads: factors whose product divides the block.
    let mut factors = Vec::new();
    let mut size = 1;
    for _ in 0..rng.pick(&[1, 2, 3, 4]) {
        let f = rng.pick(&[2, 3, 4, 8, 16, 32]);
        if size * f <= 256 {
            factors.push(f);
            size *= f;
        }
    }
    let threads = size * rng.pick(&[1, 2, 3]);
    // Compact strides in factor order, then the levels shuffled and cut
    // into modes.
    let mut levels = Vec::new();
    let mut stride = 1;
    for &f in &factors {
        levels.push((f, stride));
        stride *= f;
    }
    for i in (1..levels.len()).rev() {
        levels.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let modes = rng.pick(&[1, 2, 3]).min(levels.len().max(1));
    let mut cut: Vec<Vec<(i64, i64)>> = vec![Vec::new(); modes];
    for (i, l) in levels.iter().enumerate() {
        // Every mode gets a level while there are enough.
        let m = if i < modes {
            i
        } else {
            rng.below(modes as u64) as usize
        };
        cut[m].push(*l);
    }
    let mode_text = |m: &[(i64, i64)], f: fn(&(i64, i64)) -> i64| match m.len() {
        0 => "1".to_string(),
        1 => f(&m[0]).to_string(),
        _ => format!(
            "({})",
            m.iter()
                .map(|l| f(l).to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let layout = format!(
        "({}):({})",
        cut.iter()
            .map(|m| mode_text(m, |l| l.0))
            .collect::<Vec<_>>()
            .join(", "),
        cut.iter()
            .map(|m| mode_text(m, |l| l.1))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let folded = match rng.chance(25) || modes == 1 {
        true => None,
        false => Some(rng.below(modes as u64) as usize),
    };
    let fold_arg = folded.map_or(String::new(), |m| format!(", {m}"));
    let (name, op, identity) = rng.pick(&[
        ("reduce_sum", "+", "0.0"),
        ("reduce_max", "max", "-3.0e38"),
        ("reduce_min", "min", "3.0e38"),
    ]);
    let values: i64 = rng.pick(&[1, 2]);
    let elem = rng.pick(&["f32", "f32", "bf16"]);
    // The levels a thread must share with a partner: those not folded.
    let kept: Vec<(i64, i64)> = cut
        .iter()
        .enumerate()
        .filter(|(m, _)| folded.is_some_and(|f| f != *m))
        .flat_map(|(_, m)| m.iter().copied())
        .collect();
    let mut same = format!("j / {size} == t / {size}");
    for (s, d) in &kept {
        same.push_str(&format!(" && j / {d} % {s} == t / {d} % {s}"));
    }
    let fold = |acc: &str, x: &str| match op {
        "+" => format!("{acc} + {x}"),
        f => format!("{f}({acc}, {x})"),
    };
    // A partner past M holds the zero its guarded load gave.
    let element = |v: i64| {
        format!(
            "select({same}, select(b + {v} * {threads} + j < M, X[min(b + {v} * {threads} + j, M - 1)], 0.0), {identity})"
        )
    };
    let reference_loop: String = (0..values)
        .map(|v| format!("        a{v} = {};\n", fold(&format!("a{v}"), &element(v))))
        .collect();
    let reference_regs: String = (0..values)
        .map(|v| format!("    let a{v} = registers<f32>(1, {identity});\n"))
        .collect();
    let reference_writes: String = (0..values)
        .map(|v| {
            format!(
                "    if b + {v} * {threads} + t < M {{\n        Y[b + {v} * {threads} + t] = a{v};\n    }}\n"
            )
        })
        .collect();
    let per_block = threads * values;
    let source = format!(
        "kernel fz(X: tensor<{elem}, (M):(1)>, Y: tensor<f32, (M):(1)>)
{{
    reference fz_reference(X, Y);
    launch grid(ceil_div(M, {per_block})), block({threads});
    let gX = composition(local_tile(X, ({per_block}), (block.x)), ({threads}, {values}):(1, {threads}));
    let gY = composition(local_tile(Y, ({per_block}), (block.x)), ({threads}, {values}):(1, {threads}));
    let x = registers<f32>({values});
    copy(gX[thread.x, _], x);
    gY[thread.x, _] = {name}(x, threads({layout}{fold_arg}));
}}

kernel fz_reference(X: tensor<{elem}, (M):(1)>, Y: tensor<f32, (M):(1)>)
{{
    launch grid(ceil_div(M, {per_block}) * {threads}), block(1);
    let b = block.x / {threads} * {per_block};
    let t = block.x % {threads};
{reference_regs}    for j in 0..{threads} {{
{reference_loop}    }}
{reference_writes}}}
"
    );
    let dims = vec![format!(
        "M={}",
        rng.pick(&[1, 7, per_block, 2 * per_block + 1, 3 * per_block - 5, 500])
    )];
    Program { source, dims }
}
