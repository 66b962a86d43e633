# PyTorch's figures for the same work as the element-wise examples, for
# docs/performance.md: run on the GPU machine beside scripts/elementwise-check.
#   python3 scripts/torch-reference.py
import torch

def time_ms(f, iters=20):
    for _ in range(3):
        f()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(iters):
        start.record()
        f()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]

print(torch.cuda.get_device_name(), "torch", torch.__version__)
n = 8192
a, b, c = (torch.randn(n, n, device="cuda") for _ in range(3))
ms = time_ms(lambda: torch.add(a, b, out=c))
print(f"add f32 {n}x{n}: {ms:.3f} ms, {3 * n * n * 4 / ms / 1e6:.1f} GB/s")
ms = time_ms(lambda: c.copy_(a))
print(f"copy f32 {n}x{n}: {ms:.3f} ms, {2 * n * n * 4 / ms / 1e6:.1f} GB/s")
for s in (4096, 8192):
    x = torch.randn(s, s, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(s, s, device="cuda", dtype=torch.bfloat16)
    bias = torch.randn(s, device="cuda", dtype=torch.bfloat16)
    plain = time_ms(lambda: torch.mm(x, w.t()))
    fused = time_ms(lambda: torch.relu(torch.addmm(bias, x, w.t())))
    flop = 2 * s ** 3
    print(f"bf16 {s}^3: mm {flop / plain / 1e9:.1f} TFLOP/s, relu(addmm(bias)) {flop / fused / 1e9:.1f} TFLOP/s")
    # GELU after a GEMM: cuBLASLt's fused epilogue (bias + GELU, its tanh
    # form) and PyTorch's two kernels, each against the plain mm.
    lt = time_ms(lambda: torch._addmm_activation(bias, x, w.t(), use_gelu=True))
    two = time_ms(lambda: torch.nn.functional.gelu(torch.addmm(bias, x, w.t()), approximate="tanh"))
    print(f"bf16 {s}^3: mm {plain:.4f} ms, cuBLASLt bias+GELU epilogue {lt:.4f} ms ({lt / plain - 1:+.1%}), "
          f"addmm then gelu {two:.4f} ms ({two / plain - 1:+.1%})")
for m, k in ((8192, 8192), (1048576, 64)):
    x = torch.randn(k, m, device="cuda").t()   # (m, k), column-major
    y = torch.empty(m, device="cuda")
    ms = time_ms(lambda: torch.sum(x, dim=1, out=y))
    print(f"row sums of a column-major {m}x{k} f32: {ms:.3f} ms, {(m * k + m) * 4 / ms / 1e6:.1f} GB/s")
# The row kernels at the shapes of docs/performance.md (version 17).
for m, n in ((8192, 8192), (4096, 4096), (8192, 1000), (65536, 1024), (16384, 4096)):
    x = torch.randn(m, n, device="cuda")
    ms = time_ms(lambda: torch.softmax(x, dim=1))
    print(f"softmax of the rows of {m}x{n} f32: {ms:.3f} ms, {2 * m * n * 4 / ms / 1e6:.1f} GB/s")
    ln = torch.nn.LayerNorm(n, device="cuda")
    ms = time_ms(lambda: ln(x))
    print(f"layernorm of the rows of {m}x{n} f32: {ms:.3f} ms, {(2 * m * n + 2 * n) * 4 / ms / 1e6:.1f} GB/s")
    rms = torch.nn.RMSNorm(n, eps=1e-6, device="cuda")
    ms = time_ms(lambda: rms(x))
    print(f"rmsnorm of the rows of {m}x{n} f32: {ms:.3f} ms, {(2 * m * n + n) * 4 / ms / 1e6:.1f} GB/s")
for m, n in ((8192, 8192), (16384, 16384)):
    a = torch.randn(m, n, device="cuda")
    v = torch.randn(n, device="cuda")
    y = torch.empty(m, device="cuda")
    ms = time_ms(lambda: torch.mv(a, v, out=y))
    print(f"gemv f32 {m}x{n}: {ms:.3f} ms, {(m * n + n + 2 * m) * 4 / ms / 1e6:.1f} GB/s")
for m, n, k, l in ((2048, 2048, 2048, 16), (1024, 1024, 1024, 64), (512, 512, 512, 256), (4096, 4096, 1024, 8)):
    a = torch.randn(l, m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(l, n, k, device="cuda", dtype=torch.bfloat16)
    ms = time_ms(lambda: torch.bmm(a, b.transpose(1, 2)))
    print(f"bmm bf16 {l} x {m}x{n}x{k}: {2 * l * m * n * k / ms / 1e9:.1f} TFLOP/s")
# Attention, head dimension 64, bf16, as examples/attention.tile (one head)
# and examples/attention_sm90.tile (H heads).
for s, h in ((4096, 1), (16384, 1), (4096, 16), (16384, 4), (1024, 64)):
    q, k, v = (torch.randn(1, h, s, 64, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    ms = time_ms(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v))
    print(f"attention S={s} H={h} d=64 bf16 (SDPA): {ms:.3f} ms, {4 * s * s * 64 * h / ms / 1e9:.1f} TFLOP/s")
# Causal attention, as tests/run/attention_sm90_causal.tile (half the
# FLOPs counted: the masked half of the scores is skipped).
for s, h in ((4096, 16), (16384, 4)):
    q, k, v = (torch.randn(1, h, s, 64, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    ms = time_ms(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True))
    print(f"causal attention S={s} H={h} d=64 bf16 (SDPA): {ms:.3f} ms, {2 * s * s * 64 * h / ms / 1e9:.1f} TFLOP/s")
