"""Running a course on tinyflow: the student version of the assignments, and the autograder.

Student version: in assignments/, `# BEGIN SOLUTION`, a `# HINT: ...` line (comment lines right after continue it), the
solution and `# END SOLUTION` become `# TODO: <hint>` and `raise NotImplementedError("<hint>")`; in C, `/* TODO */`.
Autograder: the official tests run on a student's folder ($TINYFLOW_ASSIGNMENT_PATH, read by the tests' conftest.py)
in a subprocess with a time limit, so a crash or an endless loop in student code costs only its score.
"""
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

from .errors import TinyflowError

SOURCE = pathlib.Path(__file__).resolve().parent.parent / "assignments"
COMMENT = {".py": "#", ".c": "//", ".h": "//"}
_SKIP = {"__pycache__", ".pytest_cache", ".ipynb_checkpoints"}
_DEFINITION = re.compile(r"^\s*(?:def|class)\s+(\w+)|^\s*(?:void|int|float|double|long)\s+\**(\w+)\s*\(")
_OWNER = re.compile(r"test_(assignment\d+)")  # the test module of an assignment


class AssignmentSourceError(TinyflowError):
    """Solution markers that do not pair up, or a block without a hint."""


def strip_solutions(text, comment="#", where="<text>"):
    """The student version of one file's text: each solution block replaced by a stub raising its hint."""
    marker = re.escape(comment)
    begin, end = re.compile(rf"^(\s*){marker} BEGIN SOLUTION\s*$"), re.compile(rf"^\s*{marker} END SOLUTION\s*$")
    hint_line, comment_line = re.compile(rf"^\s*{marker} HINT:?\s?(.*)$"), re.compile(rf"^\s*{marker}\s?(.*)$")
    out, start, owner, parent = [], None, None, None  # start: the line of the open block's BEGIN SOLUTION
    for number, line in enumerate(text.splitlines(keepends=True), 1):
        opened = begin.match(line)
        if start is None:
            defined = _DEFINITION.match(line)
            if defined:  # a method is named with its class: "AdamUpdate.update"
                name = defined.group(1) or defined.group(2)
                top = not line[:1].isspace()
                owner, parent = (name, name) if top else (f"{parent}.{name}" if parent else name, parent)
            if end.match(line):
                raise AssignmentSourceError(f"{where}:{number}: END SOLUTION without BEGIN SOLUTION")
            if opened:
                start, indent, hint, solution = number, opened.group(1), [], False
            else:
                out.append(line)
        elif opened:
            raise AssignmentSourceError(f"{where}:{number}: BEGIN SOLUTION inside the block opened at line {start}")
        elif end.match(line):
            if not hint:
                raise AssignmentSourceError(f"{where}:{start}: the solution block has no '{comment} HINT:' line; "
                                            "every stub must tell the student where to start")
            hint, label = " ".join(hint), f"{os.path.basename(where)}, {owner}()" if owner else os.path.basename(where)
            out.append(f"{indent}/* TODO: {hint} */\n" if comment != "#" else
                       f"{indent}# TODO: {hint}\n{indent}raise NotImplementedError({f'TODO in {label}: {hint}'!r})\n")
            start = None
        else:
            hinted, continued = hint_line.match(line), comment_line.match(line)
            if not solution and (hinted or (hint and continued)):  # the hint comes first; comment lines continue it
                hint.append((hinted or continued).group(1).strip())
            else:
                solution = True
    if start is not None:
        raise AssignmentSourceError(f"{where}:{start}: BEGIN SOLUTION without END SOLUTION")
    return "".join(out)


def make_student(out, source=SOURCE, force=False):
    """Write the student version of `source` (the solutions) into the folder `out`; returns the files written."""
    source, out = pathlib.Path(source), pathlib.Path(out)
    if not (source / "tests").is_dir():
        raise AssignmentSourceError(f"{source} does not hold the assignments (no tests/ folder); "
                                    "run from a tinyflow checkout or pass --source")
    if out.exists() and any(out.iterdir()) and not force:
        raise AssignmentSourceError(f"{out} exists and is not empty: choose a new folder (or --force to overwrite)")
    if out.resolve() == source.resolve() or source.resolve() in out.resolve().parents:
        raise AssignmentSourceError(f"{out} is inside the solutions folder {source}: choose a folder outside it")
    written = []
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        if path.is_dir() or _SKIP & set(relative.parts) or path.suffix == ".pyc":
            continue
        target = out / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        comment = COMMENT.get(path.suffix)
        if comment is None or relative.parts[0] == "tests":  # tests and data are handed out as they are
            shutil.copyfile(path, target)
        else:
            stripped = strip_solutions(path.read_text(encoding="utf-8"), comment, where=os.fspath(relative))
            target.write_text(stripped, encoding="utf-8")
        written.append(target)
    return written


class GradingError(TinyflowError):
    """The grader cannot run: unknown assignment, missing folder, or pytest itself failed."""


def assignments(source=SOURCE):
    """The assignment names the tests know, e.g. ['assignment1', ..., 'assignment6']."""
    found = {m.group(1) for p in pathlib.Path(source, "tests").glob("test_assignment*.py")
             if (m := _OWNER.match(p.name))}
    return sorted(found, key=lambda name: int(name[len("assignment"):]))


def grade(assignment, path=None, source=SOURCE, timeout=900):
    """Score `assignment` ('assignmentN' or 'all') on the student's folder `path`; returns the report dict."""
    source = pathlib.Path(source)
    known = assignments(source)
    if assignment != "all" and assignment not in known:
        raise GradingError(f"unknown assignment '{assignment}'; the tests in {source / 'tests'} know: "
                           f"{', '.join(known) or 'none'} (or 'all')")
    path = pathlib.Path(path if path is not None else source).resolve()
    if not path.is_dir():
        raise GradingError(f"the student folder {path} does not exist")
    with tempfile.TemporaryDirectory(prefix="tinyflow-grade-") as scratch:
        xml = pathlib.Path(scratch, "results.xml")
        command = [sys.executable, "-m", "pytest", str(source / "tests"), "-q", "-p", "no:cacheprovider",
                   f"--junitxml={xml}", "-o", "junit_family=xunit1"]
        command += ["-m", assignment] if assignment != "all" else []
        env = {**os.environ, "TINYFLOW_ASSIGNMENT_PATH": str(path), "PYTHONDONTWRITEBYTECODE": "1"}
        try:
            run = subprocess.run(command, cwd=scratch, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise GradingError(f"the tests of {assignment} did not finish within {timeout} s "
                               "(an endless loop in the student's code?)") from None
        if not xml.exists():
            raise GradingError(f"pytest could not run the tests (exit code {run.returncode}):\n"
                               f"{run.stdout[-3000:]}{run.stderr[-3000:]}")
        tests = [_result(case) for case in ET.parse(xml).getroot().iter("testcase")]
    if not tests:
        raise GradingError(f"no test of {assignment} was collected from {source / 'tests'}")
    return dict(assignment=assignment, path=str(path), score=sum(t["points"] for t in tests), max_score=len(tests),
                tests=tests)


def _result(case):
    """A JUnit XML test case as its assignment, name, outcome, points and the first line of the failure."""
    problem = next((child for child in case if child.tag in ("failure", "error", "skipped")), None)
    outcome = "passed" if problem is None else {"failure": "failed"}.get(problem.tag, problem.tag)
    message = "" if problem is None else (problem.get("message") or problem.text or "").strip()
    module = case.get("classname", "").rsplit(".", 1)[-1]
    owner = _OWNER.match(module)
    return dict(assignment=owner.group(1) if owner else module, test=case.get("name"), outcome=outcome,
                points=int(outcome == "passed"), message=message.splitlines()[0][:300] if message else "")


def format_report(report):
    """The report as a table a student can read: one line per test, then the total."""
    lines = [f"  {'PASS' if t['points'] else t['outcome'].upper():7} {t['points']}/1  {t['assignment']}::{t['test']}"
             + (f"\n            {t['message']}" if t["message"] and not t["points"] else "") for t in report["tests"]]
    return "\n".join([f"grading {report['assignment']} in {report['path']}"] + lines
                     + [f"score: {report['score']}/{report['max_score']}"])
