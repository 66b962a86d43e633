"""The table of a shape sweep (scripts/shape-sweep writes its JSON lines):
per kernel, tilec / cuBLAS at each shape (cuBLAS's median time over
tilec's), TFLOP/s, the entries that ran; the geometric mean and the worst.
With --best NAME=k1,k2,..., also the best of those kernels at each shape
(what a user who picks the faster example for a layout gets).
    python3 scripts/sweep-table.py /tmp/shape-sweep.jsonl [--markdown]
    python3 scripts/sweep-table.py FILE --best NT=sgemm_streamk,sgemm_nt_sm80"""
import json
import math
import sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
md = "--markdown" in sys.argv
best = [a.split("=", 1) for a, prev in zip(sys.argv[1:], sys.argv) if prev == "--best"]


def ratio_of(r):
    """tilec / cuBLAS of a checked result, or None."""
    if "error" in r or not r["result"].get("cublas"):
        return None
    x = r["result"]
    c = x["check"]
    if c is not None and not c["error"] <= c["tolerance"]:
        return None
    return x["cublas"]["median"] / x["tilec"]["median"]


def summary(ratios):
    g = math.exp(sum(map(math.log, ratios)) / len(ratios))
    return f"geometric mean {g:.3f} over {len(ratios)} shapes, worst {min(ratios):.3f}, best {max(ratios):.3f}"

for f in dict.fromkeys(r["file"] for r in rows):
    print(f"\n{f}: tilec / cuBLAS (medians), tilec TFLOP/s, entries")
    if md:
        print("\n| M x N x K | tilec / cuBLAS | TFLOP/s | entries |\n|---|---|---|---|")
    ratios = []
    for r in (x for x in rows if x["file"] == f):
        if "error" in r:
            print(f"  {r['shape']:>20}  error: {r['error']}")
            continue
        x = r["result"]
        c = x["check"]
        if c is not None and not c["error"] <= c["tolerance"]:
            print(f"  {r['shape']:>20}  wrong result (relative error {c['error']:.3g})")
            continue
        if not x.get("cublas"):
            print(f"  {r['shape']:>20}  no cuBLAS figure")
            continue
        ratio = x["cublas"]["median"] / x["tilec"]["median"]
        ratios.append(ratio)
        tflops = x["work"] / x["tilec"]["median"] / 1e9
        if md:
            print(f"| {r['shape']} | {ratio:.3f} | {tflops:.1f} | {x['kernel']} |")
        else:
            print(f"  {r['shape']:>20}  {ratio:6.3f}  {tflops:7.1f}  {x['kernel']}")
    if ratios:
        print(f"\n  {summary(ratios)}")
for name, kernels in best:
    kernels = kernels.split(",")
    print(f"\n{name}: the best of {', '.join(kernels)} at each shape")
    ratios = []
    for shape in dict.fromkeys(r["shape"] for r in rows):
        got = [(ratio_of(r), r["file"]) for r in rows if r["shape"] == shape and r["file"] in kernels]
        got = [g for g in got if g[0] is not None]
        if not got:
            continue
        ratio, f = max(got)
        ratios.append(ratio)
        if md:
            print(f"| {shape} | {ratio:.3f} | {f} |")
        else:
            print(f"  {shape:>20}  {ratio:6.3f}  {f}")
    if ratios:
        print(f"\n  {summary(ratios)}")
