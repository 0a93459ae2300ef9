"""The autograder: run an assignment's official tests (the teacher's copy, which a student cannot edit) on a
student's folder, put first on the path through $TINYFLOW_ASSIGNMENT_PATH (read by the tests' conftest.py). pytest
runs in a subprocess with a time limit, so a crash or an endless loop in student code costs only its score.
"""
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

from ..errors import TinyflowError
from .student import SOURCE

_OWNER = re.compile(r"test_(assignment\d+)")  # the test module of an assignment


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
