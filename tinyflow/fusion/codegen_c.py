"""C source of a fused kernel: one loop over the output, OpenMP threads and SIMD lanes.

For `c * sigmoid(a*x + b)` with a scalar feed `a` and float32 data the source reads
    void tf_fused(const float *x0, const float *x1, float *out, long outer, long inner) {
        const float s1 = x1[0];
        long n = outer * inner, i;
    #pragma omp parallel for simd schedule(static) if (n >= 262144)
        for (i = 0; i < n; i++) {
            const float a0 = x0[i];
            const float a1 = s1;
            const float t0 = (a1 * a0);
            const float t1 = (t0 + (-0.5f));
            ...
            out[i] = t3;
        }
    }
Inputs broadcast as rows or columns use a two-level loop (rows in threads, a SIMD inner loop).
"""
from .expressions import EXPRESSIONS, literal

PARALLEL_MIN = 1 << 18  # elements: below this, waking OpenMP threads costs more than it saves (as ckernels/)
_CTYPE = {"float32": "float", "float64": "double"}


def body(node, loads, single, fn, indent):
    """The statements computing each member into t0, t1, ...; returns (lines, name of the result)."""
    def lit(x):
        return literal(x, single)
    lines = [f"{indent}const T a{k} = {load};" for k, load in loads.items()]
    for j, (member, (op_type, args)) in enumerate(zip(node.members, node.program)):
        names = [f"a{i}" if kind == "x" else f"t{i}" if kind == "t" else lit(i.reshape(-1)[0])
                 for kind, i in args]
        lines.append(f"{indent}const T t{j} = {EXPRESSIONS[op_type](names, member, fn, lit)};")
    return lines, f"t{len(node.program) - 1}"


def load(kind, k, full, scalar):
    """How input k of a kind (see layout.py) is read in a (row r, column c) loop."""
    if kind.startswith("col%"):
        return f"x{k}[r % {int(kind[4:])}]"
    return {"full": full, "scalar": scalar, "row": f"x{k}[c]", "col": f"x{k}[r]"}[kind]


def c_source(node, kinds):
    """The kernel `tf_fused(x0.., out, outer, inner)` for `node` with inputs read as `kinds`."""
    ctype = _CTYPE[node.dtype.name]
    single = ctype == "float"

    def fn(name):
        return name + "f" if single else name
    params = ", ".join(f"const T *restrict x{k}" for k in range(len(kinds)))
    lines = ["#include <math.h>", f"typedef {ctype} T;",
             f"void tf_fused({params}{', ' if params else ''}T *restrict out, long outer, long inner) {{"]
    lines += [f"    const T s{k} = x{k}[0];" for k, kind in enumerate(kinds) if kind == "scalar"]
    if all(kind in ("full", "scalar") for kind in kinds):
        loads = {k: (f"s{k}" if kind == "scalar" else f"x{k}[i]") for k, kind in enumerate(kinds)}
        statements, result = body(node, loads, single, fn, " " * 8)
        lines += ["    long n = outer * inner, i;",
                  f"#pragma omp parallel for simd schedule(static) if (n >= {PARALLEL_MIN})",
                  "    for (i = 0; i < n; i++) {", *statements, f"        out[i] = {result};", "    }"]
    else:
        loads = {k: load(kind, k, f"x{k}[r * inner + c]", f"s{k}") for k, kind in enumerate(kinds)}
        statements, result = body(node, loads, single, fn, " " * 12)
        lines += ["    long r;",
                  f"#pragma omp parallel for schedule(static) if (outer * inner >= {PARALLEL_MIN})",
                  "    for (r = 0; r < outer; r++) {", "        long c;", "#pragma omp simd",
                  "        for (c = 0; c < inner; c++) {", *statements,
                  f"            out[r * inner + c] = {result};", "        }", "    }"]
    lines.append("}")
    return "\n".join(lines) + "\n"


def c_declaration(node, kinds):
    """The cdef line of the kernel (no `restrict`: cffi's parser does not need it)."""
    ctype = _CTYPE[node.dtype.name]
    params = "".join(f"const {ctype} *x{k}, " for k in range(len(kinds)))
    return f"void tf_fused({params}{ctype} *out, long outer, long inner);"
