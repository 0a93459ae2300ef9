"""C source of a fused kernel: one loop over the output, split across tinyflow's thread pool, SIMD lanes.

For `c * sigmoid(a*x + b)` with a scalar feed `a` and float32 data the source reads
    <ckernels/include/tf_math.h: vectorisable exp, log, tanh, sigmoid, erf>
    typedef float T;
    struct tf_args { const T *x0; const T *x1; T *out; long outer, inner; };
    static void tf_chunk(void *args, long start, long stop) {
        const struct tf_args *k = args;
        const T *restrict x0 = k->x0; ... T *restrict out = k->out;
        const T s1 = x1[0];
        long i;
    #pragma omp simd
        for (i = start; i < stop; i++) {
            const T a0 = x0[i];
            const T a1 = s1;
            const T t0 = (a1 * a0);
            const T t1 = (t0 + (-0.5f));
            const T t2 = tf_sigmoidf(t1);
            ...
            out[i] = t3;
        }
    }
    void tf_fused(const T *x0, const T *x1, T *out, long outer, long inner, void *parallel) {
        struct tf_args k = {x0, x1, out, outer, inner};
        ... ((tf_parallel_fn)parallel)(n, n, tf_chunk, &k)   (or tf_chunk(&k, 0, n) without a pool)
    }
`parallel` is the C library's tf_parallel_for (ckernels/src/threads.c), whose address the caller
passes: generated kernels run on the same pool as the library's own, never on an OpenMP runtime.
Math calls go to tf_math.h (pasted in), whose functions GCC vectorizes; libm's would stay scalar
calls. Inputs broadcast as rows or columns use a two-level loop (rows split across threads, a
SIMD inner loop).

Long chains of arithmetic (the gradient chain of many adds, say) are latency-bound in that
loop: each element waits for its previous member, ~4 cycles each, and one SIMD vector is in
flight at a time. For them the flat loop works on blocks of LANES elements held in GCC vector
types, so several SIMD registers advance together, and finishes the last elements one by one:
        typedef T V __attribute__((vector_size(sizeof(T) * LANES)));
        for (b = start; b < stop; b++) { V a0; memcpy(&a0, x0 + b * LANES, sizeof a0); ... }
        (after the parallel blocks) for (i = n - n % LANES; i < n; i++) { the loop above }
(1,000 dependent adds on 16 floats: 12.7 µs -> 3.2 µs in a standalone C test.)

A float sigmoid has a cheaper form for |x| <= 86 (tf_math.h: no NaN, infinity or denormal to
handle, the same bits). A flat loop that calls it runs in blocks of TF_MATH_BLOCK elements:
the cheap form while checking each argument, and the block again with the full form if one
argument was out of range (W4's 10M-element c * sigmoid(a*x + b) on one thread: 0.80 -> 0.62 ns
per element, and 0.46 since the sigmoid itself takes a third fewer operations).
"""
import functools
import pathlib

from .expressions import EXPRESSIONS, literal

_CTYPE = {"float32": "float", "float64": "double"}
LANES_BYTES = 64          # a block of the vector form: four SSE registers (or two AVX ones)
LANES_MIN_MEMBERS = 8     # shorter chains give the CPU enough independent work as they are
# ops whose expressions are arithmetic only, which GCC vector types support (no calls, no ?:)
VECTOR_OPS = frozenset({"Add", "Subtract", "Multiply", "Divide", "Negative", "Square", "Identity",
                        "SigmoidGrad", "TanhGrad"})
# functions of tf_math.h: tf_expf / tf_exp, ...; any other name is libm's (expm1f, sinf: scalar calls)
TF_MATH = frozenset({"exp", "log", "log1p", "tanh", "sigmoid", "erf"})


@functools.lru_cache(maxsize=None)
def math_header():
    """The text of tf_math.h (shipped as tinyflow/cinclude, or ckernels/include in a source tree)."""
    import tinyflow
    package = pathlib.Path(tinyflow.__file__).resolve().parent
    for folder in (package / "cinclude", package.parent / "ckernels" / "include"):
        if (folder / "tf_math.h").is_file():
            return (folder / "tf_math.h").read_text()
    raise FileNotFoundError("tf_math.h is missing from this tinyflow install (tinyflow/cinclude)")


def c_function(name, single):
    """The C function computing math function `name` for the element type: tf_math.h's, else libm's."""
    if name in TF_MATH:
        return f"tf_{name}f" if single else f"tf_{name}"
    return name + "f" if single else name


def operand(kind, i, single):
    """How a member's argument reads in C: input k is a<k>, member j's value t<j>, a constant its literal."""
    return f"a{i}" if kind == "x" else f"t{i}" if kind == "t" else literal(i.reshape(-1)[0], single)


def body(node, loads, single, fn, indent, vector=None):
    """The statements computing each member into t0, t1, ...; returns (lines, name of the result).

    With `vector` (the set of ("x", k) inputs the caller loaded as vectors), members reading a vector
    are of the vector type V and are added to it, the others stay scalars of type T.
    """
    def lit(x):
        return literal(x, single)
    lines = [f"{indent}const T a{k} = {load};" for k, load in loads.items()]
    for j, (member, (op_type, args)) in enumerate(zip(node.members, node.program)):
        names = [operand(kind, i, single) for kind, i in args]
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
    """The kernel `tf_fused(x0.., out, outer, inner, parallel)` for `node` with inputs read as `kinds`."""
    ctype = _CTYPE[node.dtype.name]
    single = ctype == "float"

    def fn(name):
        return c_function(name, single)
    inputs = range(len(kinds))
    fields = " ".join(f"const T *x{k};" for k in inputs)
    lines = [math_header(), "#include <string.h>", f"typedef {ctype} T;",
             "typedef void (*tf_chunk_fn)(void *, long, long);",
             "typedef void (*tf_parallel_fn)(long, long, tf_chunk_fn, void *);",
             f"struct tf_args {{ {fields} T *out; long outer, inner; }};",
             "static void tf_chunk(void *args, long start, long stop) {",
             "    const struct tf_args *k = args;"]
    lines += [f"    const T *restrict x{k} = k->x{k};" for k in inputs]
    lines += ["    T *restrict out = k->out;", "    long inner = k->inner;", "    (void)inner;"]
    tail, scalars = [], [f"    const T s{k} = x{k}[0];" for k, kind in enumerate(kinds) if kind == "scalar"]
    lines += scalars
    vectorised = _vectorisable(node, kinds)
    if vectorised:
        lanes = LANES_BYTES // (4 if single else 8)
        lines[3:3] = [f"enum {{ LANES = {lanes} }};", "typedef T V __attribute__((vector_size(sizeof(T) * LANES)));"]
    if all(kind in ("full", "scalar") for kind in kinds):
        loads = {k: (f"s{k}" if kind == "scalar" else f"x{k}[i]") for k, kind in enumerate(kinds)}
        statements, result = body(node, loads, single, fn, " " * 8)
        loop = [*statements, f"        out[i] = {result};", "    }"]
        if vectorised:  # parts are blocks of LANES; the last elements run after them, in tf_fused
            lines += _lanes_loop(node, kinds, single, fn) + ["}"]
            count = "n / LANES"
            tail = scalars + ["    long i;", "    for (i = n - n % LANES; i < n; i++) {  /* the last ones, one by one */",
                              *loop]
        elif single and _common_checks(node):
            lines += _blocks_loop(node, loads, fn, loop) + ["}"]
            count = "n"
        else:
            lines += ["    long i;", "#pragma omp simd", "    for (i = start; i < stop; i++) {", *loop, "}"]
            count = "n"
    else:
        loads = {k: load(kind, k, f"x{k}[r * inner + c]", f"s{k}") for k, kind in enumerate(kinds)}
        statements, result = body(node, loads, single, fn, " " * 12)
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
    if tail:
        lines += ["    {"] + ["    " + line for line in tail] + ["    }"]
    lines.append("}")
    return "\n".join(lines) + "\n"


# math functions of tf_math.h with a cheaper form for a common range: name -> (that form, the largest
# tf_magnitude_bits of an argument it takes)
COMMON_FORMS = {"sigmoid": ("tf_sigmoidf_common", "TF_SIGMOID_COMMON_BITS")}
_OP_FUNCTIONS = {"Sigmoid": "sigmoid"}


def _common_checks(node):
    """{bound: [C arguments]}: node's arguments to common forms of float math calls, by the largest
    tf_magnitude_bits under which the common form gives the full form's bits."""
    checks = {}
    for op_type, args in node.program:
        if op_type in _OP_FUNCTIONS:
            checks.setdefault(COMMON_FORMS[_OP_FUNCTIONS[op_type]][1], []).append(operand(*args[0], True))
    return checks


def _blocks_loop(node, loads, fn, full_loop):
    """The flat loop in blocks of TF_MATH_BLOCK: the common forms of the math calls while taking the largest
    magnitude of their arguments (one per bound), then the block again with the full forms if one was out of the
    common range (out is never an input)."""
    def common(name):
        return COMMON_FORMS[name][0] if name in COMMON_FORMS else fn(name)
    statements, result = body(node, loads, True, common, " " * 12)
    bounds = _common_checks(node)
    widest = [f"widest{j}" for j in range(len(bounds))]
    updates = [f"            {{ const int32_t m = tf_magnitude_bits({argument}); {w} = m > {w} ? m : {w}; }}"
               for w, arguments in zip(widest, bounds.values()) for argument in arguments]
    common_block = " && ".join(f"{w} <= {bound}" for w, bound in zip(widest, bounds))
    return ["    long b, i;", "    for (b = start; b < stop; b += TF_MATH_BLOCK) {",
            "        long end = b + TF_MATH_BLOCK < stop ? b + TF_MATH_BLOCK : stop;",
            f"        int32_t {', '.join(f'{w} = 0' for w in widest)};",
            f"#pragma omp simd reduction(max:{', '.join(widest)})",
            "        for (i = b; i < end; i++) {", *statements, *updates,
            f"            out[i] = {result};", "        }",
            f"        if ({common_block}) continue;", "#pragma omp simd", "        for (i = b; i < end; i++) {",
            *["    " + line for line in full_loop], "    }"]


def _vectorisable(node, kinds):
    """Whether the flat loop of `node` takes the vector form: a long chain of arithmetic on full arrays."""
    return (len(node.members) >= LANES_MIN_MEMBERS and "full" in kinds
            and all(op_type in VECTOR_OPS for op_type, _ in node.program))


def _lanes_loop(node, kinds, single, fn):
    """The block loop of the vector form; members computed from full inputs are vectors, the rest scalars."""
    lines = ["    long b;", "    for (b = start; b < stop; b++) {"]
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
    return f"void tf_fused({params}{ctype} *out, long outer, long inner, void *parallel);"
