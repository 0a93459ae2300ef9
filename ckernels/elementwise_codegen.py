"""The C kernels of the elementwise table (tinyflow/ops/elementwise.py), written when the library is built.

build_ckernels.py runs `c_source()` and compiles its result with the hand-written kernels. For every row of
the table, and every gradient op the rows need (SigmoidGrad, DivideGrad1...), one chunk function per element
type computes the row's expression, spelled by tinyflow/ops/expressions.py (the same spelling fused kernels
use), over rows x cols values. Each input is read as a kind (2 bits of `kinds`, enum tf_layout_kind):

    TF_FULL    one value per output value      x[r * cols + c]
    TF_ROW     one row repeated over the rows  x[c]        (a bias against a batch)
    TF_COLUMN  one value per row               x[r]        (hoisted out of the row's loop)
    TF_SCALAR  one value                       x[0]        (hoisted)

Each row's loop is written once per set of hoisted inputs, so the loop GCC vectorizes reads only arrays.
Inputs that are all full or scalars make one long row, split across the thread pool; otherwise the rows are.
`tf_elementwise_f32/_f64(op, ...)` run op number `op` of `tf_elementwise_ops()`, the list "Name:hash,..." by
which Python finds an op's number and checks that the library was built from the table it has.
"""
import importlib.util
import os

HERE = os.path.dirname(os.path.abspath(__file__))
OPS = os.path.join(HERE, os.pardir, "tinyflow", "ops")


def _module(name):
    """A module of tinyflow/ops loaded by path: both import nothing, so the build needs no tinyflow (nor numpy)."""
    spec = importlib.util.spec_from_file_location(f"tinyflow_build_{name}", os.path.join(OPS, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _chunk(expressions, index, op_type, inputs, expression, attributes, suffix, single):
    """The chunk function computing one kernel over rows [start, stop) (or one row's columns when flat)."""
    ctype = "float" if single else "double"
    names = {x: f"a{i}" for i, x in enumerate(inputs)}
    names.update({a: a for a in attributes})
    statements, result = expressions.spell(expressions.parse(expression), names.__getitem__, single)
    lines = [f"TF_CLONES static void ew{index}_{suffix}(void *args, long start, long stop) {{  /* {op_type} */",
             f"    typedef {ctype} T;", f"    const struct tf_ew_{suffix} *k = args;",
             *[f"    const T {a} = (T)k->attrs[{j}];" for j, a in enumerate(attributes)],
             "    long r0 = k->flat ? 0 : start, r1 = k->flat ? 1 : stop;",
             "    long c0 = k->flat ? start : 0, c1 = k->flat ? stop : k->cols;",
             "    for (long r = r0; r < r1; r++) {",
             *[f"        const T *restrict b{i} = tf_ew_base_{suffix}(k->x[{i}], (k->kinds >> {2 * i}) & 3, r, k->cols);"
               for i in range(len(inputs))],
             "        T *restrict o = k->out + r * k->cols;", "        switch (k->hoisted) {"]
    for hoisted in range(1 << len(inputs)):
        lines += [f"        case {hoisted}: {{",
                  *[f"            const T h{i} = b{i}[0];" for i in range(len(inputs)) if hoisted >> i & 1],
                  "#pragma omp simd", "            for (long c = c0; c < c1; c++) {",
                  *[f"                const T a{i} = {f'h{i}' if hoisted >> i & 1 else f'b{i}[c]'};"
                    for i in range(len(inputs))],
                  *[f"                {s}" for s in statements], f"                o[c] = {result};",
                  "            }", "        } break;"]
    return lines + ["        }", "    }", "}"]


def c_source():
    """The C source of every elementwise kernel and the two dispatchers."""
    expressions, table = _module("expressions"), _module("elementwise")
    kernels = [k for k in expressions.kernels(row for row in table.ELEMENTWISE if row["dtype"] != "bool")]
    lines = ['#include "common.h"', '#include "tinyflow_kernels.h"', expressions.C_HELPERS]
    for suffix, single in (("f32", True), ("f64", False)):
        ctype = "float" if single else "double"
        lines += [f"struct tf_ew_{suffix} {{ const {ctype} *x[4]; {ctype} *out; long cols; int kinds, hoisted, flat; "
                  "const double *attrs; };",
                  f"static inline const {ctype} *tf_ew_base_{suffix}(const {ctype} *x, int kind, long r, long cols) {{",
                  "    return kind == TF_FULL ? x + r * cols : kind == TF_COLUMN ? x + r : x;", "}"]
        for index, kernel in enumerate(kernels):
            lines += _chunk(expressions, index, *kernel, suffix, single)
        lines += [f"static void (*const ew_{suffix}[])(void *, long, long) = {{",
                  *[f"    ew{i}_{suffix}," for i in range(len(kernels))], "};",
                  f"int tf_elementwise_{suffix}(int op, const {ctype} *x0, const {ctype} *x1, const {ctype} *x2, "
                  f"const {ctype} *x3, {ctype} *out, long rows, long cols, int kinds, const double *attrs) {{",
                  f"    if (op < 0 || op >= {len(kernels)}) return -1;",
                  "    int hoisted = 0, flat = 1;",
                  "    for (int i = 0; i < 4; i++) {",
                  "        int kind = (kinds >> (2 * i)) & 3;",
                  "        hoisted |= (kind == TF_COLUMN || kind == TF_SCALAR) << i;",
                  "        flat &= kind == TF_FULL || kind == TF_SCALAR;",
                  "    }",
                  f"    struct tf_ew_{suffix} k = {{{{x0, x1, x2, x3}}, out, flat ? rows * cols : cols, kinds, hoisted, flat, "
                  "attrs};",
                  f"    tf_parallel_for(flat ? rows * cols : rows, rows * cols, ew_{suffix}[op], &k);",
                  "    return 0;", "}"]
    listed = ",".join(f"{kernel[0]}:{expressions.fingerprint(*kernel)}" for kernel in kernels)
    lines += ["const char *tf_elementwise_ops(void) {", f'    return "{listed}";', "}"]
    return "\n".join(lines) + "\n"


def write(folder):
    """Write the generated source into `folder` (if it changed, so builds stay incremental); its path."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "elementwise.c")
    source = c_source()
    if not os.path.isfile(path) or open(path).read() != source:
        with open(path, "w") as f:
            f.write(source)
    return path
