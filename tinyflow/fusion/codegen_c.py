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

Long chains of arithmetic (the gradient chain of many adds, say) are latency-bound in that
loop: each element waits for its previous member, ~4 cycles each, and one SIMD vector is in
flight at a time. For them the flat loop works on blocks of LANES elements held in GCC vector
types, so several SIMD registers advance together, and finishes the last elements one by one:
        typedef T V __attribute__((vector_size(sizeof(T) * LANES)));
        for (b = 0; b < n / LANES; b++) { V a0; memcpy(&a0, x0 + b * LANES, sizeof a0); ... }
        for (i = n - n % LANES; i < n; i++) { the loop above }
(1,000 dependent adds on 16 floats: 12.7 µs -> 3.2 µs in a standalone C test.)
"""
from .expressions import EXPRESSIONS, literal

PARALLEL_MIN = 1 << 18  # elements: below this, waking OpenMP threads costs more than it saves (as ckernels/)
_CTYPE = {"float32": "float", "float64": "double"}
LANES_BYTES = 64          # a block of the vector form: four SSE registers (or two AVX ones)
LANES_MIN_MEMBERS = 8     # shorter chains give the CPU enough independent work as they are
# ops whose expressions are arithmetic only, which GCC vector types support (no calls, no ?:)
VECTOR_OPS = frozenset({"Add", "Subtract", "Multiply", "Divide", "Negative", "Square", "Identity",
                        "SigmoidGrad", "TanhGrad"})


def body(node, loads, single, fn, indent, vector=None):
    """The statements computing each member into t0, t1, ...; returns (lines, name of the result).

    With `vector` (the set of ("x", k) inputs the caller loaded as vectors), members reading a vector
    are of the vector type V and are added to it, the others stay scalars of type T.
    """
    def lit(x):
        return literal(x, single)
    lines = [f"{indent}const T a{k} = {load};" for k, load in loads.items()]
    for j, (member, (op_type, args)) in enumerate(zip(node.members, node.program)):
        names = [f"a{i}" if kind == "x" else f"t{i}" if kind == "t" else lit(i.reshape(-1)[0])
                 for kind, i in args]
        ctype = "T"
        if vector is not None and any((kind, i) in vector for kind, i in args if kind != "c"):
            vector.add(("t", j))
            ctype = "V"
        lines.append(f"{indent}const {ctype} t{j} = {EXPRESSIONS[op_type](names, member, fn, lit)};")
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
    lines = ["#include <math.h>", "#include <string.h>", f"typedef {ctype} T;",
             f"void tf_fused({params}{', ' if params else ''}T *restrict out, long outer, long inner) {{"]
    lines += [f"    const T s{k} = x{k}[0];" for k, kind in enumerate(kinds) if kind == "scalar"]
    if all(kind in ("full", "scalar") for kind in kinds):
        loads = {k: (f"s{k}" if kind == "scalar" else f"x{k}[i]") for k, kind in enumerate(kinds)}
        statements, result = body(node, loads, single, fn, " " * 8)
        lines.append("    long n = outer * inner, i;")
        if _vectorisable(node, kinds):
            lines += _lanes_loop(node, kinds, single, fn)
            lines.append("    for (i = n - n % LANES; i < n; i++) {  /* the last elements, one by one */")
        else:
            lines += [f"#pragma omp parallel for simd schedule(static) if (n >= {PARALLEL_MIN})",
                      "    for (i = 0; i < n; i++) {"]
        lines += [*statements, f"        out[i] = {result};", "    }"]
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


def _vectorisable(node, kinds):
    """Whether the flat loop of `node` takes the vector form: a long chain of arithmetic on full arrays."""
    return (len(node.members) >= LANES_MIN_MEMBERS and "full" in kinds
            and all(op_type in VECTOR_OPS for op_type, _ in node.program))


def _lanes_loop(node, kinds, single, fn):
    """The block loop of the vector form; members computed from full inputs are vectors, the rest scalars."""
    lanes = LANES_BYTES // (4 if single else 8)
    lines = [f"    enum {{ LANES = {lanes} }};", "    typedef T V __attribute__((vector_size(sizeof(T) * LANES)));",
             "    long b, blocks = n / LANES;",
             f"#pragma omp parallel for schedule(static) if (n >= {PARALLEL_MIN})",
             "    for (b = 0; b < blocks; b++) {"]
    vector = {("x", k) for k, kind in enumerate(kinds) if kind == "full"}
    lines += [f"        V a{k}; memcpy(&a{k}, x{k} + b * LANES, sizeof a{k});" for _, k in sorted(vector)]
    statements, _ = body(node, {k: f"s{k}" for k, kind in enumerate(kinds) if kind != "full"}, single, fn,
                         " " * 8, vector)
    lines += statements
    last = len(node.program) - 1
    result = f"t{last}"
    if ("t", last) not in vector:  # every member read only scalars: one value for all lanes (x - 0 is x)
        lines.append(f"        const V r = t{last} - (V){{0}};")
        result = "r"
    lines += [f"        memcpy(out + b * LANES, &{result}, sizeof(V));", "    }"]
    return lines


def c_declaration(node, kinds):
    """The cdef line of the kernel (no `restrict`: cffi's parser does not need it)."""
    ctype = _CTYPE[node.dtype.name]
    params = "".join(f"const {ctype} *x{k}, " for k in range(len(kinds)))
    return f"void tf_fused({params}{ctype} *out, long outer, long inner);"
