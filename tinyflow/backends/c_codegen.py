"""Generated kernel source: a fused node's, in C (one loop over the output on tinyflow's thread pool) or OpenCL, and
the OpenCL kernels of the elementwise table.

The C kernel `tf_fused(x0.., out, outer, inner, parallel)` splits its loop across `parallel`, the C library's
tf_parallel_for (never an OpenMP runtime). Math calls go to tf_math.h (pasted in), which GCC vectorizes (libm's
would stay scalar calls). Rows and columns use a two-level loop (rows across threads, a SIMD inner loop).
Long chains of arithmetic are latency-bound, one SIMD vector in flight: their loop works on blocks of LANES elements
in GCC vector types (1,000 dependent adds on 16 floats: 12.7 -> 3.2 µs). A float sigmoid runs its cheaper form for
|x| <= 86 over blocks, then the block again in full if one argument was out of range (0.80 -> 0.62 ns per element)."""
import ast
import functools
import pathlib

import numpy as np

from ..ops.elementwise_ops import GRADIENTS as GRADIENT_OPS, OPS as ELEMENTWISE_OPS
from ..ops.expressions import C_HELPERS, OPENCL_HELPERS, is_arithmetic, literal, spell, takes_conditions
from .kernel_codes import LAYOUT_KINDS

LANES_BYTES = 64          # a block of the vector form: four SSE registers (or two AVX ones)
LANES_MIN_MEMBERS = 8     # shorter chains give the CPU enough independent work as they are


@functools.lru_cache(maxsize=None)
def math_header():
    """The text of tf_math.h (shipped as tinyflow/cinclude, or ckernels/include in a source tree)."""
    package = pathlib.Path(__file__).resolve().parents[1]
    for folder in (package / "cinclude", package.parent / "ckernels" / "include"):
        if (folder / "tf_math.h").is_file():
            return (folder / "tf_math.h").read_text()
    raise FileNotFoundError("tf_math.h is missing from this tinyflow install (tinyflow/cinclude)")


def body(node, loads, single, indent, vector=None, opencl=False, overrides=None, calls=None):
    """The statements computing each member's expression into t0, t1, ... from inputs a<k>; (lines, result name).
    With `vector` (the ("x", k) inputs loaded as vectors), members reading one are vectors (V) and join it."""
    lines = [f"{indent}const T a{k} = {load};" for k, load in loads.items()]
    for j, (member, (_, args)) in enumerate(zip(node.members, node.program)):
        # input k is a<k>, member j's value t<j>, a constant its literal
        names = dict(zip(member.input_names, [f"a{i}" if kind == "x" else f"t{i}" if kind == "t" else
                                              literal(i.reshape(-1)[0], single) for kind, i in args]))
        names.update({a: literal(getattr(member, a), single) for a in member.attributes})
        ctype = "T"
        if vector is not None and any((kind, i) in vector for kind, i in args if kind != "c"):
            vector.add(("t", j))
            ctype = "V"
        statements, result = spell(member.expression, names.__getitem__, single, opencl, f"t{j}_", ctype,
                                   overrides, calls)
        lines += [indent + line for line in statements] + [f"{indent}const {ctype} t{j} = {result};"]
    return lines, f"t{len(node.program) - 1}"


def load(kind, k, full, scalar):
    """How input k of a kind (see fused.py) is read in a (row r, column c) loop."""
    if kind.startswith("col%"):
        return f"x{k}[r % {int(kind[4:])}]"
    return {"full": full, "scalar": scalar, "row": f"x{k}[c]", "col": f"x{k}[r]"}[kind]


def c_source(node, kinds):
    """The kernel `tf_fused(x0.., out, outer, inner, parallel)` for `node` with inputs read as `kinds`."""
    single = node.dtype == np.float32
    ctype = "float" if single else "double"
    inputs = range(len(kinds))
    fields = " ".join(f"const T *x{k};" for k in inputs)
    lines = [math_header(), C_HELPERS, "#include <string.h>", f"typedef {ctype} T;",
             "typedef void (*tf_chunk_fn)(void *, long, long);",
             "typedef void (*tf_parallel_fn)(long, long, tf_chunk_fn, void *);",
             f"struct tf_args {{ {fields} T *out; long outer, inner; }};",
             "static void tf_chunk(void *args, long start, long stop) {",
             "    const struct tf_args *k = args;"]
    lines += [f"    const T *restrict x{k} = k->x{k};" for k in inputs]
    lines += ["    T *restrict out = k->out;", "    long inner = k->inner;", "    (void)inner;"]
    # the vector form: a long chain of arithmetic on full arrays (each op type's expression looked at once: walking
    # every member's took half of the source's time on a 1,000-add chain)
    expressions = {m.expression for m in node.members}
    vectorised = (len(node.members) >= LANES_MIN_MEMBERS and "full" in kinds
                  and all(kind in ("full", "scalar") for kind in kinds)
                  and all(is_arithmetic(e) for e in expressions))
    tail, count = [], "n"
    if vectorised:  # parts are blocks of LANES, one tf_lanes call each; the last values after them, in tf_fused
        lanes = LANES_BYTES // (4 if single else 8)
        lines[4:4] = [f"enum {{ LANES = {lanes} }};", "typedef T V __attribute__((vector_size(sizeof(T) * LANES)));"]
        chunk = lines.index("static void tf_chunk(void *args, long start, long stop) {")
        lines[chunk:chunk] = _lanes_function(node, kinds, single)
        blocks = ", ".join(f"x{k} + b * LANES" if kind == "full" else f"x{k}" for k, kind in enumerate(kinds))
        lines += ["    long b;", f"    for (b = start; b < stop; b++) tf_lanes({blocks}, out + b * LANES);", "}"]
        count, tail = "n / LANES", _lanes_tail(kinds)
    elif all(kind in ("full", "scalar") for kind in kinds):
        lines += [f"    const T s{k} = x{k}[0];" for k, kind in enumerate(kinds) if kind == "scalar"]
        loads = {k: (f"s{k}" if kind == "scalar" else f"x{k}[i]") for k, kind in enumerate(kinds)}
        statements, result = body(node, loads, single, " " * 8)
        loop = [*statements, f"        out[i] = {result};", "    }"]
        if single and any(isinstance(n, ast.Call) and n.func.id == "sigmoid"  # a cheaper form for |x| <= 86
                          for e in expressions for n in ast.walk(e)):
            lines += _blocks_loop(node, loads, loop) + ["}"]
        else:
            lines += ["    long i;", "#pragma omp simd", "    for (i = start; i < stop; i++) {", *loop, "}"]
    else:
        loads = {k: load(kind, k, f"x{k}[r * inner + c]", f"s{k}") for k, kind in enumerate(kinds)}
        statements, result = body(node, loads, single, " " * 12)
        lines += ["    long r;", "    for (r = start; r < stop; r++) {", "        long c;", "#pragma omp simd",
                  "        for (c = 0; c < inner; c++) {", *statements,
                  f"            out[r * inner + c] = {result};", "        }", "    }", "}"]
        count = "outer"
    params = "".join(f"const T *restrict x{k}, " for k in inputs)
    lines += [f"void tf_fused({params}T *restrict out, long outer, long inner, void *parallel) {{",
              f"    struct tf_args k = {{{''.join(f'x{k}, ' for k in inputs)}out, outer, inner}};",
              "    long n = outer * inner;",
              f"    if (parallel) ((tf_parallel_fn)parallel)({count}, n, tf_chunk, &k);",
              f"    else tf_chunk(&k, 0, {count});"]
    lines += tail + ["}"]
    return "\n".join(lines) + "\n"


def _blocks_loop(node, loads, full_loop):
    """The flat loop in blocks of TF_MATH_BLOCK: sigmoid's common form while taking the largest magnitude of its
    arguments, then the block again with the full form if one was out of the common range (out is never an input)."""
    calls = {}
    statements, result = body(node, loads, True, " " * 12, overrides={"sigmoid": "tf_sigmoidf_common({0})"},
                              calls=calls)
    updates = [f"            {{ const int32_t m = tf_magnitude_bits({args[0]}); widest = m > widest ? m : widest; }}"
               for args in calls["sigmoid"]]
    return ["    long b, i;", "    for (b = start; b < stop; b += TF_MATH_BLOCK) {",
            "        long end = b + TF_MATH_BLOCK < stop ? b + TF_MATH_BLOCK : stop;",
            "        int32_t widest = 0;", "#pragma omp simd reduction(max:widest)",
            "        for (i = b; i < end; i++) {", *statements, *updates,
            f"            out[i] = {result};", "        }",
            "        if (widest <= TF_SIGMOID_COMMON_BITS) continue;", "#pragma omp simd",
            "        for (i = b; i < end; i++) {", *["    " + line for line in full_loop], "    }"]


def _lanes_function(node, kinds, single):
    """tf_lanes(x0.., out): one block of LANES values (full inputs point at the block, scalar ones at their value;
    members of full inputs are vectors). Inlined in the block loop and called on the padded tail: spelled once."""
    vector = {("x", k) for k, kind in enumerate(kinds) if kind == "full"}
    params = "".join(f"const T *restrict x{k}, " for k in range(len(kinds)))
    lines = [f"static inline __attribute__((always_inline)) void tf_lanes({params}T *restrict out) {{"]
    lines += [f"    V a{k}; memcpy(&a{k}, x{k}, sizeof a{k});" for _, k in sorted(vector)]
    lines += [f"    const T s{k} = x{k}[0];" for k, kind in enumerate(kinds) if kind == "scalar"]
    statements, _ = body(node, {k: f"s{k}" for k, kind in enumerate(kinds) if kind != "full"}, single, " " * 4,
                         vector)
    lines += statements
    last = len(node.program) - 1
    result = f"t{last}"
    if ("t", last) not in vector:  # every member read only scalars: one value for all lanes (x - 0 is x)
        lines.append(f"    const V r = t{last} - (V){{0}};")
        result = "r"
    return lines + [f"    memcpy(out, &{result}, sizeof(V));", "}"]


def _lanes_tail(kinds):
    """The last n % LANES values: full inputs copied into a block padded with zeros (the padding's results, maybe
    inf or NaN, are dropped), one tf_lanes call, its first values kept."""
    padded = [k for k, kind in enumerate(kinds) if kind == "full"]
    lines = ["    long rest = n % LANES, at = n - rest;", "    if (rest) {"]
    lines += [f"        T p{k}[LANES] = {{0}}; memcpy(p{k}, x{k} + at, sizeof(T) * rest);" for k in padded]
    inputs = ", ".join(f"p{k}" if kind == "full" else f"x{k}" for k, kind in enumerate(kinds))
    return lines + ["        T last[LANES];", f"        tf_lanes({inputs}, last);",
                    "        memcpy(out + at, last, sizeof(T) * rest);", "    }"]


def c_declaration(node, kinds):
    """The cdef line of the kernel (no `restrict`: cffi's parser does not need it)."""
    ctype = "float" if node.dtype == np.float32 else "double"
    params = "".join(f"const {ctype} *x{k}, " for k in range(len(kinds)))
    return f"void tf_fused({params}{ctype} *out, long outer, long inner, void *parallel);"


def opencl_source(node, kinds):
    """The OpenCL kernel `tf_fused(x0.., out, inner)` for `node` with inputs read as `kinds`, one item a value."""
    single = node.dtype == np.float32
    loads = {k: load(kind, k, f"x{k}[i]", f"x{k}[0]") for k, kind in enumerate(kinds)}
    statements, result = body(node, loads, single, " " * 4, opencl=True)
    params = "".join(f"__global const T *x{k}, " for k in range(len(kinds)))
    lines = [] if single else ["#pragma OPENCL EXTENSION cl_khr_fp64 : enable"]
    lines += [f"typedef {'float' if single else 'double'} T;", OPENCL_HELPERS,
              f"__kernel void tf_fused({params}__global T *out, const long inner) {{",
              "    const long i = get_global_id(0);"]
    if any(kind == "row" or kind.startswith("col") for kind in kinds):
        lines.append("    const long r = i / inner, c = i - r * inner;")
    return "\n".join(lines + statements + [f"    out[i] = {result};", "}"]) + "\n"


def device_ops():
    """The elementwise table's op classes with a device kernel (comparisons and `where`: booleans stay with numpy)."""
    return [cls for cls in [*ELEMENTWISE_OPS.values(), *GRADIENT_OPS.values()]
            if cls.dtype_rule(np.float32) == np.float32 and not takes_conditions(cls.expression)]


def elementwise_source(single):
    """One OpenCL kernel `ew_<op type>(x0.., out, cols, kinds[, attributes])` per op of the elementwise table, one
    work-item per value; tf_at reads input k as a full array, a row, a column or a scalar by its kind."""
    lines = [OPENCL_HELPERS, "long tf_at(int kinds, int k, long i, long r, long c) {",
             "    int kind = (kinds >> (2 * k)) & 3;",
             f"    return kind == {LAYOUT_KINDS['full']} ? i : kind == {LAYOUT_KINDS['row']} ? c : "
             f"kind == {LAYOUT_KINDS['col']} ? r : 0;", "}"]
    for cls in device_ops():
        names = {x: f"a{k}" for k, x in enumerate(cls.input_names)}
        names.update({a: a for a in cls.attributes})
        statements, result = spell(cls.expression, names.__getitem__, single, opencl=True)
        params = [*(f"__global const T *x{k}" for k in range(len(cls.input_names))), "__global T *out",
                  "const long cols", "const int kinds", *(f"const T {a}" for a in cls.attributes)]
        lines += [f"__kernel void ew_{cls.op_type}({', '.join(params)}) {{",
                  "    const long i = get_global_id(0), r = i / cols, c = i - r * cols;",
                  *[f"    const T a{k} = x{k}[tf_at(kinds, {k}, i, r, c)];" for k in range(len(cls.input_names))],
                  *[f"    {line}" for line in statements], f"    out[i] = {result};", "}"]
    return "\n".join(lines) + "\n"
