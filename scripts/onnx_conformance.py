"""Rewrite docs/onnx.md from a fresh run of ONNX's node conformance cases on tinyflow (numpy and c backends).

    python scripts/onnx_conformance.py            # writes docs/onnx.md, prints the pass counts
    python scripts/onnx_conformance.py --check    # exits 1 if docs/onnx.md is out of date

tests/onnx/test_conformance.py runs the same cases and fails when docs/onnx.md differs from its run.
"""
import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests", "onnx")]  # the cases' runner is test tooling (tests/onnx)

import conformance_cases as conformance  # noqa: E402

DOCS = os.path.join(ROOT, "docs", "onnx.md")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check that docs/onnx.md is current")
    args = parser.parse_args(argv)
    text = conformance.markdown() + "\n"
    for line in conformance.summary():
        print(line)
    if args.check:
        with open(DOCS, encoding="utf-8") as f:
            current = f.read() == text
        print("docs/onnx.md is current" if current else "docs/onnx.md is out of date: run scripts/onnx_conformance.py")
        return 0 if current else 1
    with open(DOCS, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {os.path.relpath(DOCS)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
